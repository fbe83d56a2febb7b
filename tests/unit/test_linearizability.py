"""The linearizability checker (fencecheck/checker/linearizability.py): fixtures, properties and edge cases.

Every "ok" verdict is re-validated independently by `assert_witness`: replaying the order it found through the
model gives every definite answer, respects real time, leaves out only indefinite calls and, when the
history carries them, predicts the stored documents.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fencecheck.checker.history import Call, Definite, History, Indefinite, Planned, Recorder, classifier, simulate
from fencecheck.checker.linearizability import FIRST_CAP, check, normalize_documents
from fencecheck.systems.journal.plugin import JOURNAL
from model.journal import (
    Acquire,
    CommandRef,
    Complete,
    Fail,
    JournalState,
    Register,
    documents_for,
    step,
)
from reference.journal.errors import CommandJournalError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "histories"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MS = 1_000_000

BASE = CommandRef(
    "test", "firebase_uid", "uid-alice", "0f8fad5b-d9cb-469f-a165-70867728950e", "create_checkout_session", 1, "{}"
)
OTHER = attrs.evolve(BASE, command_id="16fd2706-8baf-433b-82eb-8c7fada847da")
CONFLICT = attrs.evolve(BASE, payload='{"quantity":3}')  # same key as BASE, different payload
LEASES = (
    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "886313e1-3b8a-4372-9b90-0c9aee199e5d",
    "2c1b5a4e-7a1f-4c3e-9d6b-0f1e2d3c4b5a",
)
REFS = ("a" * 64, "b" * 64)
OFFSETS = (0, 0.5, 1, 2, 30, 59.999999, 60, 61, 62, 90, 121, 125, 200)


# --- helpers ---------------------------------------------------------------------------------------


def _restrict(state: JournalState, key_hash: str) -> JournalState:
    record = state.get(key_hash)
    return JournalState.empty() if record is None else JournalState.empty().with_record(key_hash, record)


def assert_witness(history: History, verdict, initial: JournalState | None = None) -> None:
    """Independently validate an ok verdict's linearization."""
    assert verdict.status == "ok", verdict.explain()
    initial = JournalState.empty() if initial is None else initial
    placed: set[int] = set()
    for key_hash, order in verdict.order.items():
        state = _restrict(initial, key_hash)
        for call in order:
            assert call.op.command.key_hash == key_hash
            assert call.id not in placed
            placed.add(call.id)
            state, result = step(state, call.op)
            if call.outcome.definite:
                assert result.matches(call.outcome.observed), (call, result)
        for earlier, later in itertools.combinations(order, 2):
            # A definite `later` may not have completed before `earlier` was invoked (an indefinite call has no
            # upper bound: a write abandoned by the client can still land after its error).
            if later.outcome.definite:
                assert later.completed_at >= earlier.invoked_at, (earlier.id, later.id)
        if history.final_documents and key_hash in history.final_documents:
            assert normalize_documents(documents_for(state, key_hash)) == normalize_documents(
                history.final_documents[key_hash]
            )
        partition = next(p for p in verdict.partitions if p.key_hash == key_hash)
        assert partition.final_state == state
        assert verdict.final_state.get(key_hash) == state.get(key_hash)
    for call in history.calls:
        if call.id not in placed:
            assert not call.outcome.definite, f"definite call {call.id} left out"


def _answer(result):
    return result.output if result.ok else result.code


ALTERNATIVE_ANSWERS = [
    "invalid_command_input",
    "command_not_registered",
    "command_conflict",
    "unrecognized_record",
    "lease_rejected",
    "terminal_conflict",
    "journal_unavailable",
    {"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"},
    {"journalSchemaVersion": 1, "outcome": "registered_existing", "state": "registered"},
    {"journalSchemaVersion": 1, "lifecycleSchemaVersion": 1, "outcome": "lease_busy", "state": "leased"},
    {"journalSchemaVersion": 1, "lifecycleSchemaVersion": 1, "outcome": "terminal_succeeded", "state": "succeeded"},
    {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "terminal_failed_final",
        "state": "failed_final",
    },
] + [
    {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "lease_acquired",
        "state": "leased",
        "fenceEpoch": fence,
        "leaseExpiresAt": {"seconds": 1_772_366_400 + offset, "nanoseconds": 0},
    }
    for fence in (1, 2, 3)
    for offset in (60, 61, 121)
]


# --- strategies ------------------------------------------------------------------------------------

commands = st.sampled_from([BASE, BASE, BASE, OTHER, CONFLICT])
leases = st.sampled_from(LEASES)
moments = st.sampled_from(OFFSETS).map(lambda s: T0 + timedelta(microseconds=round(s * 1_000_000)))
ops = st.one_of(
    st.builds(Register, commands, moments),
    st.builds(Acquire, commands, leases, moments),
    st.builds(Acquire, commands, leases, moments),
    st.builds(Complete, commands, leases, st.integers(1, 3), st.sampled_from(REFS), moments),
    st.builds(Fail, commands, leases, st.integers(1, 3), moments),
)
# Register first often enough for leases to happen.
op_lists = st.lists(ops, min_size=1, max_size=14).map(lambda xs: [Register(BASE, T0), *xs])


