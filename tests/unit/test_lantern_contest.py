"""The contest runner's pure parts (fencecheck/runners/contest.py) and the lantern race scenarios
(tests/systems/lantern/races.py), without the emulator.

- contests are validated; racing, whole-call retries, call records and harness problems work on a fake
  implementation that needs no Firestore;
- every scenario's calls are valid calls and its setup reaches its state without an error answer;
- in many orders, including the checker's worst invocation order, the model's answers keep every scenario's
  promise and INV-1..5, and the checker decides them well inside its budget (the widths are chosen for it);
- the promises, the invariants and the checker do fail on broken races;
- a run's result document carries what the evidence report reads, and lantern histories, results and
  counterexamples read back and check the same.
"""

from __future__ import annotations

import json
import random
import threading
from datetime import timedelta
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import attrs
import pytest

from fencecheck.checker.history import Call, Definite, History, Indefinite, Planned, WireFault, simulate
from fencecheck.checker.linearizability import DEFAULT_BUDGET
from fencecheck.problems import contract, crash
from fencecheck.runners.contest import (
    CallRecord,
    Contest,
    Racer,
    RacerRecord,
    call_problems,
    judge,
    race_callers,
    split_documents,
)
from fencecheck.runners.contest_results import (
    COUNTEREXAMPLE_FORMAT,
    RESULT_FORMAT,
    contest_result,
    load_saved,
    recheck,
    result_document,
    save_counterexample,
    save_result,
)
from fencecheck.runners.contest_simulation import setup_state, simulate_contest
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.lantern.plugin import LANTERN, LanternSystem
from known_bad.lantern import VARIANTS
from model.journal import Acquire, CommandRef, Register
from model.lantern import Extinguish, FaultKind, InjectFault, Light, documents, step
from tests.systems.lantern.races import BY_NAME, SCENARIOS, WIDTH, LanternScenario, structural_problems
from tests.systems.lantern.support import AT_BAR, BAR, T0, US

ids_of = [s.name for s in SCENARIOS]
# Well inside DEFAULT_BUDGET: a scenario whose worst order costs more than this is too wide for the checker.
STEP_CEILING = DEFAULT_BUDGET // 20


def orders(width: int, count: int = 10) -> list[tuple[list[int], list[int]]]:
    """(effect order, invocation order) pairs: listed, reversed, shuffles; each effect order is also invoked in
    reverse, so the call that took effect last is the first the checker tries (its worst case)."""
    rng = random.Random(width)
    effects = [list(range(width)), list(reversed(range(width)))]
    for _ in range(count):
        shuffled = list(range(width))
        rng.shuffle(shuffled)
        effects.append(shuffled)
    return [(effect, invoked) for effect in effects for invoked in (effect, list(reversed(effect)))]


# --- contests ----------------------------------------------------------------------------------------------


def test_a_contest_needs_racers_with_unique_names() -> None:
    op = Extinguish("alice", "lan-1", now=T0)
    with pytest.raises(ValueError, match="needs racers"):
        Contest("empty", (), ())
    with pytest.raises(ValueError, match="unique"):
        Contest("twins", (), (Racer("a", op), Racer("a", op)))
    with pytest.raises(ValueError, match="unique"):
        Contest("echo", (), (Racer("a", op),), followers=(Racer("a", op),))
    assert Contest("one", [BAR], [Racer("a", op)], followers=[Racer("b", op)]).width == 1


def test_followers_come_after_every_racer() -> None:
    run = simulate_contest(BY_NAME["extinguish_then_relight"].contest(), plugin=LANTERN, effect_order=range(24)[::-1])
    (after,) = run.followers
    last_racer_done = max(run.history.by_id(r.calls[0].call_id).completed_at for r in run.racers)
    assert run.history.by_id(after.calls[0].call_id).invoked_at > last_racer_done
    assert after.label == "lit"  # the extinguish took effect last: every racing light was refused before it
    assert run.record("relight-after") is after


def test_documents_split_by_partition_and_strays_are_named() -> None:
    stored = {"venues/bar": {"x": 1}, "elsewhere/doc": {"y": 2}}
    found, strays = split_documents(LANTERN, stored, ["project"])
    assert found == {"project": {"venues/bar": {"x": 1}}}
    assert strays == ["elsewhere/doc"]
    assert split_documents(LANTERN, {}, ["project"]) == ({"project": {}}, [])


