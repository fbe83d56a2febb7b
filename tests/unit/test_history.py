"""History recording and its JSON form (fencecheck/checker/history.py, fencecheck/checker/history_codec.py)."""

from __future__ import annotations

import itertools
import json
import threading
from datetime import UTC, datetime, timedelta, timezone

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencecheck.checker.history import (
    Call,
    Definite,
    History,
    Indefinite,
    Planned,
    Recorder,
    WireFault,
    classifier,
    simulate,
)
from fencecheck.checker.history_codec import (
    datetime_from_json,
    datetime_to_json,
    documents_from_json,
    documents_to_json,
)
from fencecheck.systems.journal.codec import op_from_json, op_to_json
from fencecheck.systems.journal.plugin import JOURNAL
from model.journal import Acquire, CommandRef, Complete, Fail, JournalState, Register, documents_for, step
from reference.journal.errors import CommandJournalError
from reference.journal.outputs import LEASE_BUSY, LeaseAcquired, LeaseTimestamp

CLASSIFY = classifier(JOURNAL, JOURNAL.reference)  # the journal reference's classification of what a call raised

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REF = CommandRef.from_inputs(
    environment="test",
    caller_scope={"kind": "firebase_uid", "value": "uid-alice"},
    command_id="0f8fad5b-d9cb-469f-a165-70867728950e",
    command_type="create_checkout_session",
    endpoint_schema_version=1,
    payload={"raceId": "spring-10k", "quantity": 2, "nested": {"ok": True, "list": [1, "x", None]}},
)
OTHER = attrs.evolve(REF, command_id="16fd2706-8baf-433b-82eb-8c7fada847da", caller_scope_value="uid-bob")
LEASE = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
FP = "a" * 64


def ops_strategy():
    commands = st.sampled_from([REF, OTHER])
    moments = st.integers(0, 10**12).map(lambda us: T0 + timedelta(microseconds=us))
    leases = st.sampled_from([LEASE, "886313e1-3b8a-4372-9b90-0c9aee199e5d"])
    fences = st.integers(1, 9_999_999_999)
    return st.one_of(
        st.builds(Register, commands, moments, st.booleans()),
        st.builds(Acquire, commands, leases, moments, st.booleans()),
        st.builds(
            Complete, commands, leases, fences, st.sampled_from([FP, "0123456789abcdef" * 4]), moments, st.booleans()
        ),
        st.builds(Fail, commands, leases, fences, moments, st.booleans()),
    )


# --- operation codec -------------------------------------------------------------------------------


@settings(max_examples=200)
@given(ops_strategy())
def test_op_json_round_trips(op):
    data = op_to_json(op)
    assert json.loads(json.dumps(data)) == data
    assert op_from_json(data) == op
    names = {op.command: "c1"}
    assert op_from_json(op_to_json(op, command_names=names), commands={"c1": op.command}) == op


def test_op_json_shape():
    op = Complete(REF, LEASE, 3, FP, T0 + timedelta(microseconds=7))
    assert op_to_json(op, command_names={REF: "c1"}) == {
        "type": "complete",
        "command": "c1",
        "leaseId": LEASE,
        "expectedFenceEpoch": 3,
        "terminalReferenceFingerprint": FP,
        "now": "2026-03-01T12:00:00.000007+00:00",
    }
    assert op_to_json(Register(REF, T0))["command"]["payload"] == json.loads(REF.payload)
    assert op_to_json(Fail(REF, LEASE, 1, T0, commit_fails=True))["commitFails"] is True


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(extra=1),
        lambda d: d.pop("leaseId"),
        lambda d: d.update(expectedFenceEpoch=True),
        lambda d: d.update(expectedFenceEpoch="1"),
        lambda d: d.update(now="2026-03-01T12:00:00"),
        lambda d: d.update(now="2026-03-01T13:00:00+01:00"),
        lambda d: d.update(now=12),
        lambda d: d.update(type="steal"),
        lambda d: d.update(command="c9"),
        lambda d: d.update(commitFails="yes"),
    ],
    ids=[
        "unknown-key",
        "missing-key",
        "bool-fence",
        "str-fence",
        "naive-datetime",
        "non-utc-offset",
        "number-datetime",
        "unknown-type",
        "unknown-command-name",
        "non-bool-commit-fails",
    ],
)
def test_op_json_is_strict(mutate):
    data = op_to_json(Fail(REF, LEASE, 1, T0), command_names={REF: "c1"})
    mutate(data)
    with pytest.raises(ValueError):
        op_from_json(data, commands={"c1": REF})


