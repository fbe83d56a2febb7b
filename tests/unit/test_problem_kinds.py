"""Where each problem's kind is set, and the one judge deciding from it, for every runner: fake `exec:`
implementations (Python scripts speaking the process protocol) that crash with a multi-line message, hang, or
write a malformed answer, driven through the producers themselves (the contest runner's racers, a parallel
branch, a lockstep step, the process client) and each runner's judging code (races, parallel, stateful
catalogues, `gate --known-bad` through a real pytest run's JUnit record). No emulator: a fake implementation
fails before it would touch Firestore, and nothing here reads the project back (tests/fakes/misbehaving_exec.py).
Every one is an error or a timeout, never caught.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from fencecheck.checker.history import Recorder, classifier
from fencecheck.checker.known_bad_verdict import CAUGHT, ERROR, TIMEOUT, judge
from fencecheck.cli.replay import replay_program
from fencecheck.parallel.case import CaseResult
from fencecheck.parallel.execute import BROKEN, Repetition, _harness_problems, _run_branch
from fencecheck.parallel.program import BranchCall, ParallelProgram
from fencecheck.plugin.registry import plugin
from fencecheck.problems import ProblemKind, contract
from fencecheck.protocol.process import ImplementationFailure, ImplementationProcess
from fencecheck.report.failures import Replay, from_junit, known_bad_verdict
from fencecheck.runners.contest import Racer, call_problems, race_callers
from fencecheck.runners.contest_results import ScenarioResult
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch
from model.journal import CommandRef, Register
from tests.fakes import misbehaving_exec
from tests.fakes.misbehaving_exec import HANG_SECONDS, MISBEHAVIOURS, VERDICTS, misbehaving_journal

JOURNAL = plugin("journal")
NOW = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)
COMMAND = CommandRef.from_inputs(
    environment="test",
    caller_scope={"kind": "firebase_uid", "value": "uid-1"},
    command_id="00000001-c0de-4000-8000-000000000000",
    command_type="create_checkout_session",
    endpoint_schema_version=1,
    payload={"raceId": "spring-10k"},
)
REGISTER = Register(COMMAND, NOW)
class FakeClient:
    """What the exec adapter reads of a Firestore client: its emulator host and project."""

    def __init__(self, project: str) -> None:
        self.project = project
        self._emulator_host = "127.0.0.1:1"


@pytest.fixture(params=list(MISBEHAVIOURS))
def misbehaving(request):
    """(the misbehaving exec: journal, the kind its failure must be)."""
    with misbehaving_journal(request.param) as system:
        yield system, MISBEHAVIOURS[request.param]


# --- the producers ------------------------------------------------------------------------------------------


def test_the_process_client_says_crash_hang_or_protocol() -> None:
    for how, kind in MISBEHAVIOURS.items():
        with ImplementationProcess([sys.executable, misbehaving_exec.__file__, how], emulator_host="127.0.0.1:1",
                                   project_id="demo-fake") as process:
            process.hello(system="journal", accepted=(1, 2))
            with pytest.raises(ImplementationFailure) as caught:
                process.call("registerCommerceCommand", {}, "2026-01-01T00:00:00+00:00", timeout=HANG_SECONDS)
        assert caught.value.problem_kind is kind, how
        if how == "crash":
            assert "\n" in str(caught.value) and "TypeError: boom" in str(caught.value)


def test_a_racer_whose_implementation_misbehaves_is_a_problem_of_that_kind(misbehaving) -> None:
    system, kind = misbehaving
    records, _history, hung = race_callers(JOURNAL, system, FakeClient("demo-race"), [Racer("w1", REGISTER)],
                                           max_retries=0)
    (problem,) = call_problems(records, JOURNAL)
    assert hung == () and problem.kind is kind, problem
    assert "only the system's error may escape" in problem.text


def test_a_parallel_branch_whose_implementation_misbehaves_is_a_problem_of_that_kind(misbehaving) -> None:
    system, kind = misbehaving
    recorder = Recorder(classify=classifier(JOURNAL, system), system=JOURNAL.name)
    records = _run_branch(JOURNAL, system, FakeClient("demo-branch"), None, recorder, "b1", (BranchCall(REGISTER),), 0)
    problems = _harness_problems((records,), ("b1",))
    assert [p.kind for p in problems] == [kind], problems


def test_a_lockstep_step_whose_implementation_misbehaves_is_a_mismatch_of_that_kind(misbehaving) -> None:
    system, kind = misbehaving
    with pytest.raises(LockstepMismatch) as caught:
        Lockstep(FakeClient("demo-step"), plugin=JOURNAL, system=system).apply(REGISTER)
    assert caught.value.kind is kind and "the implementation raised ImplementationFailure" in str(caught.value)


# --- each runner's judging ----------------------------------------------------------------------------------


def _result(problems: tuple = (), verdict: str = "ok") -> ScenarioResult:
    return ScenarioResult(scenario="journal_identical_registrations", repeat=0, width=1, race_seconds=0.1,
                          total_seconds=0.2, outcomes={}, first_outcomes={}, callers=1, definite_callers=1,
                          definite_share=1.0, whole_call_retries=0, retried_callers=0, calls=1, attempts=1, aborts=0,
                          max_attempts=1, verdict=verdict, checker_ms=1.0, checker_steps=1, problems=problems,
                          promise_problems=())


class FakeScenario:
    """A race scenario whose every run against the variant finds `problems` and against the reference nothing."""

    def __init__(self, problems: tuple, reference: Any) -> None:
        self.problems, self.reference = problems, reference

    def execute(self, db: Any, *, implementation: Any, **_: Any) -> tuple[ScenarioResult, None]:
        return _result(() if implementation is self.reference else self.problems), None


def test_the_race_runner_judges_a_misbehaving_racer_an_error_or_a_timeout(misbehaving, tmp_path: Path) -> None:
    from race_tests.race_known_bad import judge_variant

    system, kind = misbehaving
    records, _history, _hung = race_callers(JOURNAL, system, FakeClient("demo-race"), [Racer("w1", REGISTER)],
                                            max_retries=0)
    problems = (*call_problems(records, JOURNAL), contract("w1: lifecycle does not match its audit"))
    judged = judge_variant(FakeScenario(problems, JOURNAL.reference), system, reference=JOURNAL.reference, db=None,
                           emulator=SimpleNamespace(reset=lambda _project: None), project_id="demo-race",
                           counterexamples=tmp_path)
    assert judged.verdict.status == VERDICTS[kind], judged.verdict
    assert len(judged.runs) == 1  # it decided at once: nothing to replay


def test_the_parallel_runner_judges_a_misbehaving_branch_an_error_or_a_timeout(misbehaving, monkeypatch,
                                                                               tmp_path: Path) -> None:
    from fencecheck.parallel.property import Outcome
    from parallel_tests import test_parallel_known_bad as runner

    system, kind = misbehaving
    recorder = Recorder(classify=classifier(JOURNAL, system), system=JOURNAL.name)
    records = _run_branch(JOURNAL, system, FakeClient("demo-branch"), None, recorder, "b1", (BranchCall(REGISTER),), 0)
    broken = Repetition(BROKEN, "demo-branch", problems=tuple(_harness_problems((records,), ("b1",))))
    program = ParallelProgram((), [[BranchCall(REGISTER)], [BranchCall(REGISTER)]], system="journal")
    case = CaseResult(program, (broken,), 1.0, "exec")
    outcome = Outcome(examples=1, repetitions=1, contested_examples=1, seconds=1.0, case=case,
                      counterexample=tmp_path / "parallel-x.json", first_failure_seconds=1.0, examples_to_failure=1)
    monkeypatch.setattr(runner, "run_property", lambda *args, **kwargs: outcome)
    judged = runner.judge_parallel_variant(system, projects=None, emulator=None, repeat=1, run_settings=None,
                                           counterexamples=tmp_path, root=tmp_path)
    assert judged.verdict.status == VERDICTS[kind], judged.verdict


def test_the_stateful_runner_judges_a_misbehaving_step_an_error_or_a_timeout(misbehaving, monkeypatch,
                                                                             tmp_path: Path) -> None:
    from stateful_tests import known_bad_support as support
    from tests.unit.test_known_bad_support import FakeMachine

    system, kind = misbehaving
    with pytest.raises(LockstepMismatch) as caught:
        Lockstep(FakeClient("demo-step"), plugin=JOURNAL, system=system).apply(REGISTER)
    monkeypatch.setattr(support, "_run_round", lambda *args, **kwargs: caught.value)
    target = support.Target(name="exec-fake", result_name="exec-fake", rule="none", description="a fake",
                            build=lambda: system, machine=FakeMachine, settings=support.TINY)
    with support.outside_the_artifacts(tmp_path):
        verdict, crash = support.judge_target(target, emulator=None, project_id="demo-step", db=None,
                                              failing_property="t::x", record_property=lambda *_: None)
    assert crash is None and verdict.status == VERDICTS[kind], verdict


# --- the gate: kinds through a real pytest run's JUnit record, and its replays' -----------------------------

SUITE = '''
from fencecheck.errors import CheckFailed
from fencecheck.runners.lockstep import LockstepMismatch
from fencecheck.problems import ProblemKind, contract, crash


def test_a_machine_step_that_crashed():
    raise LockstepMismatch("lockstep mismatch at step 1: register(...)\\n  the implementation raised X",
                           ProblemKind.{kind})


def test_a_race_whose_racer_crashed_beside_a_broken_invariant():
    # the race suite's wording, a contract property named in the text: the kinds decide, not the words
    raise CheckFailed("expired_takeover (repeat 0): structural invariants broken:\\nw1 (call 1): raised "
                      "ImplementationFailure: exited; implementation stderr (tail):\\nboom\\n (only the system's "
                      "error may escape)\\n3e4f: lifecycle does not match",
                      [crash("w1 (call 1): raised ImplementationFailure: exited\\nboom"), contract("3e4f: lifecycle")])


def test_a_contract_failure():
    raise CheckFailed("x: the history is not linearizable (history saved to counterexamples/race-x-1.json)",
                      [contract("checker: illegal")])


def test_a_plain_assertion_naming_a_contract_property():
    assert False, "LockstepMismatch: lockstep mismatch at step 2: the history is not linearizable"
'''


def _junit_of(tmp_path: Path, source: str) -> str:
    test = tmp_path / "test_suite.py"
    test.write_text(source)
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider", "-p",
                    "fencecheck.suites.pytest_plugin", f"--junitxml={junit}"], cwd=Path(__file__).resolve().parents[2],
                   capture_output=True, text=True, timeout=120, check=False)
    return junit.read_text()


@pytest.mark.parametrize("kind", [ProblemKind.CRASH, ProblemKind.HANG, ProblemKind.PROTOCOL])
def test_the_gate_reads_each_failing_tests_kinds_from_its_junit_record_not_its_text(kind, tmp_path: Path) -> None:
    found = {f.test.rpartition("::")[2]: f for f in from_junit(_junit_of(tmp_path, SUITE.replace("{kind}", kind.name)),
                                                                "stateful", tmp_path)}
    assert found["test_a_machine_step_that_crashed"].kinds == (kind.value,)
    assert found["test_a_race_whose_racer_crashed_beside_a_broken_invariant"].kinds == ("crash", "contract")
    assert found["test_a_contract_failure"].kinds == ("contract",)
    assert found["test_a_plain_assertion_naming_a_contract_property"].kinds == ("harness",)
    machine = found["test_a_machine_step_that_crashed"]
    assert known_bad_verdict([machine]).status == VERDICTS[kind]
    assert known_bad_verdict([found["test_a_race_whose_racer_crashed_beside_a_broken_invariant"]]).status == ERROR
    assert known_bad_verdict([found["test_a_plain_assertion_naming_a_contract_property"]]).status == ERROR
    # A contract failure alone is a would-be catch: its replays decide.
    contract_failure = found["test_a_contract_failure"]
    assert contract_failure.counterexamples == ("counterexamples/race-x-1.json",)
    replayed = attrs.evolve(contract_failure, replays=(Replay("counterexamples/race-x-1.json", (kind.value,), ()),))
    assert known_bad_verdict([replayed]).status == VERDICTS[kind]
    confirmed = attrs.evolve(contract_failure, replays=(Replay("counterexamples/race-x-1.json", ("contract",), ()),))
    assert known_bad_verdict([confirmed]).status == CAUGHT


def test_a_lockstep_programs_replay_reports_the_kind_of_its_failure(tmp_path: Path) -> None:
    program = tmp_path / "KnownBadX-1.py"
    program.write_text(textwrap.dedent('''
        from fencecheck.runners.lockstep import LockstepMismatch
        from fencecheck.problems import ProblemKind

        OPS = []

        def test_replay():
            raise LockstepMismatch("lockstep mismatch at step 1\\n  the implementation raised ImplementationFailure: "
                                   "no answer within 120 s (hang)", ProblemKind.HANG)
    '''))
    outcome = replay_program(program, "127.0.0.1:1", JOURNAL.reference)
    assert outcome.still_fails and [p.kind for p in outcome.problems] == [ProblemKind.HANG]
    replay = Replay(str(program), tuple(p.kind.value for p in outcome.problems), ())
    assert judge([contract("the machine's mismatch")], replay=replay.variant_problems(),
                 reference=replay.reference_problems()).status == TIMEOUT