def sequential_history(op_list, *, with_documents: bool = True) -> tuple[History, JournalState]:
    """Run the model on the ops one at a time; call k occupies [10k, 10k + 5] ms; every answer definite."""
    state = JournalState.empty()
    calls = []
    for k, op in enumerate(op_list):
        state, result = step(state, op)
        calls.append(Call(k, f"worker-{k % 3}", op, 10 * k * MS, (10 * k + 5) * MS, Definite(_answer(result))))
    keys = {op.command.key_hash for op in op_list}
    final = {h: documents_for(state, h) for h in keys} if with_documents else None
    return History(calls, final, system="journal"), state


@st.composite
def concurrent_plans(draw):
    op_list = draw(op_lists)
    plans = []
    for k, op in enumerate(op_list):
        invoked = draw(st.integers(0, 40)) * MS + k
        duration = draw(st.integers(0, 25)) * MS
        returns = draw(st.booleans()) or draw(st.integers(0, 9)) > 0
        effect = invoked + draw(st.integers(0, duration if returns else 60 * MS))
        lost = draw(st.sampled_from([None, None, None, "journal_unavailable", "transport:OSError"]))
        if not returns:
            lost = "no_return"
        applies = True if lost is None else draw(st.booleans())
        plans.append(
            Planned(f"worker-{k % 4}", op, invoked, invoked + duration if returns else None, effect, lost, applies)
        )
    return plans


# --- fixtures --------------------------------------------------------------------------------------


def _load(path: Path) -> tuple[dict, History]:
    data = json.loads(path.read_text())
    return data, History.from_json(data["history"])


def test_fixture_inventory():
    names = {p.stem for p in FIXTURE_FILES}
    good = {n for n in names if n.startswith("good-")}
    bad = {n for n in names if n.startswith("bad-")}
    assert len(good) >= 6 and good | bad == names
    assert {
        "bad-double-fence-1-grant",
        "bad-stale-fence-completion-accepted",
        "bad-two-terminal-events",
        "bad-recovery-returned-new-fence",
        "bad-busy-leaked-fence",
        "bad-lost-registration",
        "bad-final-documents-second-terminal-audit",
    } <= bad
    indefinite = [
        c for p in FIXTURE_FILES if p.stem.startswith("good-") for c in _load(p)[1].calls if not c.outcome.definite
    ]
    assert len(indefinite) >= 4


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_fixture(path):
    data, history = _load(path)
    expect = data["expect"]
    assert data["description"]
    assert history.to_json() == data["history"]  # the fixture is in canonical form
    verdict = check(history)
    assert verdict.status == expect["status"], verdict.explain()
    if expect["status"] == "ok":
        assert_witness(history, verdict)
        assert verdict.explanation is None
        assert verdict.explain().startswith("ok:")
        return
    explanation = verdict.explanation
    text = verdict.explain()
    assert text.startswith("illegal:")
    assert "Longest linearizable prefix" in text and "Timeline per caller" in text
    if expect["unplaceable"] == "final_documents":
        assert explanation.unplaceable is None
        assert explanation.document_differences
        assert "First call that cannot be placed: the final-documents read" in text
        for difference in explanation.document_differences:
            assert difference in text
    else:
        call = history.by_id(expect["unplaceable"])
        assert explanation.unplaceable_id == call.id
        assert f"First call that cannot be placed: call {call.id} ({call.caller})" in text
        assert "<-- CANNOT BE PLACED" in text
        assert explanation.model_result is not None
        assert not explanation.model_result.matches(call.outcome.observed)
    # The prefix is itself linearizable: replaying it gives every definite answer.
    state = JournalState.empty()
    for call, result in explanation.prefix:
        state, replayed = step(state, call.op)
        assert replayed == result
        if call.outcome.definite:
            assert result.matches(call.outcome.observed)
    assert state == explanation.prefix_state


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_fixture_verdict_without_read_only_commutation(path):
    data, history = _load(path)
    verdict = check(history, commute_read_only=False)
    assert verdict.status == data["expect"]["status"]
    if verdict.ok:
        assert_witness(history, verdict)


# --- properties ------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(op_lists, st.booleans())
def test_sequential_model_history_is_ok(op_list, with_documents):
    history, _state = sequential_history(op_list, with_documents=with_documents)
    verdict = check(history)
    assert_witness(history, verdict)
    # Non-overlapping calls leave exactly one order: the real-time one.
    assert sorted(c.id for order in verdict.order.values() for c in order) == [c.id for c in history.calls]
    for order in verdict.order.values():
        assert [c.id for c in order] == sorted(c.id for c in order)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_lists, st.booleans(), st.data())