def test_command_json_is_strict():
    data = op_to_json(Register(REF, T0))
    data["command"]["endpointSchemaVersion"] = True
    with pytest.raises(ValueError):
        op_from_json(data)
    data = op_to_json(Register(REF, T0))
    data["command"]["callerScope"]["extra"] = "x"
    with pytest.raises(ValueError):
        op_from_json(data)


def test_only_journal_operations_have_a_json_form():
    with pytest.raises(TypeError):
        op_to_json(REF)


def test_datetimes_keep_microseconds_and_utc():
    moment = T0 + timedelta(microseconds=123456)
    assert datetime_to_json(moment) == "2026-03-01T12:00:00.123456+00:00"
    assert datetime_from_json("2026-03-01T12:00:00.123456Z") == moment
    assert datetime_from_json(datetime_to_json(T0)).tzinfo is UTC
    with pytest.raises(ValueError):
        datetime_to_json(datetime(2026, 3, 1))
    with pytest.raises(ValueError):
        datetime_to_json(datetime(2026, 3, 1, tzinfo=timezone(timedelta(hours=1))))


# --- documents codec -------------------------------------------------------------------------------


def test_documents_round_trip_with_timestamps_and_dollar_keys():
    docs = {
        "a/b": {"createdAt": T0 + timedelta(microseconds=5), "n": 1, "flag": True, "none": None, "s": "x"},
        "a/c": {"map": {"$timestamp": "not a tag", "k": [T0, {"z": 1}]}},
    }
    data = documents_to_json(docs)
    assert json.loads(json.dumps(data)) == data
    assert data["a/b"]["createdAt"] == {"$timestamp": "2026-03-01T12:00:00.000005+00:00"}
    back = documents_from_json(data)
    assert back == docs
    assert type(back["a/b"]["flag"]) is bool and type(back["a/b"]["n"]) is int
    with pytest.raises(ValueError):
        documents_from_json({"a/b": {"x": {"$what": 1}}})


def test_firestore_timestamps_encode_as_plain_datetimes():
    nanos = pytest.importorskip("google.api_core.datetime_helpers")
    stored = nanos.DatetimeWithNanoseconds(2026, 3, 1, 12, 0, 0, nanosecond=5000, tzinfo=UTC)
    data = documents_to_json({"p": {"t": stored}})
    assert documents_from_json(data) == {"p": {"t": T0 + timedelta(microseconds=5)}}


# --- calls and histories ---------------------------------------------------------------------------


def test_call_validation():
    op = Register(REF, T0)
    with pytest.raises(ValueError):
        Call(0, "w", op, 10, 5, Definite("lease_rejected"))
    with pytest.raises(ValueError):
        Call(0, "w", op, 10, None, Definite("lease_rejected"))
    with pytest.raises(TypeError):
        Call(0, "w", op, 1.5, 2, Definite("lease_rejected"))
    Call(0, "w", op, 10, None, Indefinite("no_return"))
    with pytest.raises(ValueError):
        History([Call(0, "w", op, 1, 2, Indefinite("x")), Call(0, "v", op, 3, 4, Indefinite("x"))], system="journal")
    with pytest.raises(TypeError):
        Definite(42)


