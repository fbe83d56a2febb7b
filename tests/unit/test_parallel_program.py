"""Parallel programs as data, the second shrinking stage, and case verdicts and counterexamples (no emulator).

- a program round-trips through JSON, refuses malformed input, and says which keys are contested;
- `minimize.candidates` only proposes smaller programs of the parallel shape, and `minimize` reaches the
  1-minimal failing program (judged by a pure stand-in for the emulator) within its deadline;
- a case's classification follows its repetitions (passes / fails sometimes / fails always / in prefix);
- a saved counterexample loads back, re-checks, and names a system that resolves again.
"""

from __future__ import annotations

import functools
import json
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings

from fencecheck.checker.history import Call, Definite, History
from fencecheck.checker.history_codec import datetime_to_json
from fencecheck.checker.linearizability import check
from fencecheck.errors import SystemNotFoundError
from fencecheck.parallel import (
    FAILS_ALWAYS,
    FAILS_IN_PREFIX,
    FAILS_SOMETIMES,
    PASSES,
    BranchCall,
    CaseResult,
    ParallelProgram,
    Repetition,
    contested_keys,
    load_counterexample,
    recheck_parallel,
    save_counterexample,
)
from fencecheck.parallel.case import resolve_system, system_label
from fencecheck.parallel.minimize import MIN_BRANCHES, candidates, minimize
from fencecheck.parallel.program import T0
from fencecheck.plugin.registry import plugin
from fencecheck.systems.journal.codec import op_to_json
from fencecheck.systems.journal.parallel import HOLDERS, command, programs
from fencecheck.systems.journal.plugin import REFERENCE
from known_bad.journal import CONCURRENT_VARIANTS
from model.journal import Acquire, Complete, Fail, Register, documents_for, step

JournalProgram = functools.partial(ParallelProgram, system="journal")
JOURNAL = plugin("journal")
KEY = command(0)
A, B, C = HOLDERS


def at(seconds: float):
    return T0 + timedelta(seconds=seconds)


def calls(*ops, first_commit_fails=()) -> tuple[BranchCall, ...]:
    return tuple(BranchCall(op, i in first_commit_fails) for i, op in enumerate(ops))


REGISTERED = (Register(KEY, at(0)),)
FIRST_LEASE_RACE = JournalProgram(REGISTERED, (calls(Acquire(KEY, A, at(1))), calls(Acquire(KEY, B, at(1)))))


# --- the program ----------------------------------------------------------------------------------------------


@settings(max_examples=60, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_programs_round_trip_through_json(program):
    data = json.loads(json.dumps(program.to_json()))
    assert ParallelProgram.from_json(data) == program


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(format="x"), "not a parallel program"),
        (lambda d: d.update(extra=1), "unknown keys"),
        (lambda d: d.update(branches="b1"), "JSON arrays"),
        (lambda d: d["branches"][0][0].update(commitFailureFirst="yes"), "boolean"),
        (lambda d: d["branches"][0][0].pop("op"), "a branch call must be"),
        (lambda d: d.update(branches=[[]]), "no branch may be empty"),
    ],
)
def test_malformed_programs_are_refused(mutate, message):
    data = FIRST_LEASE_RACE.to_json()
    mutate(data)
    with pytest.raises(ValueError, match=message):
        ParallelProgram.from_json(data)


def test_calls_are_journal_calls_without_commit_fails():
    with pytest.raises(ValueError, match="commit_failure_first"):
        JournalProgram((), (calls(Acquire(KEY, A, at(1), commit_fails=True)), calls(Acquire(KEY, B, at(1)))))
    with pytest.raises(TypeError, match="journal call"):
        JournalProgram((), (calls("acquire"), calls(Acquire(KEY, B, at(1)))))
    with pytest.raises(TypeError, match="journal call"):
        JournalProgram(("register",), (calls(Acquire(KEY, A, at(1))), calls(Acquire(KEY, B, at(1)))))


def test_a_program_names_a_known_system():
    with pytest.raises(SystemNotFoundError, match="no system called"):
        ParallelProgram((), (calls(Acquire(KEY, A, at(1))), calls(Acquire(KEY, B, at(1)))), system="nothing")