# --- racing on a fake implementation (no Firestore) ----------------------------------------------------------


class FakeError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _fake_system() -> tuple[LanternSystem, dict[str, int]]:
    """A lantern whose light answers by lantern id: `flaky` is unavailable once, `down` always, `crash` raises a
    foreign exception, `twice` reads the clock twice, anything else lights at once. It counts calls per id."""
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def light_lantern(*, lantern_id: str, clock: Any, attempt_log: Any, **_: Any) -> Any:
        with lock:
            calls[lantern_id] = calls.get(lantern_id, 0) + 1
            number = calls[lantern_id]
        now = clock()
        attempt_log.attempts += 1
        if lantern_id == "twice":
            clock()
        if lantern_id == "crash":
            raise RuntimeError("not a lantern answer")
        if lantern_id == "down" or (lantern_id == "flaky" and number == 1):
            raise FakeError("lantern_unavailable")
        return SimpleNamespace(to_json=lambda: {"outcome": "lit", "lanternId": lantern_id, "at": now.isoformat()})

    api = ModuleType("fake_lantern")
    api.light_lantern, api.LanternError = light_lantern, FakeError
    return LanternSystem.of("fake_lantern", api), calls


def _lights(*lantern_ids: str) -> list[Racer]:
    return [Racer(f"racer-{x}", Light(f"u-{x}", x, "bar", *AT_BAR, now=T0)) for x in lantern_ids]


def test_indefinite_answers_retry_the_whole_call_at_most_twice() -> None:
    system, calls = _fake_system()
    racers = _lights("ok", "flaky", "down", "crash")
    records, history, hung = race_callers(LANTERN, system, object(), racers)
    assert hung == ()
    by_name = {record.racer.name: record for record in records}
    assert calls == {"ok": 1, "flaky": 2, "down": 3, "crash": 3}
    assert [by_name[f"racer-{x}"].label for x in ("ok", "flaky", "down", "crash")] == [
        "lit", "lit", "lantern_unavailable", "transport:RuntimeError"
    ]
    assert by_name["racer-flaky"].retries == 1 and by_name["racer-flaky"].lost_an_answer
    assert not by_name["racer-ok"].lost_an_answer
    # each racer's calls are its calls in the history, in order, with the history's outcomes
    assert len(history.calls) == 9
    for record in records:
        recorded = sorted((c for c in history.calls if c.caller == record.racer.name), key=lambda c: c.id)
        assert [c.id for c in recorded] == [call.call_id for call in record.calls]
        assert [c.outcome for c in recorded] == [call.outcome for call in record.calls]
        assert all(call.transaction_attempts == 1 and call.clock_reads == 1 for call in record.calls)


def test_foreign_exceptions_and_extra_clock_reads_are_problems() -> None:
    system, _calls = _fake_system()
    records, _history, _hung = race_callers(LANTERN, system, object(), _lights("ok", "crash", "twice"), max_retries=0)
    problems = call_problems(records, LANTERN)
    assert problems == [
        crash("racer-crash (call 1): raised RuntimeError: not a lantern answer (only the system's error may escape)"),
        contract("racer-twice (call 1): read the clock 2 times (1 required)"),
    ]


def test_a_log_handed_in_is_the_one_the_call_fills() -> None:
    system, _calls = _fake_system()
    logs = [SimpleNamespace(attempts=0, aborts=0, looks=0) for _ in range(2)]
    records, _history, _hung = race_callers(
        LANTERN, system, object(), _lights("ok", "flaky"), new_log=lambda index, attempt: logs[index]
    )
    assert [log.attempts for log in logs] == [1, 2]  # flaky's retry got the same log: it counts both calls
    assert [call.transaction_attempts for call in records[1].calls] == [1, 2]


# --- the scenario catalogue --------------------------------------------------------------------------------


def test_catalogue_covers_the_seed_races_and_the_concurrent_variants() -> None:
    assert set(BY_NAME) == {
        "double_extinguish",
        "extinguish_then_relight",
        "relight_old_venue_deleted",
        "lights_24_at_one_venue",
        "read_racing_extinguish",
        "venue_deleted_during_relight",
        "venue_created_during_lights",
        "scheduled_activation_repeated",
    }
    assert {v.scenario for v in VARIANTS if v.concurrent} <= set(BY_NAME)
    for name in ("double_extinguish", "extinguish_then_relight", "relight_old_venue_deleted", "lights_24_at_one_venue"):
        assert BY_NAME[name].contest().width == WIDTH == 24, name
    assert BY_NAME["read_racing_extinguish"].contest().width >= 12
    # the races of the venue administration and the scheduled door: modest widths (races.py's docstring)
    for name in ("venue_deleted_during_relight", "venue_created_during_lights", "scheduled_activation_repeated"):
        assert 8 <= BY_NAME[name].contest().width <= 12, name