def test_definite_copies_and_hashes():
    observed = {"outcome": "lease_busy"}
    outcome = Definite(observed)
    observed["outcome"] = "changed"
    assert outcome.observed == {"outcome": "lease_busy"}
    call = Call(0, "w", Acquire(REF, LEASE, T0), 1, 2, outcome)
    assert hash(call) == hash(attrs.evolve(call))
    assert call == attrs.evolve(call, outcome=Definite({"outcome": "lease_busy"}))
    assert call != attrs.evolve(call, outcome=Definite({"outcome": "lease_acquired"}))


def _sample_history() -> History:
    state = JournalState.empty()
    state, _ = step(state, Register(REF, T0))
    calls = [
        Call(
            0,
            "api",
            Register(REF, T0),
            0,
            10,
            Definite({"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}),
        ),
        Call(1, "worker-1", Acquire(REF, LEASE, T0), 5, 20, Indefinite("journal_unavailable")),
        Call(2, "worker-2", Complete(OTHER, LEASE, 1, FP, T0), 6, 9, Definite("command_not_registered")),
        Call(3, "worker-3", Fail(REF, LEASE, 2, T0, commit_fails=True), 7, None, Indefinite("no_return")),
    ]
    return History(calls, {REF.key_hash: documents_for(state, REF.key_hash), OTHER.key_hash: {}}, system="journal")


def test_history_json_round_trip():
    history = _sample_history()
    data = history.to_json()
    text = json.dumps(data)
    again = History.from_json(json.loads(text))
    assert again == history
    assert again.to_json() == data
    assert History.loads(history.dumps()) == history
    assert sorted(data["commands"]) == ["c1", "c2"]
    assert data["calls"][1]["outcome"] == {"indefinite": "journal_unavailable"}
    assert data["calls"][3]["completedAt"] is None
    assert History.from_json(History([], system="journal").to_json()) == History([], system="journal")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(format="other/1"),
        lambda d: d.update(extra=1),
        lambda d: d["calls"][0].update(extra=1),
        lambda d: d["calls"][0].update(outcome={"definite": 3}),
        lambda d: d["calls"][0].update(outcome={"maybe": "x"}),
        lambda d: d["calls"][0].update(completedAt=None),
        lambda d: d["calls"][0]["op"].update(command="c7"),
        lambda d: d["calls"][0].update(wireFaults=[]),  # left out when there are none, never empty
        lambda d: d["calls"][0].update(wireFaults=["reject Commit", 3]),
        lambda d: d["calls"][0].update(wireFaults="reject Commit"),
    ],
)
def test_history_json_is_strict(mutate):
    data = _sample_history().to_json()
    mutate(data)
    with pytest.raises((ValueError, TypeError)):
        History.from_json(data)


LOST_COMMIT = WireFault("fail-response", "Commit", True, False)
REFUSED_BEGIN = WireFault("reject", "BeginTransaction", False, True)
LOST_COMMIT_JSON = {"kind": "fail-response", "method": "Commit", "forwarded": True, "definite": False}