def test_a_version_1_program_is_the_journal_s():
    # Written before programs named their system: operations inline, no commands table.
    v1 = {"format": "fencecheck.parallel-program/1", "epoch": datetime_to_json(T0),
          "prefix": [op_to_json(op) for op in FIRST_LEASE_RACE.prefix],
          "branches": [[{"op": op_to_json(c.op), "commitFailureFirst": c.commit_failure_first} for c in b]
                       for b in FIRST_LEASE_RACE.branches]}
    assert ParallelProgram.from_json(v1) == FIRST_LEASE_RACE
    written = FIRST_LEASE_RACE.to_json()
    assert written["format"] == "fencecheck.parallel-program/2" and written["system"] == "journal"
    assert "commands" in written and ParallelProgram.from_json(written) == FIRST_LEASE_RACE


def test_lanes_size_keys_and_description():
    program = JournalProgram(
        REGISTERED, (calls(Acquire(KEY, A, at(1)), Complete(KEY, A, 1, "0" * 64, at(2))), calls(Fail(KEY, B, 1, at(2))))
    )
    assert program.lanes == ("b1", "b2")
    assert (program.size.branches, program.size.concurrent_ops, program.size.prefix_ops, program.size.ops) == (
        2, 3, 1, 4)
    assert program.keys() == (KEY.key_hash,)
    text = program.describe()
    assert "branch b1:" in text and "branch b2:" in text and text.count("  - ") == 3


def test_a_key_is_contested_when_two_branches_call_it_and_one_writes():
    assert contested_keys(FIRST_LEASE_RACE) == (KEY.key_hash,)
    other = command(1)
    # Two branches, but on different keys: no contest.
    apart = JournalProgram(REGISTERED + (Register(other, at(0)),),
                            (calls(Acquire(KEY, A, at(1))), calls(Acquire(other, B, at(1)))))
    assert contested_keys(apart) == ()
    # Both read-only (the key is not registered: every call answers command_not_registered).
    reads = JournalProgram((), (calls(Acquire(KEY, A, at(1))), calls(Fail(KEY, B, 1, at(1)))))
    assert contested_keys(reads) == ()
    # One branch writes only after its own first call: its second call counts.
    later = JournalProgram((), (calls(Register(KEY, at(0)), Acquire(KEY, A, at(1))), calls(Fail(KEY, B, 1, at(1)))))
    assert contested_keys(later) == (KEY.key_hash,)


# --- the second shrinking stage -----------------------------------------------------------------------------


BIG = JournalProgram(
    (Register(KEY, at(0)), Register(command(1), at(0)), Acquire(KEY, C, at(0.5))),
    (
        calls(Register(command(1), at(1)), Acquire(KEY, A, at(100)), first_commit_fails=(1,)),
        calls(Fail(KEY, C, 1, at(1))),
        calls(Acquire(KEY, B, at(100)), Register(KEY, at(2))),
    ),
)


def _has(program: ParallelProgram, op) -> bool:
    return any(call.op == op for branch in program.branches for call in branch)


def test_candidates_are_smaller_and_keep_the_parallel_shape():
    def flags(program: ParallelProgram) -> int:
        return sum(c.commit_failure_first for b in program.branches for c in b)

    found = list(candidates(BIG))
    assert len(found) == 3 + 4 + 3 + 1  # branches, calls (of branches with two), prefix calls, first-commit flags
    for candidate in found:
        assert candidate.size.ops < BIG.size.ops or flags(candidate) < flags(BIG)
        assert candidate.size.branches >= MIN_BRANCHES and all(candidate.branches)
    two = JournalProgram((), (calls(Acquire(KEY, A, at(1))), calls(Acquire(KEY, B, at(1)))))
    assert list(candidates(two)) == []


def test_minimize_reaches_the_one_minimal_failing_program():
    takeover_a, takeover_b = Acquire(KEY, A, at(100)), Acquire(KEY, B, at(100))
    tried = []

    def fails(program: ParallelProgram):  # stands in for R runs on the emulator: a race of the two takeovers
        tried.append(program)
        racing = _has(program, takeover_a) and _has(program, takeover_b)
        lc = getattr(program.prefix_state()[0].get(KEY.key_hash), "lifecycle", None)
        leased = lc is not None  # the takeovers race only over a lease the prefix took
        return f"evidence {len(tried)}" if racing and leased else None

    program, evidence, tries = minimize(BIG, fails, deadline=float("inf"))
    assert program.size.branches == 2 and program.size.concurrent_ops == 2
    assert program.prefix == (Register(KEY, at(0)), Acquire(KEY, C, at(0.5)))
    assert not any(c.commit_failure_first for b in program.branches for c in b)
    assert evidence is not None and tries == len(tried)
    assert all(fails(candidate) is None for candidate in candidates(program))  # 1-minimal


