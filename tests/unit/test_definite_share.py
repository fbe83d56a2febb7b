"""The definite-share rule (fencecheck/checker/definite.py): a race run, a contest run and a parallel program run whose
callers mostly got no definite answer fail for contention, never pass; the thresholds are exact."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import attrs
import pytest

from fencecheck.checker.definite import (
    RUN_SHARE_PERCENT,
    SCENARIO_SHARE_PERCENT,
    contention_problem,
    contract_unavailable,
    explained_unavailable,
    scenario_contention,
    share_holds,
    wire_faulted,
)
from fencecheck.checker.history import History, Indefinite, Planned, WireFault, simulate
from fencecheck.checker.linearizability import check
from fencecheck.runners.contest import ContestRun, Ids, RacerRecord
from fencecheck.runners.contest import judge as judge_contest
from fencecheck.runners.contest_results import contest_result
from fencecheck.runners.contest_simulation import simulate_contest, simulate_in_turn
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.lantern.plugin import LANTERN
from model.journal import Acquire, Register
from tests.systems.journal.races import BY_NAME, WIDTH
from tests.systems.lantern.races import BY_NAME as LANTERN_BY_NAME

UNAVAILABLE = Indefinite("journal_unavailable")
HOLDERS = ("7c9e6679-7425-40de-944b-e07fc1f90ae7", "886313e1-3b8a-4372-9b90-0c9aee199e5d")
READ_ONLY = ("terminal_retries_and_acquires", "preseeded_next_audit", "preseeded_registration_audit")


def test_thresholds_are_the_issue_s() -> None:
    assert (RUN_SHARE_PERCENT, SCENARIO_SHARE_PERCENT) == (90, 99)


@pytest.mark.parametrize(
    ("definite", "callers", "percent", "holds"),
    [
        (899, 1000, 90, False),  # 89.9 %
        (900, 1000, 90, True),  # 90 %
        (9, 10, 90, True),
        (21, 24, 90, False),  # 87.5 %
        (22, 24, 90, True),  # 91.7 %
        (989, 1000, 99, False),  # 98.9 %
        (990, 1000, 99, True),  # 99 %
        (237, 240, 99, False),  # 10 repeats of 24, three unanswered
        (238, 240, 99, True),
        (0, 0, 90, True),  # no callers, nothing to judge
    ],
)
def test_the_boundaries_are_exact(definite: int, callers: int, percent: int, holds: bool) -> None:
    assert share_holds(definite, callers, percent) is holds
    assert (contention_problem(definite, callers, percent) is None) is holds


def test_the_message_names_contention_not_the_contract() -> None:
    assert contention_problem(20, 24) == (
        "contention: only 20 of 24 callers had a definite answer (83.3%, needs 90%): the emulator's contention "
        "left the others unavailable; this is not a contract verdict"
    )
    assert "(89.9%, needs 90%)" in contention_problem(899, 1000)  # rounded down, never up to the threshold
    assert "(0%, needs 90%)" in contention_problem(0, 24)


def test_a_scenario_needs_99_percent_over_its_repeats() -> None:
    runs = [("a", 24, 24)] * 9 + [("a", 22, 24)]  # every run over 90 %; 238/240 over the scenario
    runs += [("b", 24, 24)] * 9 + [("b", 21, 24)]  # 237/240 = 98.75 %
    found = scenario_contention(runs)
    assert list(found) == ["b"]
    assert found["b"].startswith("contention: only 237 of 240 callers over 10 repeats had a definite answer")
    assert "needs 99%" in found["b"]
    # One run is judged by the run's own 90 % rule: 23 of 24 holds there, and the scenario rule leaves it alone.
    assert scenario_contention([("c", 23, 24)]) == {}
    assert scenario_contention([("c", 23, 24), ("c", 23, 24)])["c"].startswith(
        "contention: only 46 of 48 callers over 2 repeats had a definite answer")


# --- the runners' judgements ---------------------------------------------------------------------------


def _simulated(plan) -> ContestRun:
    return simulate_in_turn(plan.contest(), plugin=JOURNAL)


def _all_unavailable(run: ContestRun) -> ContestRun:
    """The run as if every call had answered journal_unavailable (the emulator's contention, nothing applied),
    judged again."""
    calls = tuple(attrs.evolve(call, outcome=UNAVAILABLE) for call in run.history.calls)
    history = History(calls, run.history.final_documents, system=run.history.system)
    records = tuple(
        RacerRecord(r.racer, tuple(attrs.evolve(c, outcome=UNAVAILABLE) for c in r.calls)) for r in run.racers
    )
    verdict, seconds = judge_contest(JOURNAL, history, run.initial_state, run.final_documents)
    return attrs.evolve(run, racers=records, history=history, verdict=verdict, checker_seconds=seconds)


@pytest.mark.parametrize("name", READ_ONLY)
def test_a_journal_race_whose_callers_are_all_unavailable_fails_for_contention(name: str) -> None:
    run = _all_unavailable(_simulated(BY_NAME[name].plan(Ids(41))))
    assert run.verdict.ok  # the checker lets every indefinite call have applied or not: it cannot object
    result = contest_result(run)
    assert result.definite_callers == 0 and result.verdict == "ok" and result.contract_unavailable_callers == 0
    assert result.contention is not None and result.contention.startswith(
        f"contention: only 0 of {run.contest.width}")
    assert not result.passed
    assert result.to_json()["contention"] == result.contention


LOST_COMMIT = WireFault("fail-response", "Commit", forwarded=True, definite=False)
DELAYED_COMMIT = WireFault("delay", "Commit", forwarded=True, definite=True)
REFUSED_BEGIN = WireFault("reject", "BeginTransaction", forwarded=False, definite=True)


def _faulting_last_attempts(run: ContestRun, faults: tuple[WireFault, ...]) -> ContestRun:
    """The run with `faults` on each racer's last attempt, as the fault mix would leave them."""
    last = {r.calls[-1].call_id for r in run.racers if r.calls}
    calls = tuple(attrs.evolve(c, wire_faults=faults) if c.id in last else c for c in run.history.calls)
    return attrs.evolve(run, history=History(calls, run.history.final_documents, system=run.history.system))


def test_a_call_whose_answer_the_wire_lost_is_not_contention() -> None:
    """The same all-unavailable race, but the wire proxy lost each racer's last commit answer (the fault mix):
    the indefinite answers are the faults', so the run is not failed for contention; without the faults it is."""
    run = _all_unavailable(_simulated(BY_NAME[READ_ONLY[0]].plan(Ids(44))))
    faulted = _faulting_last_attempts(run, (LOST_COMMIT,))
    assert contest_result(run).contention is not None
    result = contest_result(faulted)
    assert result.contention is None and result.contract_unavailable_callers == run.contest.width
    assert wire_faulted(faulted.history) == {r.calls[-1].call_id for r in run.racers}


@pytest.mark.parametrize(
    "faults",
    [(DELAYED_COMMIT,), (REFUSED_BEGIN,), (REFUSED_BEGIN, DELAYED_COMMIT)],
    ids=["delay Commit", "reject BeginTransaction", "both"],
)
def test_a_call_the_wire_only_delayed_or_refused_is_still_contention(faults: tuple[WireFault, ...]) -> None:
    """Every racer answered unavailable and its last attempt met only faults that lose no answer: a delayed
    commit's answer came back, a refused BeginTransaction never reached the emulator (the client retries it).
    The unavailable answers are not the wire's, so the run fails for contention with 0 of its callers."""
    run = _faulting_last_attempts(_all_unavailable(_simulated(BY_NAME[READ_ONLY[0]].plan(Ids(44)))), faults)
    faulted = [call for call in run.history.calls if call.wire_faults]
    assert len(faulted) == run.contest.width and all(call.wire_faults == faults for call in faulted)
    assert wire_faulted(run.history) == frozenset()
    result = contest_result(run)
    assert result.contract_unavailable_callers == 0
    assert result.contention is not None and result.contention.startswith(f"contention: only 0 of {run.contest.width}")
    assert not result.passed


def test_an_older_file_s_label_only_fault_is_not_taken_to_have_lost_an_answer() -> None:
    """A label alone ("fail-response Commit", what files held before the whole events) does not say whether
    the call reached the emulator: its call is not excused (conservative), unlike the same fault known."""
    run = _all_unavailable(_simulated(BY_NAME[READ_ONLY[0]].plan(Ids(44))))
    labelled = _faulting_last_attempts(run, (WireFault.from_label("fail-response Commit"),))
    assert wire_faulted(labelled.history) == frozenset()
    assert contest_result(labelled).contention is not None


def test_a_journal_race_with_every_answer_passes() -> None:
    result = contest_result(_simulated(BY_NAME["terminal_retries_and_acquires"].plan(Ids(42))))
    assert result.contention is None and result.passed


def test_the_model_s_own_unavailable_answer_is_not_contention() -> None:
    """Acquires with a clock reading before the registration: the contract answers journal_unavailable to them
    wherever they are placed, so they count with the definite callers; the others' answers are definite."""
    plan = BY_NAME["distinct_holder_first_acquire"].plan(Ids(43))
    early = tuple(attrs.evolve(c, op=attrs.evolve(c.op, now=plan.setup[0].now - timedelta(seconds=1)))
                  for c in plan.callers[:3])
    run = _simulated(attrs.evolve(plan, callers=(*early, *plan.callers[3:])))
    assert run.verdict.ok
    result = contest_result(run)
    assert result.definite_callers == WIDTH - 3 and result.contract_unavailable_callers == 3
    assert result.contention is None and result.passed


def _first_acquires(late_answer: Indefinite = UNAVAILABLE, *, overlapping: bool = True):
    """A registered key; a first acquire at T+100 s and another holder's read at T-1 s (before the
    registration), answered `late_answer`. Overlapping the lease, the contract answers the early one
    journal_unavailable when it goes first and lease_busy after the lease; invoked after the lease completed,
    only lease_busy. Returns (history, initial state, the early call's id)."""
    plan = BY_NAME["distinct_holder_first_acquire"].plan(Ids(45))
    command, created = plan.setup[0].command, plan.setup[0].now
    initial, _ = JOURNAL.step(JOURNAL.initial_state(), Register(command, created))
    lease = Acquire(command, HOLDERS[0], created + timedelta(seconds=100))
    early = Acquire(command, HOLDERS[1], created - timedelta(seconds=1))
    window = (1, 9, 4) if overlapping else (11, 20, 15)
    history, _ = simulate([Planned("a", lease, 0, 10, 5), Planned("b", early, *window)], plugin=JOURNAL,
                          initial_state=initial)
    calls = [attrs.evolve(c, outcome=late_answer) if c.caller == "b" else c for c in history.calls]
    history = attrs.evolve(history, calls=calls)
    return history, initial, next(c.id for c in history.calls if c.caller == "b")


def test_an_unavailable_answer_some_order_explains_is_excused_by_the_checker() -> None:
    """contract_unavailable cannot excuse the early call (placed after the racing lease the model answers
    lease_busy); the checker finds the order that explains its answer with every other: not contention."""
    history, initial, early = _first_acquires()
    verdict = check(history, plugin=JOURNAL, initial_state=initial)
    assert verdict.ok
    assert early not in contract_unavailable(verdict, initial)
    assert explained_unavailable(history, verdict, initial, excused=frozenset(), budget=10_000) == {early}


def test_an_unavailable_answer_no_order_explains_stays_contention() -> None:
    """The early call invoked after the lease completed: the model answers lease_busy, so an implementation
    answering journal_unavailable is not excused (the checker alone lets it be a call that never applied)."""
    history, initial, _early = _first_acquires(overlapping=False)
    verdict = check(history, plugin=JOURNAL, initial_state=initial)
    assert verdict.ok  # an indefinite call may never have applied: the checker cannot object
    assert explained_unavailable(history, verdict, initial, excused=frozenset(), budget=10_000) == frozenset()


def test_a_transport_failure_is_never_explained_as_the_contract_s_answer() -> None:
    history, initial, _early = _first_acquires(Indefinite("transport:RpcError"))
    verdict = check(history, plugin=JOURNAL, initial_state=initial)
    assert verdict.ok
    assert explained_unavailable(history, verdict, initial, excused=frozenset(), budget=10_000) == frozenset()


def test_a_contest_whose_racers_are_all_unavailable_fails_for_contention() -> None:
    run = simulate_contest(LANTERN_BY_NAME["double_extinguish"].contest(), plugin=LANTERN)
    assert contest_result(run).passed
    unavailable = Indefinite("lantern_unavailable")
    calls = tuple(attrs.evolve(call, outcome=unavailable) for call in run.history.calls)
    history = History(calls, run.history.final_documents, system=run.history.system)
    racers = tuple(
        RacerRecord(r.racer, tuple(attrs.evolve(c, outcome=unavailable) for c in r.calls)) for r in run.racers
    )
    verdict, seconds = judge_contest(LANTERN, history, run.initial_state, run.final_documents)
    run = attrs.evolve(run, history=history, racers=racers, verdict=verdict, checker_seconds=seconds)
    result = contest_result(run)
    assert result.verdict == "ok" and result.definite_callers == 0
    assert result.contention is not None and "this is not a contract verdict" in result.contention
    assert not result.passed


# --- the race suite's session check ----------------------------------------------------------------------


def test_the_race_session_fails_a_scenario_below_99_percent_over_its_repeats(monkeypatch) -> None:
    from race_tests import conftest

    monkeypatch.setattr(conftest, "_SHARES", [])
    recorded: list[tuple[str, object]] = []
    for definite in (24, 22, 23):  # 69 of 72: 95.8 %
        result = SimpleNamespace(scenario="preseeded_next_audit", definite_callers=definite, callers=24,
                                 contract_unavailable_callers=0)
        conftest.record_share(lambda name, value: recorded.append((name, value)), result)
    conftest.record_share(lambda name, value: recorded.append((name, value)),
                          SimpleNamespace(scenario="expired_takeover", definite_callers=23, callers=24,
                                          contract_unavailable_callers=1))
    for entry in recorded:  # as xdist hands the controller each worker's report
        conftest.pytest_runtest_logreport(SimpleNamespace(when="call", user_properties=[entry]))
    conftest.pytest_runtest_logreport(SimpleNamespace(when="setup", user_properties=recorded))  # not counted
    session = SimpleNamespace(config=SimpleNamespace(stash={}), exitstatus=pytest.ExitCode.OK)
    conftest.pytest_sessionfinish(session, 0)
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED
    problems = session.config.stash[conftest._SHARE_PROBLEMS]
    assert list(problems) == ["preseeded_next_audit"]
    assert problems["preseeded_next_audit"].startswith("contention: only 69 of 72 callers over 3 repeats")

    monkeypatch.setattr(conftest, "_SHARES", [("expired_takeover", 24, 24)])
    session = SimpleNamespace(config=SimpleNamespace(stash={}), exitstatus=pytest.ExitCode.OK)
    conftest.pytest_sessionfinish(session, 0)
    assert session.exitstatus == pytest.ExitCode.OK


def test_excusing_unavailable_answers_stops_once_the_share_cannot_hold(monkeypatch) -> None:
    """A race nobody answered and nothing stored (a never-available implementation): the model explains no
    unavailable answer, and each check of such a history may spend its whole budget. The search stops once even
    every untried call could not lift the share to 90%: a few checks, not one per call."""
    import fencecheck.checker.linearizability as linearizability

    run = _all_unavailable(_simulated(BY_NAME["identical_registrations"].plan(Ids(46))))
    empty = {key: {} for key in run.history.final_documents}
    history = attrs.evolve(run.history, final_documents=empty)
    verdict, _seconds = judge_contest(JOURNAL, history, run.initial_state, empty)
    assert verdict.ok
    checks = []
    real_check = linearizability.check

    def counted(*args, **kwargs):
        checks.append(1)
        return real_check(*args, **kwargs)

    monkeypatch.setattr(linearizability, "check", counted)
    run = attrs.evolve(run, history=history, final_documents=empty, verdict=verdict)
    result = contest_result(run)
    assert result.contract_unavailable_callers == 0 and result.contention is not None
    needless = WIDTH - (WIDTH * RUN_SHARE_PERCENT + 99) // 100  # callers that may fail before 90% is out of reach
    assert len(checks) <= 1 + needless + 1, f"{len(checks)} checks for {WIDTH} unanswered callers"