def _with_wire_faults(history: History, call_index: int, faults) -> History:
    hit = attrs.evolve(history.calls[call_index], wire_faults=faults)
    return attrs.evolve(history, calls=(*history.calls[:call_index], hit, *history.calls[call_index + 1:]))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**LOST_COMMIT_JSON, "forwarded": 1}, "wireFaults[0]: a wire fault's forwarded must be true or false, got 1"),
        ({**LOST_COMMIT_JSON, "definite": "false"},
         "wireFaults[0]: a wire fault's definite must be true or false, got 'false'"),
        ({**LOST_COMMIT_JSON, "definite": None}, "a wire fault's definite must be true or false, got None"),
        ({**LOST_COMMIT_JSON, "kind": ""}, "a wire fault's kind must be a non-empty string without whitespace"),
        ({**LOST_COMMIT_JSON, "method": "Begin Transaction"},
         "a wire fault's method must be a non-empty string without whitespace, got 'Begin Transaction'"),
        ({**LOST_COMMIT_JSON, "kind": 3}, "a wire fault's kind must be a non-empty string without whitespace, got 3"),
        ({k: v for k, v in LOST_COMMIT_JSON.items() if k != "definite"},
         "a wire fault must be a JSON object with exactly the keys ['kind', 'method', 'forwarded', 'definite']"),
        ({**LOST_COMMIT_JSON, "seq": 4}, "with exactly the keys ['kind', 'method', 'forwarded', 'definite']"),
        (["fail-response", "Commit"], "with exactly the keys ['kind', 'method', 'forwarded', 'definite']"),
        ("fail-response", 'a wire fault label must be "<kind> <Method>", got \'fail-response\''),
        ("fail-response  Commit", 'a wire fault label must be "<kind> <Method>"'),
    ],
)
def test_a_wire_fault_entry_is_read_strictly_and_says_what_was_expected(entry, message):
    data = _sample_history().to_json()
    data["calls"][1]["wireFaults"] = [entry]
    with pytest.raises(ValueError) as raised:
        History.from_json(data)
    assert message in str(raised.value)
    assert str(raised.value).startswith("call 1 wireFaults[0]: ")  # names the call and the entry


def test_wire_faults_round_trip_as_whole_events_and_are_absent_when_none():
    history = _sample_history()
    assert all("wireFaults" not in call for call in history.to_json()["calls"])  # a history without faults as before
    faulted = _with_wire_faults(history, 1, [LOST_COMMIT, REFUSED_BEGIN])
    data = json.loads(json.dumps(faulted.to_json()))
    assert data["calls"][1]["wireFaults"] == [
        LOST_COMMIT_JSON,
        {"kind": "reject", "method": "BeginTransaction", "forwarded": False, "definite": True},
    ]
    assert "wireFaults" not in data["calls"][0]
    again = History.from_json(data)
    assert again == faulted and again.calls[1].wire_faults == (LOST_COMMIT, REFUSED_BEGIN)
    assert type(again.calls[1].wire_faults) is tuple and type(again.calls[1].wire_faults[0].forwarded) is bool
    assert again != history


def test_an_older_file_s_label_only_wire_faults_are_read_as_unknown_and_written_back_unchanged():
    """Files written before the whole events named each fault by its label alone: read, it says neither whether
    the request was forwarded nor whether its answer was lost, so it is not taken to have lost one (the definite
    share does not excuse its call); written again, it stays the label, so the file does not change."""
    data = _sample_history().to_json()
    data["calls"][1]["wireFaults"] = ["fail-response Commit", LOST_COMMIT_JSON]
    history = History.from_json(json.loads(json.dumps(data)))
    old, new = history.calls[1].wire_faults
    assert old == WireFault("fail-response", "Commit", None, None)
    assert (old.label, old.known, old.lost_answer) == ("fail-response Commit", False, False)
    assert (new.label, new.known, new.lost_answer) == ("fail-response Commit", True, True)
    assert history.to_json()["calls"][1]["wireFaults"] == ["fail-response Commit", LOST_COMMIT_JSON]
    only_old = _with_wire_faults(history, 1, [old])
    assert only_old.calls[1].lost_answer_to_wire is False and history.calls[1].lost_answer_to_wire is True


@pytest.mark.parametrize(
    ("fault", "lost"),
    [
        (WireFault("fail-response", "Commit", True, False), True),
        (WireFault("drop-response", "Commit", True, False), True),
        (WireFault("cut-stream", "BatchGetDocuments", True, False), True),
        (WireFault("delay", "Commit", True, True), False),  # forwarded, but its answer came back
        (WireFault("reject", "BeginTransaction", False, True), False),  # never reached the emulator
        (WireFault("fail-response", "Commit", None, None), False),  # an older file's label: unknown
    ],
)
def test_only_a_forwarded_fault_that_lost_the_answer_lost_one(fault, lost):
    assert fault.lost_answer is lost