def test_minimize_stops_at_its_deadline():
    ticks = iter(range(100))
    program, evidence, tries = minimize(BIG, lambda p: "always", deadline=3, clock=lambda: next(ticks))
    assert tries <= 3 and evidence == "always" and program.size.ops < BIG.size.ops


# --- cases and counterexamples --------------------------------------------------------------------------------


def _rep(status: str, history: History | None = None) -> Repetition:
    return Repetition(status, f"demo-{status}", history=history)


@pytest.mark.parametrize(
    "statuses, classification",
    [
        (("ok", "ok"), PASSES),
        (("ok", "illegal", "ok"), FAILS_SOMETIMES),
        (("illegal", "unknown", "broken"), FAILS_ALWAYS),
        (("ok", "prefix"), FAILS_IN_PREFIX),
    ],
)
def test_case_classification(statuses, classification):
    case = CaseResult(FIRST_LEASE_RACE, tuple(_rep(s) for s in statuses), 1.0)
    assert case.classification == classification
    assert case.failed == (classification != PASSES)
    assert f"{len(case.failures)}/{len(statuses)} repetitions failed" in case.summary()


def test_the_strongest_evidence_is_shown():
    case = CaseResult(FIRST_LEASE_RACE, (_rep("unknown"), _rep("broken"), _rep("illegal")), 1.0)
    assert case.evidence.status == "illegal"


def _double_grant() -> History:
    """Both racing acquires answered lease_acquired fence 1: not linearizable."""
    state, _results = FIRST_LEASE_RACE.prefix_state()
    answers, final = [], state
    for branch in FIRST_LEASE_RACE.branches:
        final, result = step(state, branch[0].op)
        answers.append(result.output)
    race = [Call(i, f"b{i + 1}", b[0].op, 0, 10, Definite(answers[i])) for i, b in enumerate(FIRST_LEASE_RACE.branches)]
    return History(tuple(race), {KEY.key_hash: documents_for(final, KEY.key_hash)}, system="journal")


def test_a_counterexample_saves_loads_and_rechecks(tmp_path):
    history = _double_grant()
    state, _results = FIRST_LEASE_RACE.prefix_state()
    assert check(history, initial_state=state).status == "illegal"
    case = CaseResult(FIRST_LEASE_RACE, (_rep("ok"), _rep("illegal", history)), 2.0, "known_bad.journal:x-y")
    path = save_counterexample(case, tmp_path)
    assert path.name.startswith("parallel-x-y-") and path.suffix == ".json"
    assert save_counterexample(case, tmp_path) == path  # the same program lands in the same file
    saved = load_counterexample(path)
    assert saved.program == FIRST_LEASE_RACE and saved.classification == FAILS_SOMETIMES
    assert saved.system == "known_bad.journal:x-y" and saved.data["failedRepetitions"] == 1
    assert recheck_parallel(path).status == "illegal"


def test_a_prefix_failure_saves_without_a_history(tmp_path):
    case = CaseResult(FIRST_LEASE_RACE, (_rep("prefix"),), 1.0)
    path = save_counterexample(case, tmp_path)
    assert recheck_parallel(path) is None and load_counterexample(path).history is None


def test_other_files_are_not_counterexamples(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "fencecheck.race-counterexample/1"}))
    with pytest.raises(ValueError, match="not a parallel counterexample"):
        load_counterexample(path)


def test_systems_are_named_and_resolved():
    assert system_label(JOURNAL, REFERENCE) == "reference" and resolve_system(JOURNAL, "reference") == REFERENCE
    assert system_label(JOURNAL) == "reference"
    v = CONCURRENT_VARIANTS[0]
    label = system_label(JOURNAL, v.build())
    assert label == f"known_bad.journal:{v.name}"
    assert resolve_system(JOURNAL, label) == v.build()
