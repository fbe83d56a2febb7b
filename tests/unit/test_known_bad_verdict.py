"""fencecheck.checker.known_bad_verdict: the one judge of known-bad variants, deciding from structured problems
(fencecheck.problems), and how each kind of problem maps onto it."""

from __future__ import annotations

import pytest

from fencecheck.checker.known_bad_verdict import (
    CAUGHT,
    ERROR,
    STATUSES,
    SURVIVED,
    TIMEOUT,
    KnownBadVerdict,
    bound_warning,
    judge,
    run_verdict,
)
from fencecheck.errors import CheckFailed, ContractFailure
from fencecheck.problems import (
    Problem,
    ProblemKind,
    as_problems,
    contention,
    contract,
    crash,
    decided,
    hang,
    harness,
    kind_of_exception,
    problems_in,
    protocol,
    unknown,
    verdict_problem,
)
from fencecheck.report.failures import Failure, would_be_catch
from fencecheck.report.model import KNOWN_BAD_STATUSES
from fencecheck.runners.lockstep import LockstepMismatch

ILLEGAL = contract("checker: illegal (no order explains the answers)")
# What a crash of an exec: implementation reads like in a race's problems: the message spans lines (the
# implementation's stderr tail), which is what a line-bound text rule once misread as a contract finding.
MULTI_LINE_CRASH = crash("w1 (call 1): raised ImplementationFailure: the implementation exited (code 1) with requests "
                         "unanswered; implementation stderr (tail):\nTraceback (most recent call last):\n  boom\n"
                         " (only the system's error may escape)")


def caught_with(*problems: Problem) -> KnownBadVerdict:
    return judge(problems, replay=[ILLEGAL], reference=[])


def test_statuses_are_the_reports():
    assert set(KNOWN_BAD_STATUSES) == {CAUGHT, SURVIVED, ERROR, TIMEOUT} == set(STATUSES)
    with pytest.raises(ValueError, match="status"):
        KnownBadVerdict("killed", "x")
    with pytest.raises(ValueError, match="crashy"):
        Problem("crashy", "x")
    assert Problem("crash", "x") == crash("x") and Problem.from_json(crash("x").to_json()) == crash("x")


def test_a_contract_failure_that_replays_and_passes_against_the_reference_is_caught():
    verdict = judge([ILLEGAL], replay=[ILLEGAL], reference=[])
    assert verdict == KnownBadVerdict(CAUGHT, ILLEGAL.text) and verdict.caught


@pytest.mark.parametrize(("replay", "reference", "says"), [
    (None, [], "did not replay against the variant"),
    ([], [], "did not replay against the variant"),
    ([ILLEGAL], None, "was not run against the reference"),
    ([ILLEGAL], [contract("INV-3: x")], "fails against the reference too"),
    ([ILLEGAL], [contention("3 of 5 callers definite")], "fails against the reference too"),
])
def test_a_contract_failure_without_a_true_reproduction_is_an_error(replay, reference, says):
    verdict = judge([ILLEGAL], replay=replay, reference=reference, reproduction="file.json")
    assert verdict.status == ERROR and says in verdict.reason and "file.json" in verdict.reason


@pytest.mark.parametrize("error", [MULTI_LINE_CRASH, protocol("w1: malformed answer line: b'{'"),
                                   harness("the start barrier broke")], ids=["crash", "protocol", "harness"])
def test_an_error_beside_a_contract_failure_makes_the_verdict_an_error(error):
    verdict = caught_with(ILLEGAL, error)
    assert verdict.status == ERROR and error.text in verdict.reason and not verdict.caught


def test_a_hang_is_a_timeout_and_an_error_beside_it_still_an_error():
    stuck = hang("w2: still running when the harness gave up")
    assert caught_with(ILLEGAL, stuck).status == TIMEOUT
    assert caught_with(stuck).status == TIMEOUT and "never returned" in caught_with(stuck).reason
    assert caught_with(stuck, MULTI_LINE_CRASH).status == ERROR


def test_an_undecided_checker_is_an_error_alone_but_not_beside_a_contract_failure():
    undecided = verdict_problem("unknown", "the search budget ran out")
    assert undecided == unknown("checker: unknown (the search budget ran out)")
    alone = caught_with(undecided)
    assert alone.status == ERROR and "checker: unknown" in alone.reason
    invariant = contract("INV-3: venues/bar: activeLanternCount 1, 0 active lanterns")
    beside = caught_with(undecided, invariant)
    assert beside.status == CAUGHT and beside.reason == invariant.text
    assert caught_with(undecided, invariant, MULTI_LINE_CRASH).status == ERROR