class _FirestoreReached(Exception):
    pass


class _NoFirestore:
    def __getattr__(self, name: str) -> Any:
        raise _FirestoreReached("input validation and the clock come before any Firestore use")


def _refuse_clock() -> Any:
    raise RuntimeError("no clock here")  # the reference answers lantern_unavailable after validating inputs


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_every_racing_call_passes_input_validation(scenario: LanternScenario) -> None:
    for racer in scenario.contest().racers:
        if LANTERN.function_of(racer.op) in LANTERN.implementations.clockless:
            # a venue call reads no clock: past its input validation it goes to Firestore
            with pytest.raises(_FirestoreReached):
                LANTERN.answer(LANTERN.reference, _NoFirestore(), racer.op, _refuse_clock)
            continue
        answer = LANTERN.answer(LANTERN.reference, _NoFirestore(), racer.op, _refuse_clock)
        assert answer == "lantern_unavailable", (racer.name, answer)  # not invalid_lantern_input


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_setup_reaches_its_state_without_an_error_answer(scenario: LanternScenario) -> None:
    state = LANTERN.initial_state()
    for op in scenario.contest().setup:
        state, result = step(state, op)
        assert result.ok, (op, result.code)
    assert structural_problems(simulate_contest(scenario.contest(), plugin=LANTERN, effect_order=None)) == []


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_model_answers_keep_the_promise_in_every_order(scenario: LanternScenario) -> None:
    contest = scenario.contest()
    worst = 0
    for effect, invoked in orders(contest.width):
        run = simulate_contest(contest, plugin=LANTERN, effect_order=effect, invocation_order=invoked)
        where = f"effect {effect}, invoked {invoked}"
        assert run.verdict.status == "ok", f"{where}\n{run.verdict.explain()}"
        assert structural_problems(run) == [], where
        assert scenario.promise(run) == [], where
        worst = max(worst, run.verdict.steps)
    assert worst < STEP_CEILING, f"{scenario.name}: the checker needed {worst} steps in its worst order"


# --- broken races are caught -------------------------------------------------------------------------------


def _with_outcomes(run: Any, outcomes: dict[str, Any]) -> Any:
    """The run with some racers' final answers replaced (as a broken implementation would have answered)."""
    calls = tuple(
        attrs.evolve(call, outcome=Definite(outcomes[call.caller])) if call.caller in outcomes else call
        for call in run.history.calls
    )
    history = History(calls, run.history.final_documents, system=run.history.system)
    records = tuple(
        RacerRecord(r.racer, (attrs.evolve(r.calls[0], outcome=Definite(outcomes[r.racer.name])),))
        if r.racer.name in outcomes else r
        for r in run.racers
    )
    verdict, seconds = judge(LANTERN, history, run.initial_state, run.final_documents)
    return attrs.evolve(run, history=history, racers=records, verdict=verdict, checker_seconds=seconds)


def _narrow(contest: Contest, width: int) -> Contest:
    return attrs.evolve(contest, racers=contest.racers[:width])


SECOND_WINNER = {"outcome": "extinguished", "lanternId": "lan-1"}


def test_two_extinguished_answers_break_the_promise_and_the_checker() -> None:
    scenario = BY_NAME["double_extinguish"]
    run = simulate_contest(_narrow(scenario.contest(), 8), plugin=LANTERN)
    broken = _with_outcomes(run, {run.racers[1].racer.name: SECOND_WINNER})
    assert "2 racers answered extinguished, exactly one expected" in scenario.promise(broken)
    assert broken.verdict.status == "illegal"
    assert "owner-01" in broken.verdict.explain()


