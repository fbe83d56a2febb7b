"""The parallel property under Hypothesis (fencecheck.parallel.property), with the emulator replaced by a pure
stand-in for `run_case`: a program "fails" when two branches race writing acquires of different holders
(the lost-update shape), in every repetition or only now and then.

- a failure that always reproduces is shrunk to the two-call race, classified, and saved;
- a failure that reproduces only sometimes never escapes as an exception (not even Hypothesis's
  `FlakyFailure`): the outcome still reports a failing case and says whether the final replay saw it;
- a property that never fails runs the profile's examples and reports no case.
"""

from __future__ import annotations

import random

import pytest

from fencecheck.parallel import (
    FAILS_ALWAYS,
    CaseResult,
    ParallelProgram,
    Repetition,
    load_counterexample,
    parallel_settings,
)
from fencecheck.parallel import property as parallel_property
from fencecheck.plugin.registry import plugin
from model.journal import Acquire, step

JOURNAL = plugin("journal")


def racing_acquires(program: ParallelProgram) -> bool:
    state, _results = program.prefix_state()
    holders = {}
    for index, branch in enumerate(program.branches):
        op = branch[0].op
        if isinstance(op, Acquire) and step(state, op)[0] is not state:
            holders.setdefault(op.lease_id, index)
    return len(set(holders.values())) >= 2


def stand_in(rate: float, seed: int = 7):
    rng = random.Random(seed)

    def run_case(projects, program, *, system, repeat, final=False, **_kwargs):
        rounds = 4 if final else 1
        statuses = []
        for _ in range(repeat * rounds):
            lost = racing_acquires(program) and rng.random() < rate
            statuses.append("illegal" if lost else "ok")
        return CaseResult(program, tuple(Repetition(s, None) for s in statuses), 0.0)

    return run_case


SETTINGS = parallel_settings("ci", max_examples=300, database=None, derandomize=True)


def test_an_always_failing_race_is_shrunk_classified_and_saved(monkeypatch, tmp_path):
    monkeypatch.setattr(parallel_property, "run_case", stand_in(1.0))
    outcome = parallel_property.run_property(
        None, plugin=JOURNAL,
        repeat=3, run_settings=SETTINGS, shrink_seconds=20, minimize_seconds=5, counterexamples=tmp_path
    )
    assert outcome.failed and not outcome.flaky and outcome.error is not None
    case = outcome.case
    assert case.classification == FAILS_ALWAYS and len(case.failures) == len(case.repetitions) >= 3
    assert (case.program.size.branches, case.program.size.concurrent_ops) == (2, 2)
    assert outcome.examples_to_failure >= 1 and outcome.first_failure_seconds is not None
    saved = load_counterexample(outcome.counterexample)
    assert saved.program == case.program and saved.classification == FAILS_ALWAYS


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_race_lost_only_sometimes_is_reported_not_raised(monkeypatch, tmp_path, seed):
    monkeypatch.setattr(parallel_property, "run_case", stand_in(0.15, seed))
    outcome = parallel_property.run_property(
        None, plugin=JOURNAL,
        repeat=2, run_settings=SETTINGS, shrink_seconds=10, minimize_seconds=2, counterexamples=tmp_path
    )
    assert outcome.failed, "the stand-in loses the race in 15 % of repetitions: 300 programs must find it"
    assert outcome.case.failed and racing_acquires(outcome.case.program)
    assert outcome.counterexample is not None and outcome.counterexample.exists()
    if outcome.flaky:  # Hypothesis's final replay passed: the smallest failing case seen is reported
        assert "final replay passed" in outcome.message()


def test_a_passing_property_runs_its_examples(monkeypatch, tmp_path):
    monkeypatch.setattr(parallel_property, "run_case", stand_in(0.0))
    outcome = parallel_property.run_property(
        None, plugin=JOURNAL,
        repeat=2, run_settings=parallel_settings("ci", max_examples=25, database=None, derandomize=True),
        counterexamples=tmp_path,
    )
    assert not outcome.failed and outcome.case is None and outcome.counterexample is None
    assert outcome.examples == 25 and outcome.repetitions == 50 and outcome.contested_examples == 25
    assert list(tmp_path.iterdir()) == []