def test_a_wire_fault_refuses_what_is_not_a_fault():
    with pytest.raises(TypeError, match="forwarded must be true, false or None"):
        WireFault("reject", "Commit", 0, True)
    with pytest.raises(TypeError, match="method must be a non-empty string without whitespace"):
        WireFault("reject", "", False, True)
    with pytest.raises(ValueError, match="forwarded and definite are both known or both unknown"):
        WireFault("reject", "Commit", False, None)
    with pytest.raises(TypeError, match="must be <class 'fencecheck.checker.history.WireFault'>"):
        attrs.evolve(_sample_history().calls[1], wire_faults=("fail-response Commit",))  # a label is not an event


def test_the_recorder_keeps_the_wire_faults_it_is_told_after_the_call():
    recorder = Recorder(clock=_ticks(), classify=CLASSIFY, system="journal")
    told = []

    def faults():
        told.append("asked")
        return [LOST_COMMIT]

    def lost():
        assert told == []  # asked only once the call has ended
        raise CommandJournalError("journal_unavailable")

    with pytest.raises(CommandJournalError):
        recorder.call("w1", Acquire(REF, LEASE, T0), lost, wire_faults=faults)
    recorder.call("w2", Acquire(REF, LEASE, T0), lambda: {"outcome": "raw dict"})
    first, second = recorder.calls()
    assert (first.wire_faults, second.wire_faults, told) == ((LOST_COMMIT,), (), ["asked"])
    assert first.outcome == Indefinite("journal_unavailable") and first.lost_answer_to_wire is True


def test_timeline_names_the_wire_faults_of_a_call():
    from fencecheck.checker.explain import timeline

    calls = _sample_history().calls
    hit = attrs.evolve(calls[1], wire_faults=(LOST_COMMIT,))
    text = timeline((calls[0], hit), positions={0: 1}, marks={}, epoch=T0, describe_op=JOURNAL.describe_op)
    lines = text.splitlines()
    assert "indefinite (journal_unavailable) [wire: fail-response Commit]" in lines[-1]
    assert "[wire:" not in "\n".join(lines[:-1])


# --- recorder ---------------------------------------------------------------------------------------


def _ticks():
    counter = itertools.count(100, 10)
    return lambda: next(counter)


def test_recorder_records_outputs_and_classifies_errors():
    recorder = Recorder(clock=_ticks(), classify=CLASSIFY, system="journal")
    grant = LeaseAcquired(1, LeaseTimestamp(1_772_366_461, 0))
    assert recorder.call("w1", Acquire(REF, LEASE, T0), lambda: grant) is grant
    assert recorder.call("w2", Acquire(REF, LEASE, T0), lambda: {"outcome": "raw dict"}) == {"outcome": "raw dict"}

    def raiser(exc):
        def fn():
            raise exc

        return fn

    for caller, exc in [
        ("w3", CommandJournalError("lease_rejected")),
        ("w4", CommandJournalError("journal_unavailable")),
        ("w5", ConnectionResetError("peer")),
    ]:
        with pytest.raises(type(exc)):
            recorder.call(caller, Register(REF, T0), raiser(exc))
    with pytest.raises(TypeError):
        recorder.call("w6", Register(REF, T0), lambda: 42)
    calls = recorder.calls()
    assert [c.id for c in calls] == [0, 1, 2, 3, 4, 5]
    assert [(c.invoked_at, c.completed_at) for c in calls] == [(100 + 20 * i, 110 + 20 * i) for i in range(6)]
    assert calls[0].outcome == Definite(grant.to_json())
    assert calls[1].outcome == Definite({"outcome": "raw dict"})
    assert calls[2].outcome == Definite("lease_rejected")
    assert calls[3].outcome == Indefinite("journal_unavailable")
    assert calls[4].outcome == Indefinite("transport:ConnectionResetError")
    assert calls[5].outcome == Indefinite("unrecognized_return")
    assert recorder.history().calls == calls