def test_at_full_width_a_broken_double_extinguish_is_illegal_for_the_checker_too() -> None:
    """After the first extinguished answer, 22 lantern_not_active answers follow; error answers of the lantern
    commute (`commutes_when_read_only`), so the checker places them greedily and proves in a few steps that
    nothing explains a second winner, or a drifted counter. The promise and INV-3 say so as well."""
    scenario = BY_NAME["double_extinguish"]
    run = simulate_contest(scenario.contest(), plugin=LANTERN)
    broken = _with_outcomes(run, {run.racers[1].racer.name: SECOND_WINNER})
    assert broken.verdict.status == "illegal" and broken.verdict.steps < 10_000
    assert "2 racers answered extinguished, exactly one expected" in scenario.promise(broken)

    drifted, result = step(run.verdict.final_state, InjectFault(FaultKind.COUNTER_DRIFT, "bar"))  # #5's 2nd decrement
    assert result.wrote
    final = {"project": documents(drifted)}
    verdict, _seconds = judge(LANTERN, run.history.with_final_documents(final), run.initial_state, final)
    assert verdict.status == "illegal"
    drift = attrs.evolve(run, final_documents=final, verdict=verdict)
    assert [p.split(" ")[0] for p in structural_problems(drift)] == ["INV-3"]
    assert "venues/bar: activeLanternCount is 0, expected 1" in scenario.promise(drift)


def test_a_drifted_counter_is_illegal_for_the_checker_at_a_width_it_decides() -> None:
    run = simulate_contest(_narrow(BY_NAME["double_extinguish"].contest(), 8), plugin=LANTERN)
    drifted, _result = step(run.verdict.final_state, InjectFault(FaultKind.COUNTER_DRIFT, "bar"))
    final = {"project": documents(drifted)}
    verdict, _seconds = judge(LANTERN, run.history.with_final_documents(final), run.initial_state, final)
    assert verdict.status == "illegal"
    assert "activeLanternCount" in verdict.explain()


def test_an_aborted_light_breaks_the_hotspot_promise() -> None:
    scenario = BY_NAME["lights_24_at_one_venue"]
    run = simulate_contest(scenario.contest(), plugin=LANTERN)
    first = run.racers[0]
    contended = attrs.evolve(first, calls=(attrs.evolve(first.calls[0], transaction_attempts=3, aborts=2),))
    broken = attrs.evolve(run, racers=(contended, *run.racers[1:]))
    assert scenario.promise(broken) == [
        "user-00: 3 transaction attempts, 2 aborted (venue contention: B1 promises one attempt and no abort)"
    ]


def _aborted_first_light_with_wire_faults(faults: tuple[WireFault, ...]) -> tuple[LanternScenario, Any]:
    """24 lights where user-00's call took 3 attempts, 2 aborted, and its history call met `faults`."""
    scenario = BY_NAME["lights_24_at_one_venue"]
    run = simulate_contest(scenario.contest(), plugin=LANTERN)
    first = run.racers[0]
    contended = attrs.evolve(first, calls=(attrs.evolve(first.calls[0], transaction_attempts=3, aborts=2),))
    hit = first.calls[0].call_id
    calls = tuple(attrs.evolve(c, wire_faults=faults) if c.id == hit else c for c in run.history.calls)
    history = History(calls, run.history.final_documents, system=run.history.system)
    return scenario, attrs.evolve(run, racers=(contended, *run.racers[1:]), history=history)


def test_a_light_whose_answer_the_wire_lost_is_excused_from_the_hotspot_promise() -> None:
    """A lost read or commit answer makes the attempt (or the whole call) again: the wire's doing, not the venue's."""
    for fault in (WireFault("fail-response", "Commit", True, False), WireFault("cut-stream", "BatchGetDocuments",
                                                                               True, False)):
        scenario, run = _aborted_first_light_with_wire_faults((fault,))
        assert scenario.promise(run) == [], fault


@pytest.mark.parametrize(
    "faults",
    [
        (WireFault("delay", "Commit", True, True),),
        (WireFault("reject", "BeginTransaction", False, True),),
        (WireFault("reject", "BeginTransaction", False, True), WireFault("delay", "Commit", True, True)),
        (WireFault.from_label("fail-response Commit"),),  # an older file's label: not known to have lost one
    ],
    ids=["delay Commit", "reject BeginTransaction", "both", "label only"],
)
def test_a_light_the_wire_only_delayed_or_refused_is_held_to_the_hotspot_promise(faults) -> None:
    """A delayed commit still answers and a refused BeginTransaction is retried by the client below the
    transaction: neither explains aborted attempts, so they are the venue's contention B1 rules out."""
    scenario, run = _aborted_first_light_with_wire_faults(faults)
    assert scenario.promise(run) == [
        "user-00: 3 transaction attempts, 2 aborted (venue contention: B1 promises one attempt and no abort)"
    ]


