"""fencecheck.known_bad_verdict: the one definition of caught, and how each runner's evidence maps onto it."""

from __future__ import annotations

import pytest

from fencecheck.known_bad_verdict import (
    CAUGHT,
    CONTRACT,
    ERROR,
    HARNESS,
    SURVIVED,
    UNDECIDED,
    Finding,
    KnownBadVerdict,
    bound_warning,
    contract,
    error,
    failure_kind,
    gate_verdict,
    judge,
    mismatch_finding,
    problem_finding,
    verdict_finding,
)
from fencecheck.report.model import KNOWN_BAD_STATUSES

ILLEGAL = contract("checker: illegal (no order explains the answers)")


def test_statuses_are_the_reports():
    assert set(KNOWN_BAD_STATUSES) == {CAUGHT, SURVIVED, ERROR, "timeout"}
    with pytest.raises(ValueError, match="status"):
        KnownBadVerdict("killed", "x")
    with pytest.raises(ValueError, match="finding"):
        Finding("crash", "x")


def test_a_contract_failure_that_replays_and_passes_against_the_reference_is_caught():
    verdict = judge([ILLEGAL], replays_on_variant=True, passes_on_reference=True)
    assert verdict == KnownBadVerdict(CAUGHT, ILLEGAL.text) and verdict.caught


@pytest.mark.parametrize(("replays", "passes", "says"), [
    (None, None, "did not replay against the variant"),
    (False, True, "did not replay against the variant"),
    (True, None, "fails against the reference too"),
    (True, False, "fails against the reference too"),
])
def test_a_contract_failure_without_a_true_reproduction_is_an_error(replays, passes, says):
    verdict = judge([ILLEGAL], replays_on_variant=replays, passes_on_reference=passes, reproduction="file.json")
    assert verdict.status == ERROR and says in verdict.reason and "file.json" in verdict.reason


def test_an_error_beside_a_contract_failure_makes_the_verdict_an_error():
    crash = error("alice: raised NameError: name 'x' is not defined (only the system's error may escape)")
    verdict = judge([ILLEGAL, crash], replays_on_variant=True, passes_on_reference=True)
    assert verdict.status == ERROR and "NameError" in verdict.reason and not verdict.caught


def test_an_undecided_checker_is_an_error_alone_but_not_beside_a_contract_failure():
    unknown = verdict_finding("unknown", "the search budget ran out")
    alone = judge([unknown], replays_on_variant=True, passes_on_reference=True)
    assert alone.status == ERROR and "checker: unknown" in alone.reason
    invariant = problem_finding("INV-3: venues/bar: activeLanternCount 1, 0 active lanterns")
    beside = judge([unknown, invariant], replays_on_variant=True, passes_on_reference=True)
    assert beside.status == CAUGHT and beside.reason == invariant.text
    crash = problem_finding("alice: raised NameError: n (only the system's error may escape)")
    assert judge([unknown, invariant, crash], replays_on_variant=True, passes_on_reference=True).status == ERROR


def test_nothing_found_is_survived_and_warnings_decide_nothing():
    warned = bound_warning("the shrunk program's length", 14, 12)
    assert warned == ["the shrunk program's length: 14 (expected at most 12; shrinking is time-capped)"]
    assert bound_warning("x", 12, 12) == []
    assert judge([], warnings=warned) == KnownBadVerdict(SURVIVED, "no property of the contract failed", tuple(warned))
    caught = judge([ILLEGAL], replays_on_variant=True, passes_on_reference=True, warnings=warned)
    assert caught.caught and caught.warnings == tuple(warned)


@pytest.mark.parametrize(("problem", "kind"), [
    ("alice: raised NameError: name 'x' is not defined (only the journal error type may escape)", HARNESS),
    ("light-3: raised KeyError: 'venue' (only the system's error may escape)", HARNESS),
    ("b: still running when the harness gave up", HARNESS),
    ("invariant: w2: still running when the harness gave up", HARNESS),
    ("3e4fec9f: lifecycle does not match its revision-2 audit", CONTRACT),
    ("alice: the clock was read 2 times (once per call required)", CONTRACT),
    ("INV-3: publicPins/lan-1: pin without an active lantern", CONTRACT),
])
def test_race_problems(problem, kind):
    assert problem_finding(problem).kind == kind


def test_verdicts_and_mismatches():
    assert verdict_finding("ok") is None
    assert verdict_finding("illegal", "no order\nmore").kind == CONTRACT
    assert verdict_finding("unknown", "budget exhausted").kind == UNDECIDED
    assert mismatch_finding("lockstep mismatch at step 1: register(...)\n  the implementation raised NameError: x\n"
                            "model state after the step").kind == HARNESS
    assert mismatch_finding("lockstep mismatch at step 2: complete(...)\n  model expects 'journal_unavailable'\n"
                            "model state after the step:\n  the implementation raised X in an op's text"
                            ).kind == CONTRACT


@pytest.mark.parametrize(("message", "kind"), [
    ("LockstepMismatch: lockstep mismatch at step 2: complete(...)\n  model expects 'journal_unavailable'", CONTRACT),
    ("LockstepMismatch: lockstep mismatch at step 1: register(...)\n  the implementation raised NameError: x", HARNESS),
    ("AssertionError: expired_takeover: the history is not linearizable (history saved to x)", CONTRACT),
    ("AssertionError: expired_takeover: structural invariants broken:\n3e4f: lifecycle does not match", CONTRACT),
    ("AssertionError: expired_takeover: structural invariants broken:\nw1: raised NameError: n (only the journal "
     "error type may escape)", HARNESS),
    ("Failed: expired_takeover: the checker could not decide within its budget (...); an undecided history is "
     "not a pass", HARNESS),
    ("AssertionError: lantern_double_extinguish (repeat 0): invariants or harness checks broken:\nINV-3: x", CONTRACT),
    ("AssertionError: x: the seed's promise (one extinguish wins) is broken:\nboth won", CONTRACT),
    ("AssertionError: parallel program fails sometimes against reference (1/5 repetitions failed; 2 branches)\n"
     "failing repetition (illegal, project p):", CONTRACT),
    ("AssertionError: parallel program fails always against reference (5/5 repetitions failed)\n"
     "failing repetition (unknown, project p):", HARNESS),
    ("NameError: name 'scenario_plan' is not defined", HARNESS),
    ("RuntimeError: the emulator stopped answering", HARNESS),
    ("", HARNESS),
])
def test_failing_test_messages(message, kind):
    assert failure_kind(message) == kind


def test_the_gate_claims_a_catch_only_when_every_failure_is_the_contracts():
    assert gate_verdict([CONTRACT, CONTRACT]).status == CAUGHT
    assert gate_verdict([CONTRACT, HARNESS]).status == ERROR
    assert gate_verdict([HARNESS]).status == ERROR
    assert gate_verdict([]).status == SURVIVED