def test_contention_alone_is_an_error_never_caught_nor_survived_and_beside_a_contract_failure_blocks_nothing():
    contended = contention("3 of 5 racing callers got a definite answer (fewer than 90%)")
    alone = caught_with(contended)
    assert alone.status == ERROR and "too contended to judge" in alone.reason
    assert caught_with(contended, ILLEGAL).status == CAUGHT
    assert run_verdict([contended]) == alone


def test_nothing_found_is_survived_and_warnings_decide_nothing():
    warned = bound_warning("the shrunk program's length", 14, 12)
    assert warned == ["the shrunk program's length: 14 (expected at most 12; shrinking is time-capped)"]
    assert bound_warning("x", 12, 12) == []
    assert judge([], warnings=warned) == KnownBadVerdict(SURVIVED, "no property of the contract failed", tuple(warned))
    caught = judge([ILLEGAL], replay=[ILLEGAL], reference=[], warnings=warned)
    assert caught.caught and caught.warnings == tuple(warned)


@pytest.mark.parametrize(("replay", "status", "says"), [
    ([MULTI_LINE_CRASH], ERROR, "its replay against the variant failed by a crash"),
    ([ILLEGAL, MULTI_LINE_CRASH], ERROR, "failed by a crash"),
    ([protocol("answer for an id that is not in flight: 7")], ERROR, "broken process protocol"),
    ([hang("w1: no answer within 120 s (hang)")], TIMEOUT, "hung"),
    ([unknown("checker: unknown")], ERROR, "decided nothing"),
    ([contention("2 of 4 definite")], ERROR, "too contended"),
])
def test_a_replay_confirms_a_catch_only_by_a_contract_finding(replay, status, says):
    verdict = judge([ILLEGAL], replay=replay, reference=[])
    assert verdict.status == status and says in verdict.reason, verdict


@pytest.mark.parametrize(("problem", "kind"), [
    ("3e4fec9f: lifecycle does not match its revision-2 audit", ProblemKind.CONTRACT),
    (crash("alice (call 1): raised NameError: x\nsecond line (only the system's error may escape)"), ProblemKind.CRASH),
    (hang("b: still running when the harness gave up"), ProblemKind.HANG),
])
def test_race_problems(problem, kind):
    # A plug-in's plain string is a contract finding; a structured problem keeps its kind, whatever its text says.
    assert as_problems([problem])[0].kind is kind


def test_verdicts_and_mismatches():
    assert verdict_problem("ok") is None
    assert verdict_problem("illegal", "no order\nmore") == contract("checker: illegal (no order)")
    assert verdict_problem("unknown", "budget exhausted").kind is ProblemKind.UNKNOWN
    # The kind is the mismatch's own, never read from its text: a text naming a crash is still a contract finding.
    said = "lockstep mismatch at step 2: complete(...)\n  model expects 'lease_busy'\n  the implementation raised"
    assert LockstepMismatch(said).kind is ProblemKind.CONTRACT
    assert LockstepMismatch("mismatch at step 1", ProblemKind.HANG).problem == hang("mismatch at step 1")


def test_an_exception_says_its_own_kind_and_a_failing_tests_exception_carries_its_problems():
    assert kind_of_exception(NameError("x")) is ProblemKind.CRASH
    mismatch = LockstepMismatch("a crash\nover lines", ProblemKind.CRASH)
    assert problems_in(mismatch) == (crash("a crash\nover lines"),)
    try:
        try:
            raise mismatch
        except LockstepMismatch as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert problems_in(outer) == (mismatch.problem,)  # found on the chain of causes
    group = ExceptionGroup("two bugs", [ContractFailure("INV-2: x"), CheckFailed("race", [hang("w1: hung")])])
    assert problems_in(group) == (contract("INV-2: x"), hang("w1: hung"))
    assert problems_in(AssertionError("the history is not linearizable")) == ()  # says nothing structured
    assert decided([unknown("u"), contention("c")]) is False and decided([unknown("u"), ILLEGAL]) is True


def _failure(*kinds: str) -> Failure:
    return Failure("races", "t::x", ("AssertionError: x: the history is not linearizable",), (), kinds=kinds)


def test_the_gate_claims_a_catch_only_when_every_failure_is_the_contracts():
    assert would_be_catch([_failure("contract"), _failure("contract")]) is None  # its replays decide
    assert would_be_catch([_failure("contract"), _failure("crash", "contract")]).status == ERROR
    assert would_be_catch([_failure("harness")]).status == ERROR
    assert would_be_catch([_failure("contract", "hang")]).status == TIMEOUT
    assert would_be_catch([_failure("contention")]).status == ERROR
    assert would_be_catch([]).status == SURVIVED