def test_a_ghost_venue_breaks_the_relight_promise() -> None:
    scenario = BY_NAME["relight_old_venue_deleted"]
    run = simulate_contest(scenario.contest(), plugin=LANTERN)
    docs = dict(run.final_documents["project"])
    docs["venues/bar"] = {"activeLanternCount": -1}  # what the rejected C1 upsert leaves
    broken = attrs.evolve(run, final_documents={"project": docs})
    assert any(p.startswith("venues/bar was recreated") for p in scenario.promise(broken))
    assert any(p.startswith("SHAPE venues/bar") for p in structural_problems(broken))


# --- result documents, counterexamples, histories ----------------------------------------------------------


def test_the_result_document_has_what_the_report_reads(tmp_path: Path) -> None:
    run = simulate_contest(BY_NAME["extinguish_then_relight"].contest(), plugin=LANTERN)
    result = contest_result(run, repeat=3, problems=["INV-9 x: y"], promise_problems=["p"])
    assert result.scenario == "lantern_extinguish_then_relight" and result.width == WIDTH
    assert result.callers == result.definite_callers == WIDTH and result.definite_share == 1.0
    assert sum(result.outcomes.values()) == WIDTH  # the racers' answers; the follower's call is counted below
    assert result.calls == result.attempts == WIDTH + 1 and result.aborts == 0 and result.max_attempts == 1
    assert result.problems == (contract("INV-9 x: y"),) and result.promise_problems == (contract("p"),)
    path = save_result(result, run, tmp_path)
    assert path.name == "lantern_extinguish_then_relight-3.json"
    data = json.loads(path.read_text())
    for key in ("scenario", "repeat", "width", "outcomes", "first_outcomes", "definite_callers", "definite_share",
                "whole_call_retries", "attempts", "aborts", "max_attempts", "verdict", "checker_ms", "checker_steps",
                "race_seconds", "total_seconds", "problems", "promise_problems", "explanation", "counterexample",
                "lock_timeouts", "history", "callerAttempts", "afterAttempts", "setup", "racers", "followers",
                "facts"):
        assert key in data, key
    assert data["problems"] == ["INV-9 x: y"] and data["problem_kinds"] == ["contract"]  # kinds beside the texts
    assert data["promise_problems"] == ["p"] and data["promise_problem_kinds"] == ["contract"]
    assert data["format"] == RESULT_FORMAT and data["system"] == "lantern"
    assert data["implementation"] == "reference.lantern"
    assert "setupHeader" not in data  # the lantern's operations need no header
    assert LANTERN.ops_from_json({}, data["setup"]) == list(run.contest.setup)
    assert [entry["caller"] for entry in data["callerAttempts"]] == [r.racer.name for r in run.racers]
    assert [entry["caller"] for entry in data["afterAttempts"]] == ["relight-after"]
    assert History.from_json(data["history"]) == run.history
    assert recheck(path).status == "ok"


def test_a_system_with_an_operation_header_keeps_it_beside_the_setup(tmp_path: Path) -> None:
    """The runner is system-neutral: a journal contest (its operations name commands from a header)."""
    ref = CommandRef.from_inputs(
        environment="test", caller_scope={"kind": "internal_system", "value": "contest"},
        command_id="0f8fad5b-d9cb-469f-a165-70867728950e", command_type="contest_command",
        endpoint_schema_version=1, payload={"n": 1},
    )
    holders = ["7c9e6679-7425-40de-944b-e07fc1f90ae7", "16fd2706-8baf-433b-82eb-8c7fada847da"]
    contest = Contest("first_acquire", (Register(ref, T0),),
                      [Racer(f"holder-{i}", Acquire(ref, h, T0 + timedelta(seconds=1))) for i, h in enumerate(holders)])
    run = simulate_contest(contest, plugin=JOURNAL, effect_order=[1, 0])
    assert run.verdict.ok and run.name == "journal_first_acquire"
    document = result_document(contest_result(run), run)
    assert document["system"] == "journal" and set(document["setupHeader"]) == {"commands"}
    assert JOURNAL.ops_from_json(document["setupHeader"], document["setup"]) == [Register(ref, T0)]
    saved = save_counterexample(run, tmp_path)
    assert recheck(saved).status == "ok"