def test_sequential_history_with_one_answer_mutated_is_illegal_at_that_call(op_list, with_documents, data):
    history, _state = sequential_history(op_list, with_documents=with_documents)
    victim = data.draw(st.sampled_from(history.calls))
    answer = data.draw(st.sampled_from(ALTERNATIVE_ANSWERS))
    assume(answer != victim.outcome.observed)
    mutated = History(
        [attrs.evolve(c, outcome=Definite(answer)) if c.id == victim.id else c for c in history.calls],
        history.final_documents, system="journal",
    )
    verdict = check(mutated)
    # Every call is definite and none overlap: the only order is the real-time one, and in it the victim's
    # model answer is its original one. So the history is illegal, and the victim is the first misfit.
    assert verdict.status == "illegal"
    assert verdict.explanation.unplaceable_id == victim.id
    assert f"call {victim.id} (" in verdict.explain()
    assert [c.id for c, _ in verdict.explanation.prefix] == [
        c.id for c in history.calls if c.id < victim.id and c.op.command.key_hash == victim.op.command.key_hash
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_lists, st.data())
def test_mutated_history_with_lost_answers_is_illegal_or_explained(op_list, data):
    history, _state = sequential_history(op_list)
    lost = data.draw(st.sets(st.sampled_from([c.id for c in history.calls])))
    calls = [attrs.evolve(c, outcome=Indefinite("journal_unavailable")) if c.id in lost else c for c in history.calls]
    lossy = History(calls, history.final_documents, system=history.system)
    assert_witness(lossy, check(lossy))  # losing answers never makes a history illegal
    definite = [c for c in calls if c.outcome.definite]
    assume(definite)
    victim = data.draw(st.sampled_from(definite))
    answer = data.draw(st.sampled_from(ALTERNATIVE_ANSWERS))
    assume(answer != victim.outcome.observed)
    mutated = History(
        [attrs.evolve(c, outcome=Definite(answer)) if c.id == victim.id else c for c in calls], lossy.final_documents,
        system="journal",
    )
    verdict = check(mutated)
    # Indefinite calls may be left out, so the mutated answer may be explainable; if it is, the witness
    # must hold up. If not, the explanation names a call of the victim's key or the final documents.
    if verdict.ok:
        assert_witness(mutated, verdict)
    else:
        assert verdict.status == "illegal"
        explanation = verdict.explanation
        assert explanation.key_hash == victim.op.command.key_hash
        assert explanation.unplaceable is not None or explanation.document_differences


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(concurrent_plans())
def test_concurrent_model_history_is_ok(plans):
    history, _state = simulate(plans, plugin=JOURNAL)
    verdict = check(history)
    assert_witness(history, verdict)
    again = check(History.from_json(json.loads(json.dumps(history.to_json()))))
    assert again.status == "ok"
    assert {k: [c.id for c in o] for k, o in again.order.items()} == {
        k: [c.id for c in o] for k, o in verdict.order.items()
    }  # deterministic


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(concurrent_plans(), st.data())
def test_read_only_commutation_never_changes_the_verdict(plans, data):
    history, _state = simulate(plans, plugin=JOURNAL)
    calls = list(history.calls)
    returned = [i for i, c in enumerate(calls) if c.completed_at is not None]
    if returned and data.draw(st.booleans()):
        index = data.draw(st.sampled_from(returned))
        calls[index] = attrs.evolve(calls[index], outcome=Definite(data.draw(st.sampled_from(ALTERNATIVE_ANSWERS))))
    history = History(calls, history.final_documents if data.draw(st.booleans()) else None, system="journal")
    fast = check(history, budget=200_000)
    slow = check(history, commute_read_only=False, budget=200_000)
    assume("unknown" not in (fast.status, slow.status))
    assert fast.status == slow.status
    if fast.ok:
        assert_witness(history, fast)
        assert_witness(history, slow)


@settings(max_examples=300, deadline=None)
@given(op_lists, st.lists(ops, min_size=1, max_size=6))
def test_model_read_only_answers_stay_read_only(op_list, probes):
    """The model property that makes read-only commutation sound: a call that answers A without writing in a
    state S also answers A without writing, if it answers A at all, in every state reachable from S."""
    states = [JournalState.empty()]
    for op in op_list:
        states.append(step(states[-1], op)[0])
    for probe in probes:
        for i, early in enumerate(states):
            new_state, result = step(early, probe)
            if new_state is not early:
                continue
            for later in states[i + 1 :]:
                after, later_result = step(later, probe)
                if later_result.answer == result.answer:
                    assert after is later, (probe, result, later_result)


# --- targeted cases --------------------------------------------------------------------------------


