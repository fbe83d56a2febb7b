"""The journal's race scenarios and the pure parts of the harness they run through (fencecheck.runners.contest and the
journal plug-in's structural invariants), without the emulator.

- the catalogue covers every concurrent scenario of seeds 000/001 at the width the seeds ask for;
- every op is a valid call (the reference's own input validation accepts the call the runner makes);
- the model predicts, in many orders, the outcomes each seed promises, and the checker accepts them;
- the promises and the structural invariants (the plug-in's `contest_problems` hook) do fail on broken races;
- saved contests read back and check the same.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

import attrs
import pytest

from fencecheck.checker.history import Definite, History
from fencecheck.emulator.firestore_io import Stored
from fencecheck.runners.contest import ContestRun, Ids, Racer, RacerRecord, answer_label, race_callers
from fencecheck.runners.contest import judge as judge_contest
from fencecheck.runners.contest_results import (
    contest_from_json,
    contest_json,
    load_saved,
    recheck,
    save_counterexample,
)
from fencecheck.runners.contest_simulation import simulate_in_turn
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE
from fencecheck.systems.journal.structure import contest_problems, project_problems, structural_problems
from model.journal import Acquire, InjectFault, JournalState, Register, documents_for, step
from reference import CommandJournalError
from reference.journal.identity import audit_path, lifecycle_path, root_path
from tests.systems.journal.races import BY_NAME, SCENARIOS, T0, WIDTH, Caller, RacePlan, Scenario, key_of_run

SEED_SCENARIOS = {
    # seed 000, "Existing hosted emulator file"
    "distinct_holder_first_acquire",
    "same_holder_lost_response",
    "expired_takeover",
    "complete_versus_fail",
    "distinct_commitments",
    "terminal_retries_and_acquires",
    "preseeded_next_audit",
    "commit_failure_takeover",
    # seed 001, "Demo-only emulator"
    "identical_registrations",
    "two_payload_registration",
    "preseeded_registration_audit",
    "commit_failure_registration",
}
ids_of = [s.name for s in SCENARIOS]


def simulate_plan(plan: RacePlan, order: list[int] | None = None, *, retry_at: int | None = None) -> ContestRun:
    return simulate_in_turn(plan.contest(), plugin=JOURNAL, order=order, retry_at=retry_at)


def judge(run: ContestRun) -> tuple[Any, float]:
    return judge_contest(JOURNAL, run.history, run.initial_state, run.final_documents)


def invoke(system: Any, db: Any, op: Any, clock: Any) -> Any:
    return JOURNAL.invoke(system, db, op, clock)


def orders(width: int, count: int = 12) -> list[tuple[list[int] | None, int]]:
    """The listed order, reversed, and shuffles; each with a different delay for whole-call retries."""
    out: list[tuple[list[int] | None, int]] = [(None, 0), (list(reversed(range(width))), 5)]
    rng = random.Random(width)
    for k in range(count):
        order = list(range(width))
        rng.shuffle(order)
        out.append((order, k % 7))
    return out


def test_catalogue_covers_every_seed_race_at_its_width() -> None:
    assert set(BY_NAME) == SEED_SCENARIOS
    assert len(ids_of) == len(set(ids_of))
    for scenario in SCENARIOS:
        plan = scenario.plan(Ids(1))
        assert plan.width == scenario.width
        if scenario.seed == "000":
            assert plan.width == WIDTH == 24, scenario.name
        else:
            assert plan.width >= 20, scenario.name


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_plans_are_fresh_per_seed_and_deterministic(scenario: Scenario) -> None:
    assert scenario.plan(Ids(7)) == scenario.plan(Ids(7))
    first, second = scenario.plan(Ids(7)), scenario.plan(Ids(8))
    assert first.command.command_id != second.command.command_id
    assert first.key_hash != second.key_hash


class _NoFirestore:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError("input validation must come before any Firestore use")


def _refuse_clock() -> Any:
    raise RuntimeError("no clock here")  # the reference answers journal_unavailable after validating inputs


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_every_call_of_a_scenario_passes_input_validation(scenario: Scenario) -> None:
    plan = scenario.plan(Ids(3))
    ops = [op for op in plan.setup if not isinstance(op, InjectFault)]
    ops += [c.op for c in (*plan.callers, *plan.after)]
    for op in ops:
        with pytest.raises(CommandJournalError) as caught:
            invoke(REFERENCE, _NoFirestore(), op, _refuse_clock)
        assert caught.value.code == "journal_unavailable", op  # not invalid_command_input
        assert op.command.key_hash == plan.key_hash


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_setup_reaches_its_state_without_errors(scenario: Scenario) -> None:
    plan = scenario.plan(Ids(4))
    state = JournalState.empty()
    for op in plan.setup:
        state, result = step(state, op)
        assert result.code is None, (op, result)
        assert result.wrote or isinstance(op, InjectFault), (op, result)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_model_keeps_the_seed_promise_in_every_order(scenario: Scenario) -> None:
    plan = scenario.plan(Ids(5))
    for order, delay in orders(plan.width):
        run = simulate_plan(plan, order, retry_at=delay)
        assert run.verdict.ok, run.verdict.explain()
        assert scenario.promise(run) == [], (order, scenario.promise(run))
        assert all(r.definite for r in run.racers)


EXPECTED_DISTRIBUTIONS = {
    "distinct_holder_first_acquire": [{"lease_acquired@1": 1, "lease_busy": 23}],
    "same_holder_lost_response": [{"lease_acquired@1": 24}],
    "expired_takeover": [{"lease_acquired@2": 2, "lease_busy": 22}, {"lease_acquired@2": 1, "lease_busy": 23}],
    "complete_versus_fail": [
        {"terminal_succeeded": 12, "terminal_conflict": 12},
        {"terminal_failed_final": 12, "terminal_conflict": 12},
    ],
    "distinct_commitments": [{"terminal_succeeded": 1, "terminal_conflict": 23}],
    "terminal_retries_and_acquires": [{"terminal_succeeded": 16, "terminal_conflict": 4, "registered_existing": 4}],
    "preseeded_next_audit": [{"unrecognized_record": 24}],
    "commit_failure_takeover": [{"lease_acquired@2": 1, "lease_busy": 23}],
    "identical_registrations": [{"registered_new": 1, "registered_existing": 23}],
    "two_payload_registration": [{"registered_new": 1, "registered_existing": 11, "command_conflict": 12}],
    "preseeded_registration_audit": [{"unrecognized_record": 24}],
    "commit_failure_registration": [{"registered_new": 1, "registered_existing": 23}],
}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids_of)
def test_model_predicts_the_seed_outcome_distribution(scenario: Scenario) -> None:
    plan = scenario.plan(Ids(6))
    seen = set()
    for order, delay in orders(plan.width, 30):
        run = simulate_plan(plan, order, retry_at=delay)
        distribution = dict(Counter(answer_label(r.final) for r in run.racers))
        assert distribution in EXPECTED_DISTRIBUTIONS[scenario.name], (order, distribution)
        seen.add(tuple(sorted(distribution.items())))
    if scenario.name in ("complete_versus_fail", "expired_takeover"):
        assert len(seen) == 2  # both sides can win (and the old holder can retake its own lease)


@pytest.mark.parametrize("name", ["commit_failure_takeover", "commit_failure_registration"])
def test_commit_failure_first_attempts_are_indefinite_and_change_nothing(name: str) -> None:
    plan = BY_NAME[name].plan(Ids(9))
    failing = [c for c in plan.callers if c.commit_failure_first]
    assert len(failing) == plan.width // 2
    run = simulate_plan(plan, retry_at=3)
    for record in run.racers:
        if record.racer.first_op is not None:
            assert record.calls[0].op.commit_fails
            assert not record.calls[0].outcome.definite
            assert not record.calls[1].op.commit_fails  # the retry is the plain call
            assert record.definite
    assert run.history.calls[0].op.commit_fails  # the first call of the listed order fails its commit


# --- the promises and the checker catch broken races ---------------------------------------------------


def _replace_answer(run: ContestRun, name: str, observed: Any) -> ContestRun:
    racers = []
    calls = list(run.history.calls)
    for record in run.racers:
        if record.racer.name == name:
            last = record.calls[-1]
            new_last = attrs.evolve(last, outcome=Definite(observed))
            record = RacerRecord(record.racer, (*record.calls[:-1], new_last))
            calls = [attrs.evolve(c, outcome=Definite(observed)) if c.id == last.call_id else c for c in calls]
        racers.append(record)
    history = History(tuple(calls), run.history.final_documents, system=run.history.system)
    return attrs.evolve(run, racers=tuple(racers), history=history)


def test_a_second_lease_holder_breaks_the_promise_and_the_checker() -> None:
    scenario = BY_NAME["distinct_holder_first_acquire"]
    run = simulate_plan(scenario.plan(Ids(11)))
    winner = next(r for r in run.racers if answer_label(r.final) == "lease_acquired@1")
    loser = next(r for r in run.racers if answer_label(r.final) == "lease_busy")
    broken = _replace_answer(run, loser.racer.name, winner.final.observed)
    assert any("lease_busy" in problem for problem in scenario.promise(broken))
    verdict, _ = judge(broken)
    assert verdict.status == "illegal"
    assert f"call {loser.calls[-1].call_id}" in verdict.explain()


def test_a_takeover_without_a_fence_increment_breaks_the_checker() -> None:
    scenario = BY_NAME["expired_takeover"]
    run = simulate_plan(scenario.plan(Ids(12)))
    h = key_of_run(run)
    docs = {path: dict(doc) for path, doc in run.final_documents[h].items()}
    docs[lifecycle_path(h)]["fenceEpoch"] = 1
    docs[audit_path(h, 3)]["fenceEpoch"] = 1
    broken = attrs.evolve(run, final_documents={h: docs}, history=run.history.with_final_documents({h: docs}))
    assert scenario.promise(broken)
    verdict, _ = judge(broken)
    assert verdict.status == "illegal"
    assert "fenceEpoch" in verdict.explain()


def test_two_registered_new_answers_break_the_promise_and_the_checker() -> None:
    scenario = BY_NAME["identical_registrations"]
    run = simulate_plan(scenario.plan(Ids(13)))
    existing = next(r for r in run.racers if answer_label(r.final) == "registered_existing")
    new = next(r for r in run.racers if answer_label(r.final) == "registered_new")
    broken = _replace_answer(run, existing.racer.name, new.final.observed)
    assert scenario.promise(broken)
    assert judge(broken)[0].status == "illegal"


# --- structural invariants ---------------------------------------------------------------------------------


def _stored(run: ContestRun, state: Any = None, start: int = 0) -> dict[str, Stored]:
    """Stored documents with update times: one commit per model write, in revision order."""
    h = key_of_run(run)
    docs = documents_for(run.initial_state if state is None else state, h)
    stamps: dict[str, tuple[int, int]] = {}
    for path in docs:
        if path == root_path(h) or path == audit_path(h, 1):
            stamps[path] = (100 + start, 0)
    for path, doc in docs.items():
        if path.startswith("auditEvents/") and doc["commandRevision"] > 1:
            stamps[path] = (100 + start + doc["commandRevision"], 0)
    if lifecycle_path(h) in docs:
        stamps[lifecycle_path(h)] = stamps[audit_path(h, docs[lifecycle_path(h)]["commandRevision"])]
    return {path: Stored(doc, stamps[path]) for path, doc in docs.items()}


def _final_state(run: ContestRun) -> Any:
    state = run.initial_state
    for record in run.racers:
        for call in record.calls:
            state, _ = step(state, call.op)
    return state


def test_structural_invariants_hold_for_a_modelled_takeover() -> None:
    run = simulate_plan(BY_NAME["expired_takeover"].plan(Ids(14)))
    h = key_of_run(run)
    before, after = _stored(run), _stored(run, _final_state(run))
    assert structural_problems(h, before, after, nested_paths=[lifecycle_path(h)], terminal_events=0) == []


def test_the_journal_plugin_checks_a_contest_s_stored_documents_from_the_whole_project() -> None:
    """The contest runner's hook (`SystemPlugin.contest_problems`): the journal's structural invariants on the
    contested key, read from whole-project snapshots (other keys' documents beside it are not its business),
    with the contest's expected terminal events."""
    assert JOURNAL.contest_problems is contest_problems
    plan = BY_NAME["complete_versus_fail"].plan(Ids(31))
    run = simulate_plan(plan)
    h = key_of_run(run)
    other = BY_NAME["complete_versus_fail"].plan(Ids(32)).command
    state, _result = step(JournalState.empty(), Register(other, T0))
    elsewhere = {path: Stored(doc, (50, 0)) for path, doc in documents_for(state, other.key_hash).items()}
    before, after = {**_stored(run), **elsewhere}, {**_stored(run, _final_state(run)), **elsewhere}
    contest = run.contest
    assert contest.facts == {"terminalEvents": 1}
    assert JOURNAL.contest_problems(run.initial_state, before, after, contest) == []
    # fewer than expected is an expectation the answers must imply (contest_expectations), more is structural
    assert JOURNAL.contest_expectations(run.initial_state, before, after, contest) == []
    assert JOURNAL.contest_expectations(run.initial_state, before, after,
                                        attrs.evolve(contest, facts={"terminalEvents": 2})) == [
        f"{h[:8]}: 1 terminal events stored, 2 expected"]
    assert JOURNAL.contest_problems(run.initial_state, before, after,
                                    attrs.evolve(contest, facts={"terminalEvents": 2})) == []
    assert f"{h[:8]}: 1 terminal events stored, at most 0 expected" in JOURNAL.contest_problems(
        run.initial_state, before, after, attrs.evolve(contest, facts={"terminalEvents": 0}))
    assert JOURNAL.contest_problems(run.initial_state, before, after, attrs.evolve(contest, facts={})) == []
    moved = {**after, root_path(h): Stored(after[root_path(h)].data, (999, 0))}
    assert any("rewritten with the same content" in p
               for p in JOURNAL.contest_problems(run.initial_state, before, moved, contest))
    nested = {**after, f"{root_path(h)}/lifecycle/two": Stored({}, (999, 0))}
    assert any("besides lifecycle/current" in p
               for p in JOURNAL.contest_problems(run.initial_state, before, nested, contest))


def test_structural_invariants_catch_broken_stores() -> None:
    run = simulate_plan(BY_NAME["complete_versus_fail"].plan(Ids(15)))
    h = key_of_run(run)
    before, after = _stored(run), _stored(run, _final_state(run))
    assert structural_problems(h, before, after, terminal_events=1) == []

    def problems(store: dict[str, Stored], **kwargs: Any) -> str:
        return "\n".join(structural_problems(h, before, store, **{"terminal_events": 1, **kwargs}))

    root = root_path(h)
    moved = {**after, root: Stored(after[root].data, (999, 0))}
    assert "rewritten with the same content" in problems(moved)
    assert "not written by one commit" in problems(moved)
    gap = {p: s for p, s in after.items() if p != audit_path(h, 2)}
    assert "are not 1..3" in problems(gap)
    lc = lifecycle_path(h)
    split = {**after, lc: Stored(after[lc].data, (555, 0))}
    assert "lifecycle and its revision-3 audit were not written by one commit" in problems(split)
    assert "0 terminal events stored, 1 expected" in problems(before)
    assert "besides lifecycle/current" in problems(after, nested_paths=[lc, f"checkoutRequests/{h}/lifecycle/two"])
    deleted = {p: s for p, s in after.items() if p != root}
    assert "deleted by the race" in problems(deleted)
    double = dict(after)
    second = audit_path(h, 4)
    double[second] = Stored({**after[audit_path(h, 3)].data, "commandRevision": 4}, (700, 0))
    double[lc] = Stored({**after[lc].data, "commandRevision": 4}, (700, 0))
    text = problems(double)
    assert "2 terminal events" in text and "is not the last" in text


def test_structural_invariants_freeze_a_corrupt_record() -> None:
    run = simulate_plan(BY_NAME["preseeded_next_audit"].plan(Ids(16)))
    h = key_of_run(run)
    before = {p: Stored(d, (100, 0)) for p, d in run.documents.items()}
    assert structural_problems(h, before, dict(before), corrupt=True) == []
    lc = lifecycle_path(h)
    changed = {**before, lc: Stored({**before[lc].data, "fenceEpoch": 2}, (101, 0))}
    assert "content changed by the race" in "\n".join(structural_problems(h, before, changed, corrupt=True))
    grown = {**before, audit_path(h, 4): Stored({}, (102, 0))}
    assert "created although the stored record is not valid" in "\n".join(
        structural_problems(h, before, grown, corrupt=True)
    )


# --- saving -------------------------------------------------------------------------------------------------


def test_contest_json_round_trips_faults_calls_first_attempts_and_facts() -> None:
    for scenario in SCENARIOS:
        contest = scenario.contest(Ids(17))
        back = contest_from_json(JOURNAL, contest_json(JOURNAL, contest), scenario=contest.scenario)
        assert (back.setup, back.racers, back.followers, back.facts) == (
            contest.setup, contest.racers, contest.followers, contest.facts)
    failing = BY_NAME["commit_failure_takeover"].contest(Ids(17))
    assert any(racer.first_op is not None and racer.first_op.commit_fails for racer in failing.racers)
    assert any(isinstance(op, InjectFault) for op in BY_NAME["preseeded_next_audit"].contest(Ids(17)).setup)


def test_counterexample_files_read_back_and_check_the_same(tmp_path: Any) -> None:
    scenario = BY_NAME["preseeded_next_audit"]
    run = simulate_plan(scenario.plan(Ids(18)))
    path = save_counterexample(run, tmp_path)
    assert path.name.startswith("race-journal_preseeded_next_audit-")
    plugin, history, initial = load_saved(path)
    assert plugin is JOURNAL
    assert initial == run.initial_state
    assert history == run.history
    assert recheck(path).status == "ok"
    broken = _replace_answer(run, run.racers[0].racer.name, "lease_rejected")
    verdict, _seconds = judge(broken)
    assert recheck(save_counterexample(attrs.evolve(broken, verdict=verdict), tmp_path)).status == "illegal"


def test_plans_reject_callers_on_other_keys_and_duplicate_names() -> None:
    plan = BY_NAME["distinct_holder_first_acquire"].plan(Ids(19))
    other = BY_NAME["distinct_holder_first_acquire"].plan(Ids(20))
    with pytest.raises(ValueError, match="another command key"):
        attrs.evolve(plan, callers=(*plan.callers, attrs.evolve(other.callers[0], name="stranger")))
    with pytest.raises(ValueError, match="unique"):
        attrs.evolve(plan, callers=(*plan.callers, plan.callers[0]))
    bad = Caller("x", attrs.evolve(plan.callers[0].op, commit_fails=True))
    with pytest.raises(ValueError, match="commit_failure_first"):
        attrs.evolve(plan, callers=(bad,))
    assert isinstance(plan, RacePlan) and isinstance(plan.callers[0].op, Acquire)
    assert plan.contest().racers[0] == Racer(plan.callers[0].name, plan.callers[0].op)


def test_ids_are_canonical_uuid4() -> None:
    pattern = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    ids = Ids(21)
    assert all(pattern.match(ids.uuid()) for _ in range(200))


def test_the_whole_project_read_back_names_every_document_outside_the_contested_keys() -> None:
    state = JournalState.empty()
    contested = BY_NAME["expired_takeover"].plan(Ids(21)).command
    other = BY_NAME["expired_takeover"].plan(Ids(22)).command  # registered in the prefix, never called
    for op in (Register(contested, T0), Register(other, T0)):
        state, _result = step(state, op)
    h, o = contested.key_hash, other.key_hash
    project = {path: Stored(doc, (1, 0)) for key in (h, o) for path, doc in documents_for(state, key).items()}
    judged = {h: set(documents_for(state, h))}
    assert project_problems(project, judged, state) == []

    changed = dict(project)
    changed["strays/x"] = Stored({"n": 1}, (2, 0))
    changed[f"{root_path(h)}/other/doc"] = Stored({"n": 1}, (2, 0))
    changed[lifecycle_path(o)] = Stored({"state": "leased"}, (2, 0))
    del changed[audit_path(o, 1)]
    problems = project_problems(changed, judged, state)
    assert problems == [
        f"checkoutRequests/{h[:8]}/other/doc: stored in a contested key's scope but none of its documents",
        f"strays/x: stored outside every command key (a stray write; the run only calls {h[:8]})",
        f"{audit_path(o, 1).replace(o, o[:8])}: the model's document of an uncalled key is missing",
        f"checkoutRequests/{o[:8]}/lifecycle/current: stored under a key no caller of the run called, and not the "
        f"model's there",
    ]


def test_a_foreign_implementations_own_coded_error_is_the_contracts_answer_in_the_race_runner() -> None:
    """An implementation raising its own exception class with a contract `.code` (tests/fakes/frozen_journal)
    answers that code in a race, as in the lockstep: not a transport failure, not an unexpected crash."""
    from fencecheck.systems.journal.plugin import ReferenceAPI
    from tests.fakes.frozen_journal import FrozenJournalError

    foreign = ReferenceAPI.from_module("tests.fakes.frozen_journal")
    op = BY_NAME["expired_takeover"].plan(Ids(5)).callers[0].op
    with pytest.raises(FrozenJournalError):  # the implementation's own class, not the reference's
        invoke(foreign, _NoFirestore(), op, _refuse_clock)
    # the contest runner (both systems' races)
    (record,), history, hung = race_callers(JOURNAL, foreign, _UnavailableFirestore(), [Racer("r", op)],
                                            max_retries=0)
    assert hung == () and record.calls[0].unexpected is None
    assert answer_label(record.final) == "journal_unavailable" and not record.definite
    assert history.calls[0].outcome == record.final


class _UnavailableFirestore:
    def __getattr__(self, name: str) -> Any:
        from google.api_core.exceptions import ServiceUnavailable

        raise ServiceUnavailable("no Firestore here")