def test_the_journal_reference_classification():
    classify_exception = CLASSIFY
    assert classify_exception(CommandJournalError("terminal_conflict")) == Definite("terminal_conflict")
    assert classify_exception(CommandJournalError("unrecognized_record")) == Definite("unrecognized_record")
    assert classify_exception(CommandJournalError("journal_unavailable")) == Indefinite("journal_unavailable")
    assert classify_exception(TimeoutError()) == Indefinite("transport:TimeoutError")


def test_recorder_lists_unfinished_calls_as_never_returned():
    recorder = Recorder(clock=_ticks(), classify=CLASSIFY, system="journal")
    seen = []

    def inner():
        seen.extend(recorder.calls())
        return LEASE_BUSY

    recorder.call("w1", Acquire(REF, LEASE, T0), inner)
    assert seen == [Call(0, "w1", Acquire(REF, LEASE, T0), 100, None, Indefinite("no_return"))]
    assert recorder.calls()[0].outcome == Definite(LEASE_BUSY.to_json())


def test_recorder_records_interrupts_as_indefinite():
    recorder = Recorder(clock=_ticks(), classify=CLASSIFY, system="journal")

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        recorder.call("w1", Register(REF, T0), interrupted)
    assert recorder.calls()[0].outcome == Indefinite("interrupted")


def test_recorder_is_thread_safe():
    recorder = Recorder(classify=CLASSIFY, system="journal")
    barrier = threading.Barrier(8)

    def worker(n):
        barrier.wait()
        for i in range(50):
            recorder.call(f"worker-{n}", Register(REF, T0), lambda i=i: {"i": i})

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    calls = recorder.calls()
    assert [c.id for c in calls] == list(range(400))
    assert all(c.invoked_at <= c.completed_at for c in calls)
    assert sorted(calls, key=lambda c: c.invoked_at) == sorted(calls, key=lambda c: c.id)
    for n in range(8):
        own = [c for c in calls if c.caller == f"worker-{n}"]
        assert [c.outcome.observed["i"] for c in own] == list(range(50))
        assert all(a.completed_at <= b.invoked_at for a, b in itertools.pairwise(own))


# --- simulate ---------------------------------------------------------------------------------------


def test_planned_validation():
    op = Register(REF, T0)
    with pytest.raises(ValueError):
        Planned("w", op, 10, 20, 5)
    with pytest.raises(ValueError):
        Planned("w", op, 10, 20, 25)
    with pytest.raises(ValueError):
        Planned("w", op, 10, None, 25)
    with pytest.raises(ValueError):
        Planned("w", op, 10, 20, 15, applies=False)
    Planned("w", op, 10, None, 25, lost="no_return")


def test_simulate_applies_in_effect_order_and_records_answers():
    history, state = simulate(
        [
            Planned("a", Register(REF, T0), 0, 10, 8),
            Planned("b", Register(REF, T0 + timedelta(seconds=1)), 1, 10, 2),
            Planned("c", Acquire(REF, LEASE, T0 - timedelta(seconds=5)), 20, 30, 25),
            Planned("d", Acquire(OTHER, LEASE, T0), 20, 30, 21, lost="transport:OSError", applies=False),
        ], plugin=JOURNAL
    )
    outcomes = [c.outcome for c in history.calls]
    assert outcomes[0].observed["outcome"] == "registered_existing"
    assert outcomes[1].observed["outcome"] == "registered_new"
    assert outcomes[2] == Indefinite("journal_unavailable")  # clock before registration
    assert outcomes[3] == Indefinite("transport:OSError")
    assert history.final_documents == {
        REF.key_hash: documents_for(state, REF.key_hash),
        OTHER.key_hash: {},
    }