def _grant(fence: int, expires: datetime) -> dict:
    seconds = int((expires - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
    return {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "lease_acquired",
        "state": "leased",
        "fenceEpoch": fence,
        "leaseExpiresAt": {"seconds": seconds, "nanoseconds": 0},
    }


BUSY = {"journalSchemaVersion": 1, "lifecycleSchemaVersion": 1, "outcome": "lease_busy", "state": "leased"}
NEW = {"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_indefinite_call_may_take_effect_long_after_its_error():
    a, b, c = LEASES
    calls = [
        Call(0, "api", Register(BASE, at(0)), 0, 1 * MS, Definite(NEW)),
        # worker-a's acquire errors out at 5 ms, yet is the only explanation for worker-c's busy answer:
        # it must have applied after worker-b's grant returned (12 ms).
        Call(1, "worker-a", Acquire(BASE, a, at(70)), 3 * MS, 5 * MS, Indefinite("journal_unavailable")),
        Call(2, "worker-b", Acquire(BASE, b, at(1)), 10 * MS, 12 * MS, Definite(_grant(1, at(61)))),
        Call(3, "worker-c", Acquire(BASE, c, at(75)), 20 * MS, 22 * MS, Definite(BUSY)),
    ]
    verdict = check(History(calls, system="journal"))
    assert_witness(History(calls, system="journal"), verdict)
    assert [call.id for call in verdict.order[BASE.key_hash]] == [0, 2, 1, 3]
    # Without the lost call, worker-c should have taken over: illegal, and worker-c cannot be placed.
    verdict = check(History([call for call in calls if call.id != 1], system="journal"))
    assert verdict.status == "illegal"
    assert verdict.explanation.unplaceable_id == 3


def test_definite_calls_respect_real_time_and_touching_intervals_overlap():
    a, b, _c = LEASES
    register = Call(0, "api", Register(BASE, at(0)), 0, 1 * MS, Definite(NEW))
    first = Call(1, "worker-a", Acquire(BASE, a, at(1)), 2 * MS, 4 * MS, Definite(BUSY))
    second = Call(2, "worker-b", Acquire(BASE, b, at(1)), 5 * MS, 6 * MS, Definite(_grant(1, at(61))))
    # worker-a's busy needs worker-b's lease first, but worker-a returned before worker-b was invoked.
    assert check(History([register, first, second], system="journal")).explanation.unplaceable_id == 1
    # Touching instants (invocation == completion) count as overlapping.
    touching = attrs.evolve(second, invoked_at=4 * MS)
    verdict = check(History([register, first, touching], system="journal"))
    assert [c.id for c in verdict.order[BASE.key_hash]] == [0, 2, 1]


def test_budget_of_one_gives_unknown_on_a_contested_history():
    plans = [Planned("api", Register(BASE, at(0)), 0, MS, MS)]
    rng = random.Random(7)
    for k in range(12):
        lease = f"7c9e6679-7425-40de-944b-e07fc1f90a{k:02x}"
        invoked = 2 * MS + k
        plans.append(
            Planned(
                f"worker-{k}", Acquire(BASE, lease, at(1)), invoked, invoked + 9 * MS, invoked + rng.randrange(9 * MS)
            )
        )
    history, _state = simulate(plans, plugin=JOURNAL)
    verdict = check(history, budget=1)
    assert verdict.status == "unknown"
    assert verdict.explanation is None and verdict.final_state is None
    assert verdict.steps == 1
    assert "budget of 1" in verdict.explain()
    assert check(history).status == "ok"


def test_partitions_combine_illegal_over_unknown_over_ok():
    a, b, _c = LEASES
    good = [
        Call(0, "api", Register(OTHER, at(0)), 0, MS, Definite(NEW)),
        Call(1, "w", Acquire(OTHER, a, at(1)), 2 * MS, 3 * MS, Definite(_grant(1, at(61)))),
    ]
    bad = [
        Call(2, "api", Register(BASE, at(0)), 0, MS, Definite(NEW)),
        Call(3, "w", Acquire(BASE, a, at(1)), 2 * MS, 3 * MS, Definite(_grant(1, at(61)))),
        Call(4, "v", Acquire(BASE, b, at(2)), 4 * MS, 5 * MS, Definite(_grant(1, at(62)))),
    ]
    verdict = check(History(good + bad, system="journal"))
    assert verdict.status == "illegal"
    assert {p.key_hash: p.status for p in verdict.partitions} == {OTHER.key_hash: "ok", BASE.key_hash: "illegal"}
    assert verdict.explanation.key_hash == BASE.key_hash and verdict.explanation.unplaceable_id == 4
    assert verdict.final_state is None
    ok = check(History(good, system="journal"))
    assert ok.final_state.get(OTHER.key_hash).lifecycle.fence_epoch == 1
    # the illegal key undecided, no illegal one found
    assert check(History(good + bad, system="journal"), budget=2).status == "unknown"


def test_initial_state_is_sliced_per_key():
    a, _b, _c = LEASES
    initial = step(JournalState.empty(), Register(BASE, at(0)))[0]
    calls = [Call(0, "w", Acquire(BASE, a, at(1)), 0, MS, Definite(_grant(1, at(61))))]
    assert check(History(calls, system="journal")).status == "illegal"
    verdict = check(History(calls, system="journal"), initial_state=initial)
    assert_witness(History(calls, system="journal"), verdict, initial)


def test_final_documents_compare_types_and_every_path():
    a, _b, _c = LEASES
    history, state = sequential_history([Register(BASE, at(0)), Acquire(BASE, a, at(1))])
    docs = history.final_documents[BASE.key_hash]
    assert check(history).ok

    def variant(change):
        changed = {path: dict(doc) for path, doc in docs.items()}
        change(changed)
        return check(history, final_documents={BASE.key_hash: changed})

    lifecycle = next(p for p in docs if p.endswith("/lifecycle/current"))
    root = next(p for p in docs if p.startswith("checkoutRequests/") and "/" not in p[len("checkoutRequests/") :])
    assert variant(lambda d: d[lifecycle].update(fenceEpoch=True)).status == "illegal"
    assert variant(lambda d: d[lifecycle].update(fenceEpoch=1.0)).status == "illegal"
    assert variant(lambda d: d[lifecycle].update(extra=None)).status == "illegal"
    assert variant(lambda d: d.pop(lifecycle)).status == "illegal"
    assert variant(lambda d: d.update({"auditEvents/x": {}})).status == "illegal"
    assert variant(lambda d: d[root].update(createdAt=at(0) + timedelta(microseconds=1))).status == "illegal"
    verdict = variant(lambda d: d[lifecycle].update(fenceEpoch=True))
    assert any(
        "fenceEpoch stored bool(True), model int(1)" in line for line in verdict.explanation.document_differences
    )
    # Keys left out of final_documents are not compared; an empty mapping for a key means nothing stored.
    assert check(history, final_documents={OTHER.key_hash: {}}).ok
    assert check(history, final_documents={BASE.key_hash: {}}).status == "illegal"
    nanos = pytest.importorskip("google.api_core.datetime_helpers")

    def as_firestore(value):
        if isinstance(value, datetime):
            return nanos.DatetimeWithNanoseconds(
                value.year,
                value.month,
                value.day,
                value.hour,
                value.minute,
                value.second,
                nanosecond=value.microsecond * 1000,
                tzinfo=UTC,
            )
        return value

    read_back = {path: {k: as_firestore(v) for k, v in doc.items()} for path, doc in docs.items()}
    assert check(history, final_documents={BASE.key_hash: read_back}).ok


def test_final_documents_choose_between_indefinite_outcomes():
    """The same answers with the lost call applied or not: the stored documents decide, and both are ok."""
    a, b, _c = LEASES
    plans = [
        Planned("api", Register(BASE, at(0)), 0, MS, MS),
        Planned("w1", Acquire(BASE, a, at(1)), 2 * MS, 3 * MS, 3 * MS),
        Planned("w1", Complete(BASE, a, 1, REFS[0], at(2)), 4 * MS, 5 * MS, 5 * MS, lost="transport:OSError"),
    ]
    applied, _ = simulate(plans, plugin=JOURNAL)
    skipped, _ = simulate([*plans[:2], attrs.evolve(plans[2], applies=False)], plugin=JOURNAL)
    assert applied.calls == skipped.calls
    for history, in_order in ((applied, True), (skipped, False)):
        verdict = check(history)
        assert_witness(history, verdict)
        assert (2 in [c.id for c in verdict.order[BASE.key_hash]]) is in_order
    # A stored succeeded lifecycle that no call could have written is illegal.
    other = simulate([*plans[:2], Planned("w2", Complete(BASE, a, 1, REFS[1], at(2)), 4 * MS, 5 * MS, 5 * MS)],
                     plugin=JOURNAL)[0]
    assert check(applied, final_documents=other.final_documents).status == "illegal"


def test_empty_history_and_documents_only_partition():
    assert check(History([], system="journal")).ok
    assert check(History([], system="journal"), final_documents={BASE.key_hash: {}}).ok
    verdict = check(History([], system="journal"), final_documents={BASE.key_hash: {"checkoutRequests/x": {"a": 1}}})
    assert verdict.status == "illegal"
    assert verdict.explanation.unplaceable is None
    assert "stored but not predicted: checkoutRequests/x" in verdict.explain()


def test_checker_is_pure_and_deterministic():
    a, b, c = LEASES
    plans = [Planned("api", Register(BASE, at(0)), 0, MS, MS)]
    for k, lease in enumerate([a, b, c]):
        plans.append(Planned(f"w{k}", Acquire(BASE, lease, at(1)), 2 * MS, 9 * MS, (3 + k) * MS))
    history, _ = simulate(plans, plugin=JOURNAL)
    before = history.to_json()
    verdicts = [check(history) for _ in range(3)]
    assert history.to_json() == before
    assert len({v.explain() for v in verdicts}) == 1
    assert len({tuple(c.id for c in v.order[BASE.key_hash]) for v in verdicts}) == 1
    with pytest.raises(ValueError):
        check(history, budget=-1)


def test_recorded_concurrent_calls_against_the_model_are_linearizable():
    """Threads call a locked in-memory model through the Recorder; whatever the timing, the history is ok."""
    lock = threading.Lock()
    box = {"state": JournalState.empty()}

    def serve(op):
        def call():
            with lock:
                box["state"], result = step(box["state"], op)
            if result.ok:
                return result.output
            raise CommandJournalError(result.code)

        return call

    recorder = Recorder(classify=classifier(JOURNAL, JOURNAL.reference), system="journal")
    rng = random.Random(3)
    scripts = []
    for w in range(6):
        lease = LEASES[w % 3] if w < 3 else f"7c9e6679-7425-40de-944b-e07fc1f90b{w:02x}"
        script = [Register(BASE, at(0))]
        for k in range(8):
            moment = at(rng.choice([1, 2, 61, 62, 130]) + k * 0.001)
            script.append(
                rng.choice(
                    [
                        Acquire(BASE, lease, moment),
                        Complete(BASE, lease, rng.randint(1, 3), REFS[w % 2], moment),
                        Fail(BASE, lease, rng.randint(1, 3), moment),
                    ]
                )
            )
        scripts.append((f"worker-{w}", script))
    barrier = threading.Barrier(len(scripts))

    def run(caller, script):
        barrier.wait()
        for op in script:
            try:
                recorder.call(caller, op, serve(op))
            except CommandJournalError:
                pass

    threads = [threading.Thread(target=run, args=item) for item in scripts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history = recorder.history({BASE.key_hash: documents_for(box["state"], BASE.key_hash)})
    assert len(history.calls) == 54
    verdict = check(history)
    assert_witness(history, verdict)


# --- exact answers (issue 12 point 5) ----------------------------------------------------------------


def _reordered(answer: dict) -> dict:
    return dict(reversed(list(answer.items())))


def test_answers_must_match_exactly_types_and_key_order():
    """The lockstep's test (`plugin.answer_matches`), not `==`: True is not 1, 1.0 is not 1, and the keys come
    in the order the contract gives them."""
    a, _b, _c = LEASES
    grant = _grant(1, at(61))
    register = Call(0, "api", Register(BASE, at(0)), 0, MS, Definite(NEW))

    def judged(answer):
        acquire = Call(1, "w", Acquire(BASE, a, at(1)), 2 * MS, 3 * MS, Definite(answer))
        return check(History([register, acquire], system="journal"))

    assert judged(grant).ok
    assert judged({**grant, "fenceEpoch": True}).status == "illegal"
    assert judged({**grant, "fenceEpoch": 1.0}).status == "illegal"
    assert judged(_reordered(grant)).status == "illegal"
    explanation = judged({**grant, "fenceEpoch": True}).explanation
    assert explanation.unplaceable_id == 1
    assert explanation.model_result.matches(explanation.unplaceable.outcome.observed)  # equal under ==, not exact


def test_answers_equal_under_eq_are_not_conflated_by_the_search_caches():
    """Two identical registrations from the same state, one answering `True` for the schema version: the
    memoized model answers are per call, so the exact one cannot vouch for the other (1 == True hashes
    alike)."""
    existing = {"journalSchemaVersion": 1, "outcome": "registered_existing", "state": "registered"}
    calls = [
        Call(0, "api", Register(BASE, at(0)), 0, MS, Definite(NEW)),
        Call(1, "a", Register(BASE, at(1)), 2 * MS, 5 * MS, Definite(existing)),
        Call(2, "b", Register(BASE, at(1)), 2 * MS, 5 * MS, Definite({**existing, "journalSchemaVersion": True})),
    ]
    assert check(History(calls[:2], system="journal")).ok
    verdict = check(History(calls, system="journal"))
    assert verdict.status == "illegal" and verdict.explanation.unplaceable_id == 2


def test_lantern_answers_must_match_exactly():
    from fencecheck.plugin.records import exact_json
    from fencecheck.systems.lantern.plugin import LANTERN
    from model.lantern import CreateVenue, Light

    venue = CreateVenue("bar", "Bar", 52.52, 13.405, 150)
    light = Light("u1", "l1", "bar", 52.52, 13.405, now=T0)
    setup = LANTERN.step(LANTERN.initial_state(), venue)[0]
    lit = LANTERN.step(setup, light)[1].output

    def judged(answer):
        history = History([Call(0, "a", light, 0, 10, Definite(answer))], system="lantern")
        return check(history, plugin=LANTERN, initial_state=setup).status

    assert judged(lit) == "ok"
    assert judged(_reordered(lit)) == "illegal"
    assert judged({**lit, "lanternId": True}) == "illegal"
    assert exact_json({"a": [{"x": 1, "y": 2}]}) == exact_json({"a": [{"x": 1, "y": 2}]})
    assert exact_json({"a": [{"x": 1, "y": 2}]}) != exact_json({"a": [{"y": 2, "x": 1}]})
    assert exact_json({"a": [1]}) != exact_json({"a": [True]}) and exact_json({"a": [1]}) != exact_json({"a": [1.0]})


# --- verdict first, full mode, processes, budget (issue 13 point 4) ---------------------------------

from tests.register_plugin import REGISTER, Read, Write, break_reads, register_history  # noqa: E402
from tests.unit import forked_check_child  # noqa: E402


def _register_calls(key: str, first_id: int, start: int, *, bad: bool) -> list[Call]:
    """write 1, then a read of it (or, `bad`, of a value never written)."""
    value = -1 if bad else 1
    return [
        Call(first_id, f"{key}-w", Write(key, 1), start, start + MS, Definite({"outcome": "written"})),
        Call(first_id + 1, f"{key}-r", Read(key), start + 2 * MS, start + 3 * MS,
             Definite({"outcome": "read", "value": value})),
    ]


def _hard_illegal() -> History:
    """One register (k0), 200 calls by 5 clients, one in ten answers lost, one read of a value never
    written: illegal, proven in about 30,000 placement attempts."""
    return break_reads(register_history(13, clients=5, keys=1, calls=200, lost_share=0.1, read_share=0.3), 1, 13)


def _hard_then_easy() -> History:
    """The hard illegal register k0 first (in order of first invocation), then an ok register a and an
    illegal one b that take a few attempts each."""
    easy = _register_calls("a", 1000, 5 * MS, bad=False) + _register_calls("b", 1002, 6 * MS, bad=True)
    return History(list(_hard_illegal().calls) + easy, system="register")


def test_the_check_stops_at_the_first_illegal_partition_and_says_what_it_did_not_check():
    """Searched in rounds of doubling attempts: the easy illegal register gives the verdict in the first
    round, while the hard one, first in order, is still undecided (not checked)."""
    verdict = check(_hard_then_easy(), plugin=REGISTER)
    assert verdict.status == "illegal"
    assert [(p.key_hash, p.status) for p in verdict.partitions] == [
        ("k0", "not checked"), ("a", "ok"), ("b", "illegal")
    ]
    assert [p.key_hash for p in verdict.not_checked] == ["k0"]
    assert verdict.partitions[0].steps == 0 and verdict.partitions[0].order == ()
    assert verdict.steps < FIRST_CAP * 3  # the hard register's attempts so far are not counted
    assert verdict.first_illegal.key_hash == "b" and verdict.explanation.unplaceable_id == 1003
    assert verdict.explain().startswith("illegal: 1 of 2 register(s) checked are not linearizable; 1 not checked")


def test_full_mode_checks_every_partition_with_the_same_verdict_and_explanation():
    history = _hard_then_easy()
    first, full = check(history, plugin=REGISTER), check(history, plugin=REGISTER, full=True)
    assert [p.status for p in full.partitions] == ["illegal", "ok", "illegal"] and not full.not_checked
    assert full.partitions[0].steps > FIRST_CAP
    assert full.status == first.status == "illegal"
    assert full.first_illegal.key_hash == "b"  # found in the first round, though k0 comes first in order
    assert full.explanation.text() == first.explanation.text()
    assert full.explain().startswith("illegal: 2 of 3 register(s) are not linearizable.")
    assert "Other illegal registers: k0" in full.explain()
    assert full.partitions[0].explanation.unplaceable.outcome.observed == {"outcome": "read", "value": -1}


def test_an_unknown_partition_does_not_stop_the_check():
    """Only an illegal partition is a verdict: after one whose budget ran out the check goes on."""
    long_ok = register_history(2, clients=5, keys=1, calls=60)  # key k0, first invoked before the bad one
    calls = list(long_ok.calls) + [attrs.evolve(c, id=c.id + 1000) for c in _register_calls("z", 0, 10 * MS, bad=True)]
    history = History(calls, system="register")
    def bad_key_status(budget: int) -> str:
        return check(history, plugin=REGISTER, budget=budget, full=True).partitions[1].status

    budget = next(b for b in range(1, 500) if bad_key_status(b) == "illegal")
    verdict = check(history, plugin=REGISTER, budget=budget)
    assert [p.status for p in verdict.partitions] == ["unknown", "illegal"]
    assert verdict.status == "illegal"


def test_budget_exhaustion_is_unknown_deterministically():
    history = _hard_illegal()
    runs = [check(history, plugin=REGISTER, budget=500) for _ in range(2)]  # forked too: forked_check_child
    assert {v.status for v in runs} == {"unknown"}
    assert {v.steps for v in runs} == {500}
    assert len({tuple(c.id for c in v.partitions[0].order) for v in runs}) == 1
    assert "budget of 500" in runs[0].explain()


def test_an_illegal_register_with_many_lost_writes_resolves_within_the_budget():
    """Memoization on (calls linearized, state) alone keeps every placed-or-not choice of the open lost
    writes apart and runs out of 300,000 attempts on `_hard_illegal`; pruning a write over an unobserved
    lost write (absorption) it takes about 30,000."""
    verdict = check(_hard_illegal(), plugin=REGISTER, budget=200_000)
    assert verdict.status == "illegal"
    read = verdict.explanation.unplaceable
    assert read.outcome.observed == {"outcome": "read", "value": -1}


# --- the search against brute force -----------------------------------------------------------------


def _brute_force(history: History) -> bool:
    """Some subset of the indefinite calls, with every definite call, in some order respecting real time,
    gives every definite answer (and, when the history has them, the final documents)."""
    calls = list(history.calls)
    definite = [c for c in calls if c.outcome.definite]
    loose = [c for c in calls if not c.outcome.definite]
    for size in range(len(loose) + 1):
        for chosen in itertools.combinations(loose, size):
            for order in itertools.permutations(definite + list(chosen)):
                if any(
                    later.outcome.definite and later.completed_at < earlier.invoked_at
                    for earlier, later in itertools.combinations(order, 2)
                ):
                    continue
                state, good = (), True
                for call in order:
                    state, result = REGISTER.step(state, call.op)
                    if call.outcome.definite and not REGISTER.answer_matches(result, call.outcome.observed):
                        good = False
                        break
                if good and history.final_documents is not None:
                    good = all(
                        normalize_documents(REGISTER.documents_of(state, key)) == normalize_documents(docs)
                        for key, docs in history.final_documents.items()
                    )
                if good:
                    return True
    return False


@st.composite
def small_register_histories(draw):
    calls = []
    for k in range(draw(st.integers(1, 6))):
        invoked = draw(st.integers(0, 8))
        op = Write("r", draw(st.integers(1, 3))) if draw(st.booleans()) else Read("r")
        if draw(st.integers(0, 3)) == 0:
            completed = draw(st.one_of(st.none(), st.integers(invoked, 10)))
            outcome = Indefinite("transport:DeadlineExceeded")
        else:
            completed = draw(st.integers(invoked, 10))
            if isinstance(op, Write):
                outcome = Definite({"outcome": "written"})
            else:
                outcome = Definite({"outcome": "read", "value": draw(st.sampled_from([None, 1, 2, 3]))})
        calls.append(Call(k, f"c{k}", op, invoked, completed, outcome))
    final = None
    if draw(st.booleans()):
        value = draw(st.sampled_from([None, 1, 2, 3]))
        final = {"r": {} if value is None else {"registers/r": {"value": value}}}
    return History(calls, final, system="register")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_register_histories())
def test_the_search_agrees_with_brute_force_on_small_register_histories(history):
    verdict = check(history, plugin=REGISTER, full=True)
    assert verdict.status in ("ok", "illegal")
    assert verdict.ok == _brute_force(history)
    assert check(history, plugin=REGISTER, commute_read_only=False).status == verdict.status


REPO = Path(__file__).resolve().parents[2]
HANG_GUARD = 120  # seconds: reached only if a forked check hangs (the test then fails instead of hanging)


@pytest.mark.parametrize("scenario", sorted(forked_check_child.SCENARIOS))
def test_a_forked_check(scenario):
    """Run in a fresh process of one thread, where `processes=2` forks (see tests/unit/forked_check_child.py)."""
    try:
        done = subprocess.run([sys.executable, "-m", "tests.unit.forked_check_child", scenario], cwd=REPO,
                              capture_output=True, text=True, timeout=HANG_GUARD, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the forked check {scenario} still ran after {HANG_GUARD} s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith(f"passed: {scenario}")


def test_a_check_beside_another_thread_searches_in_its_own_process(monkeypatch):
    """A child forked beside other threads inherits the locks they hold: the unit suite's parallel check, forked
    while gRPC's threads ran, hung in CI. Beside a thread the check forks nothing, warns, and gives the same
    verdict."""
    history = break_reads(register_history(3, calls=600), 2, seed=3)
    alone = check(history, plugin=REGISTER)

    def no_fork():
        raise AssertionError("the check forked beside another thread")

    monkeypatch.setattr(os, "fork", no_fork)
    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    other.start()
    try:
        with pytest.warns(RuntimeWarning, match="searches in this process, not in 2"):
            beside = check(history, plugin=REGISTER, processes=2)
    finally:
        release.set()
        other.join()
    assert (beside.status, beside.processes) == ("illegal", 1)
    assert beside.explain() == alone.explain()