def test_a_counterexample_reads_back_and_checks_the_same(tmp_path: Path) -> None:
    scenario = BY_NAME["double_extinguish"]
    run = simulate_contest(_narrow(scenario.contest(), 8), plugin=LANTERN)
    broken = _with_outcomes(run, {run.racers[5].racer.name: SECOND_WINNER})
    path = save_counterexample(broken, tmp_path)
    assert path.name.startswith("race-lantern_double_extinguish-") and path.suffix == ".json"
    assert save_counterexample(broken, tmp_path) == path  # one history, one file
    data = json.loads(path.read_text())
    assert data["format"] == COUNTEREXAMPLE_FORMAT and data["verdict"] == "illegal"
    assert (data["system"], data["implementation"]) == ("lantern", "reference.lantern")
    plugin, history, initial = load_saved(path)
    assert plugin is LANTERN and history == broken.history and initial == broken.initial_state
    assert recheck(path).status == "illegal"


def test_lantern_histories_round_trip_through_json() -> None:
    """Every kind of call and outcome: a definite output, an error code, a lost answer, a call that never
    returned; final documents with timestamps, floats and nulls."""
    setup = BY_NAME["read_racing_extinguish"].contest()
    initial = setup_state(LANTERN, setup.setup)
    later = T0 + timedelta(hours=2, seconds=1)
    planned = [
        Planned("reader", setup.racers[0].op, 0, 10, 5),
        Planned("owner", Extinguish("alice", "lan-1", now=later), 1, 12, 6),
        Planned("owner", Extinguish("alice", "lan-1", now=later), 13, 20, 14),
        Planned("lost", Light("carol", "lan-3", "bar", *AT_BAR, now=later + US), 2, 9, 3, lost="lantern_unavailable"),
        Planned("gone", Extinguish("bob", "lan-2", now=later), 4, None, 4, lost="no_return", applies=False),
    ]
    history, _state = simulate(planned, plugin=LANTERN, initial_state=initial)
    assert {type(c.outcome) for c in history.calls} == {Definite, Indefinite}
    again = History.from_json(json.loads(json.dumps(history.to_json())))
    assert again == history and again.system == "lantern"
    assert again.final_documents == history.final_documents
    verdict, _seconds = judge(LANTERN, again, initial, again.final_documents)
    assert verdict.ok, verdict.explain()


def test_a_run_record_of_a_racer_that_never_returned_is_indefinite() -> None:
    record = RacerRecord(Racer("r", Extinguish("a", "l", now=T0)), (CallRecord(0, Indefinite("no_return")),))
    assert not record.definite and record.label == "no_return"
    assert call_problems([record], LANTERN) == []  # its clock reads are unknown, not wrong
    history = History((Call(0, "r", record.racer.op, 0, None, Indefinite("no_return")),), None, system="lantern")
    assert History.from_json(history.to_json()) == history


def test_every_main_call_starts_after_every_first_attempt_has_ended() -> None:
    """The fair start (issue 22): a racer's rejected first attempt returns at once, and without a second
    barrier its retry, and the racers without a first attempt, re-enter while others still wait. Here the
    first attempt waits (up to 2 s) for a main call to begin: none may begin before it has ended."""
    events: list[tuple[str, str]] = []
    lock = threading.Lock()
    main_began = threading.Event()

    def light_lantern(*, lantern_id: str, clock: Any, attempt_log: Any, **_: Any) -> Any:
        now = clock()
        first = lantern_id.startswith("first-")
        with lock:
            events.append(("first" if first else "main", "begin"))
        if first:
            main_began.wait(timeout=2.0)  # set at once without the barrier; never while it holds
            with lock:
                events.append(("first", "end"))
            raise FakeError("lantern_unavailable")  # indefinite: the racer retries with its main call
        main_began.set()
        return SimpleNamespace(to_json=lambda: {"outcome": "lit", "lanternId": lantern_id, "at": now.isoformat()})

    api = ModuleType("fake_lantern")
    api.light_lantern, api.LanternError = light_lantern, FakeError
    system = LanternSystem.of("fake_lantern", api)
    first, plain = _lights("a", "b")
    racers = [attrs.evolve(first, first_op=attrs.evolve(first.op, lantern_id="first-a")), plain]
    records, _history, hung = race_callers(LANTERN, system, object(), racers)
    assert hung == ()
    assert [record.label for record in records] == ["lit", "lit"]
    first_end = events.index(("first", "end"))
    assert all(index > first_end for index, event in enumerate(events) if event == ("main", "begin")), events
