"""Worked examples of the command-journal model: one per transition-table row, explicit clock boundaries,
faults, golden documents for the first identity vector, and the human-readable descriptions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import attrs
import pytest

from model.journal import (
    FAULT_LEASE_ID,
    MAX_REVISION,
    TRANSITION_IDS,
    TRANSITIONS,
    TRANSITIONS_BY_ID,
    VALID_FAULTS,
    Acquire,
    CommandRecord,
    CommandRef,
    Complete,
    CorruptRecord,
    Fail,
    FaultKind,
    InjectFault,
    JournalState,
    Register,
    describe_op,
    describe_state,
    documents,
    documents_for,
    fault_applies,
    owner_fingerprint_of,
    record_problem,
    step,
    timestamp_parts,
)
from model.journal.identity import audit_path, lifecycle_path, root_path

VECTORS = json.loads((Path(__file__).parents[2] / "vectors" / "identity-golden.json").read_text())["vectors"]
V0 = VECTORS[0]
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
US = timedelta(microseconds=1)

REF = CommandRef.from_inputs(
    environment=V0["input"]["environment"],
    caller_scope=V0["input"]["callerScope"],
    command_id=V0["input"]["commandId"],
    command_type=V0["input"]["commandType"],
    endpoint_schema_version=V0["input"]["endpointSchemaVersion"],
    payload=V0["input"]["payload"],
)
H = REF.key_hash
A = V0["input"]["leaseId"]
B = "886313e1-3b8a-4372-9b90-0c9aee199e5d"
C1 = V0["input"]["terminalReferenceFingerprint"]
C2 = "b" * 64


def at(seconds: float = 0, micros: int = 0) -> datetime:
    return T0 + timedelta(seconds=seconds, microseconds=micros)


def run(*ops, state: JournalState | None = None) -> JournalState:
    """Apply operations that must all succeed (or inject) and return the final state."""
    state = JournalState.empty() if state is None else state
    for op in ops:
        state, result = step(state, op)
        assert result.code is None, (describe_op(op, epoch=T0), result)
    return state


def registered() -> JournalState:
    return run(Register(REF, at(0)))


def leased(lease: str = A, when: float = 1) -> JournalState:
    """Registered at T+0, leased by `lease` at T+1 s (expires T+61 s), fence 1, revision 2."""
    return run(Acquire(REF, lease, at(when)), state=registered())


def taken_over() -> JournalState:
    """A leased at T+1; expired; A takes over again at T+61: fence 2, revision 3, expires T+121."""
    return run(Acquire(REF, A, at(61)), state=leased())


def succeeded() -> JournalState:
    return run(Complete(REF, A, 1, C1, at(2)), state=leased())


def failed() -> JournalState:
    return run(Fail(REF, A, 1, at(2)), state=leased())


def at_maximum() -> JournalState:
    return run(InjectFault(REF, FaultKind.REVISION_AT_MAXIMUM), state=leased())


def corrupt() -> JournalState:
    return run(InjectFault(REF, FaultKind.EXTRA_FIELD), state=leased())


CONFLICTING = {
    "type": attrs.evolve(REF, command_type="refund_order"),
    "version": attrs.evolve(REF, endpoint_schema_version=2),
    "payload": attrs.evolve(REF, payload='{"quantity":3}'),
}


def _finish_scenarios(op_name: str):
    """Scenarios for complete (op_name 'complete') or fail ('fail'); success and failure mirror."""
    terminal = succeeded if op_name == "complete" else failed
    other_terminal = failed if op_name == "complete" else succeeded

    def make(lease, fence, when, reference=C1, command=REF):
        if op_name == "complete":
            return Complete(command, lease, fence, reference, when)
        return Fail(command, lease, fence, when)

    return {
        f"{op_name}.unregistered": (JournalState.empty, make(A, 1, at(1))),
        f"{op_name}.conflict": (leased, make(A, 1, at(2), command=CONFLICTING["payload"])),
        # Terminal at T+2; an exact retry whose clock reads T+2 - 1 us observes the terminal state.
        f"{op_name}.clock_earlier.exact_retry": (terminal, make(A, 1, at(2) - US)),
        f"{op_name}.clock_earlier.unavailable": (registered, make(A, 1, at(0) - US)),
        f"{op_name}.no_lease": (registered, make(A, 1, at(1))),
        # Exact retry long after the old lease expired.
        f"{op_name}.terminal.exact_retry": (terminal, make(A, 1, at(1000))),
        f"{op_name}.terminal.conflict": (other_terminal, make(A, 1, at(3))),
        f"{op_name}.wrong_holder": (leased, make(B, 1, at(2))),
        f"{op_name}.stale_fence": (taken_over, make(A, 1, at(62))),
        f"{op_name}.expired": (leased, make(A, 1, at(61))),
        f"{op_name}.overflow": (at_maximum, make(A, MAX_REVISION - 1, at(2))),
        f"{op_name}.exact": (leased, make(A, 1, at(61) - US)),
    }


# transition id -> (initial state factory, operation)
SCENARIOS = {
    "register.absent.new": (JournalState.empty, Register(REF, at(0))),
    "register.existing.same": (succeeded, Register(REF, at(-5))),
    "register.existing.conflict_type": (registered, Register(CONFLICTING["type"], at(1))),
    "register.existing.conflict_version": (registered, Register(CONFLICTING["version"], at(1))),
    "register.existing.conflict_payload": (leased, Register(CONFLICTING["payload"], at(1))),
    "acquire.unregistered": (JournalState.empty, Acquire(REF, A, at(0))),
    "acquire.conflict": (registered, Acquire(CONFLICTING["type"], A, at(1))),
    "acquire.first_clock_before_registration": (registered, Acquire(REF, A, at(0) - US)),
    "acquire.first": (registered, Acquire(REF, A, at(0))),  # equal to createdAt is allowed
    "acquire.active.same_holder": (leased, Acquire(REF, A, at(61) - US)),
    "acquire.active.other_holder": (leased, Acquire(REF, B, at(61) - US)),
    "acquire.overflow": (at_maximum, Acquire(REF, B, at(61))),
    "acquire.expired.takeover_other": (leased, Acquire(REF, B, at(61))),
    "acquire.expired.takeover_same_id": (leased, Acquire(REF, A, at(61))),
    "acquire.terminal.succeeded": (succeeded, Acquire(REF, B, at(-100))),
    "acquire.terminal.failed_final": (failed, Acquire(REF, A, at(500))),
    **_finish_scenarios("complete"),
    **_finish_scenarios("fail"),
    "any.corrupt": (corrupt, Register(REF, at(0))),
    "any.commit_failed": (registered, Acquire(REF, A, at(1), commit_fails=True)),
    "fault_injected": (registered, InjectFault(REF, FaultKind.MISSING_ROOT)),
    "fault_not_applicable": (registered, InjectFault(REF, FaultKind.MISSING_CURRENT_AUDIT)),
}


def test_every_transition_row_has_an_example():
    assert set(SCENARIOS) == TRANSITION_IDS


def test_transition_table_is_well_formed():
    assert len({row.id for row in TRANSITIONS}) == len(TRANSITIONS)
    for row in TRANSITIONS:
        assert row.operation in {"register", "acquire", "complete", "fail", "any", "fault"}
        assert row.condition and row.from_state
    unreachable = {row.id for row in TRANSITIONS if not row.reachable}
    assert unreachable == {
        "acquire.overflow",
        "complete.overflow",
        "fail.overflow",
        "any.corrupt",
        "fault_injected",
        "fault_not_applicable",
    }


@pytest.mark.parametrize("transition", sorted(SCENARIOS))
def test_row_example(transition):
    make_state, op = SCENARIOS[transition]
    state = make_state()
    before = documents(state)
    new_state, result = step(state, op)
    row = TRANSITIONS_BY_ID[transition]
    assert result.transition == transition
    assert result.wrote == row.writes
    assert (result.outcome or result.code) == row.outcome
    if row.writes:
        assert documents(new_state) != before
    else:
        assert new_state is state and documents(new_state) == before


# --- Outputs -----------------------------------------------------------------------------------------


def test_registration_outputs():
    state, result = step(JournalState.empty(), Register(REF, at(0)))
    assert result.output == {"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}
    _, again = step(state, Register(REF, at(9)))
    assert again.output == {"journalSchemaVersion": 1, "outcome": "registered_existing", "state": "registered"}
    assert again.code is None and not again.wrote


def test_lease_output_has_exact_seconds_and_nanoseconds():
    when = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    _, result = step(registered(), Acquire(REF, A, when))
    expires = when + timedelta(seconds=60)
    assert result.output == {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "lease_acquired",
        "state": "leased",
        "fenceEpoch": 1,
        "leaseExpiresAt": {"seconds": int(expires.timestamp()), "nanoseconds": 123_456_000},
    }


def test_timestamp_parts_floor_before_epoch():
    assert timestamp_parts(datetime(1969, 12, 31, 23, 59, 59, 250000, tzinfo=UTC)) == (-1, 250_000_000)
    assert timestamp_parts(datetime(1970, 1, 1, tzinfo=UTC)) == (0, 0)
    assert timestamp_parts(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == (253402300799, 999_999_000)


def test_busy_and_terminal_outputs():
    _, busy = step(leased(), Acquire(REF, B, at(2)))
    assert busy.output == {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "lease_busy",
        "state": "leased",
    }
    _, done = step(succeeded(), Acquire(REF, B, at(2)))
    assert done.output == {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "terminal_succeeded",
        "state": "succeeded",
    }
    _, gone = step(failed(), Acquire(REF, B, at(2)))
    assert gone.output == {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "terminal_failed_final",
        "state": "failed_final",
    }
    _, error = step(JournalState.empty(), Acquire(REF, A, at(0)))
    assert error.output is None and error.code == "command_not_registered" and not error.ok


# --- Clock boundaries ----------------------------------------------------------------------------------


def test_expiry_equality_is_expired_and_one_microsecond_before_is_active():
    state = leased()  # expires exactly T+61 s
    expiry = at(61)
    _, same = step(state, Acquire(REF, A, expiry - US))
    assert same.transition == "acquire.active.same_holder"
    assert (same.fence_epoch, same.lease_expires_at) == (1, expiry)
    _, busy = step(state, Acquire(REF, B, expiry - US))
    assert busy.outcome == "lease_busy"
    new, taken = step(state, Acquire(REF, B, expiry))
    assert taken.transition == "acquire.expired.takeover_other"
    assert (taken.fence_epoch, taken.lease_expires_at) == (2, expiry + timedelta(seconds=60))
    lc = new.get(H).lifecycle
    assert (lc.revision, lc.fence_epoch, lc.created_at, lc.acquired_at) == (3, 2, at(1), expiry)
    assert step(state, Complete(REF, A, 1, C1, expiry))[1].transition == "complete.expired"
    assert step(state, Complete(REF, A, 1, C1, expiry - US))[1].transition == "complete.exact"
    assert step(state, Fail(REF, A, 1, expiry))[1].transition == "fail.expired"


def test_takeover_by_the_same_lease_id_increments_once_and_audits():
    state = taken_over()
    record = state.get(H)
    lc = record.lifecycle
    assert (lc.state, lc.revision, lc.fence_epoch) == ("leased", 3, 2)
    assert lc.owner_fingerprint == owner_fingerprint_of(H, A)
    assert (lc.created_at, lc.acquired_at, lc.updated_at, lc.expires_at) == (at(1), at(61), at(61), at(121))
    audit = documents(state)[audit_path(H, 3)]
    assert (audit["eventType"], audit["fromState"], audit["toState"]) == (
        "command_lease_taken_over",
        "leased",
        "leased",
    )
    assert (audit["fenceEpoch"], audit["leaseExpiresAt"], audit["occurredAt"]) == (2, at(121), at(61))
    # The old fence can no longer finish; the new one can; recovery returns the new fence.
    assert step(state, Complete(REF, A, 1, C1, at(62)))[1].code == "lease_rejected"
    assert step(state, Acquire(REF, A, at(62)))[1].fence_epoch == 2
    assert step(state, Complete(REF, A, 2, C1, at(62)))[1].transition == "complete.exact"


def test_earlier_clock_readings_never_mutate():
    state = taken_over()  # updatedAt T+61
    early = at(61) - US
    # Acquire: same holder recovers, other holder busy (the reading is before expiry).
    assert step(state, Acquire(REF, A, early))[1].transition == "acquire.active.same_holder"
    assert step(state, Acquire(REF, B, early))[1].transition == "acquire.active.other_holder"
    # Complete/fail with the exact holder and fence but a reading before the stored update: unavailable.
    assert step(state, Complete(REF, A, 2, C1, early))[1].transition == "complete.clock_earlier.unavailable"
    assert step(state, Fail(REF, B, 9, early))[1].code == "journal_unavailable"
    # First acquire before registration time.
    assert step(registered(), Acquire(REF, A, at(-30)))[1].code == "journal_unavailable"
    # Terminal at T+2: an earlier non-exact call is unavailable rather than a conflict.
    done = succeeded()
    assert step(done, Complete(REF, A, 1, C2, at(2) - US))[1].transition == "complete.clock_earlier.unavailable"
    assert step(done, Complete(REF, A, 1, C2, at(2)))[1].transition == "complete.terminal.conflict"
    assert step(done, Fail(REF, A, 1, at(1)))[1].transition == "fail.clock_earlier.unavailable"
    assert step(done, Complete(REF, A, 1, C1, at(1)))[1].transition == "complete.clock_earlier.exact_retry"
    # Acquire on a terminal state observes it whatever the clock says.
    assert step(done, Acquire(REF, B, at(-1000)))[1].outcome == "terminal_succeeded"


def test_terminal_conflicts():
    done = succeeded()
    assert step(done, Complete(REF, A, 1, C2, at(3)))[1].code == "terminal_conflict"  # other commitment
    assert step(done, Complete(REF, B, 1, C1, at(3)))[1].code == "terminal_conflict"  # other holder
    assert step(done, Complete(REF, A, 2, C1, at(3)))[1].code == "terminal_conflict"  # other fence
    assert step(done, Fail(REF, A, 1, at(3)))[1].code == "terminal_conflict"  # other outcome
    gone = failed()
    assert step(gone, Complete(REF, A, 1, C1, at(3)))[1].code == "terminal_conflict"
    assert step(gone, Fail(REF, B, 1, at(3)))[1].code == "terminal_conflict"
    assert step(gone, Fail(REF, A, 1, at(3)))[1].transition == "fail.terminal.exact_retry"


def test_lease_rejection_precedence_holder_then_fence_then_expiry():
    state = leased()
    assert step(state, Complete(REF, B, 2, C1, at(99)))[1].transition == "complete.wrong_holder"
    assert step(state, Complete(REF, A, 2, C1, at(99)))[1].transition == "complete.stale_fence"
    assert step(state, Complete(REF, A, 1, C1, at(99)))[1].transition == "complete.expired"


def test_conflict_precedence_type_then_version_then_payload():
    state = registered()
    both = attrs.evolve(REF, command_type="refund_order", endpoint_schema_version=7, payload="{}")
    assert step(state, Register(both, at(1)))[1].transition == "register.existing.conflict_type"
    version_and_payload = attrs.evolve(REF, endpoint_schema_version=7, payload="{}")
    assert step(state, Register(version_and_payload, at(1)))[1].transition == "register.existing.conflict_version"


def test_identity_comparison_comes_before_operation_rules():
    # A conflicting acquire on a terminal command is a conflict, not a terminal observation.
    assert step(succeeded(), Acquire(CONFLICTING["version"], A, at(3)))[1].code == "command_conflict"
    # ... and a conflicting complete at an earlier clock is a conflict, not unavailable.
    assert step(leased(), Complete(CONFLICTING["type"], A, 1, C1, at(-9)))[1].code == "command_conflict"


def test_commit_failure():
    state = registered()
    # A write that fails to commit applies nothing.
    new, result = step(state, Acquire(REF, A, at(1), commit_fails=True))
    assert new is state and result.code == "journal_unavailable" and result.transition == "any.commit_failed"
    new, result = step(JournalState.empty(), Register(REF, at(0), commit_fails=True))
    assert new == JournalState.empty() and result.code == "journal_unavailable"
    # A read-only success also answers unavailable.
    _, result = step(leased(), Acquire(REF, A, at(2), commit_fails=True))
    assert result.transition == "any.commit_failed"
    # Errors raised inside the callback are returned unchanged.
    for state, op, transition in [
        (registered(), Register(CONFLICTING["type"], at(1), commit_fails=True), "register.existing.conflict_type"),
        (leased(), Complete(REF, B, 1, C1, at(2), commit_fails=True), "complete.wrong_holder"),
        (registered(), Acquire(REF, A, at(-1), commit_fails=True), "acquire.first_clock_before_registration"),
        (corrupt(), Fail(REF, A, 1, at(2), commit_fails=True), "any.corrupt"),
        (JournalState.empty(), Fail(REF, A, 1, at(2), commit_fails=True), "fail.unregistered"),
    ]:
        new, result = step(state, op)
        assert new is state and result.transition == transition and not result.wrote


# --- Golden documents -------------------------------------------------------------------------------


def test_identity_vector_paths_and_fingerprints():
    assert H == V0["commandKeyHash"]
    assert REF.payload == V0["canonicalPayloadJson"]
    assert REF.payload_fingerprint == V0["payloadFingerprint"]
    assert root_path(H) == V0["rootPath"]
    assert lifecycle_path(H) == V0["lifecyclePath"]
    assert audit_path(H, 1) == V0["registrationAuditPath"]
    assert audit_path(H, 2) == V0["firstLeaseAuditPath"]


def test_golden_documents_first_vector():
    t_reg, t_lease, t_done = at(0), at(1, 500), at(2, 7)
    state = run(Register(REF, t_reg))
    root = {
        "journalSchemaVersion": 1,
        "commandIdentityVersion": 1,
        "endpointSchemaVersion": 1,
        "environment": "test",
        "callerScopeKind": "firebase_uid",
        "commandType": "create_checkout_session",
        "payloadFingerprint": V0["payloadFingerprint"],
        "state": "registered",
        "revision": 1,
        "createdAt": t_reg,
        "updatedAt": t_reg,
    }
    audit1 = {
        "auditSchemaVersion": 1,
        "aggregateType": "commerce_command",
        "commandKeyHash": V0["commandKeyHash"],
        "commandRevision": 1,
        "eventType": "command_registered",
        "fromState": None,
        "toState": "registered",
        "environment": "test",
        "callerScopeKind": "firebase_uid",
        "commandType": "create_checkout_session",
        "occurredAt": t_reg,
    }
    assert documents(state) == {V0["rootPath"]: root, V0["registrationAuditPath"]: audit1}

    state = run(Acquire(REF, A, t_lease), state=state)
    expires = t_lease + timedelta(seconds=60)
    lifecycle = {
        "lifecycleSchemaVersion": 1,
        "commandKeyHash": V0["commandKeyHash"],
        "state": "leased",
        "commandRevision": 2,
        "fenceEpoch": 1,
        "leaseOwnerFingerprint": V0["leaseOwnerFingerprint"],
        "leaseAcquiredAt": t_lease,
        "leaseExpiresAt": expires,
        "createdAt": t_lease,
        "updatedAt": t_lease,
        "terminalCommitmentKind": None,
        "terminalCommitmentHash": None,
    }
    audit2 = {
        "auditSchemaVersion": 2,
        "aggregateType": "commerce_command",
        "commandKeyHash": V0["commandKeyHash"],
        "commandRevision": 2,
        "eventType": "command_lease_acquired",
        "fromState": "registered",
        "toState": "leased",
        "environment": "test",
        "callerScopeKind": "firebase_uid",
        "commandType": "create_checkout_session",
        "fenceEpoch": 1,
        "leaseExpiresAt": expires,
        "occurredAt": t_lease,
    }
    assert documents(state) == {
        V0["rootPath"]: root,
        V0["registrationAuditPath"]: audit1,
        V0["lifecyclePath"]: lifecycle,
        V0["firstLeaseAuditPath"]: audit2,
    }

    state = run(Complete(REF, A, 1, C1, t_done), state=state)
    done = dict(
        lifecycle,
        state="succeeded",
        commandRevision=3,
        updatedAt=t_done,
        terminalCommitmentKind="business_record_digest",
        terminalCommitmentHash=V0["terminalCommitmentHash"],
    )
    audit3 = dict(
        audit2,
        commandRevision=3,
        eventType="command_succeeded",
        fromState="leased",
        toState="succeeded",
        occurredAt=t_done,
    )
    docs = documents(state)
    assert docs == {
        V0["rootPath"]: root,
        V0["registrationAuditPath"]: audit1,
        V0["lifecyclePath"]: done,
        V0["firstLeaseAuditPath"]: audit2,
        audit_path(H, 3): audit3,
    }
    assert len(root) == 11 and len(audit1) == 11 and len(done) == 12 and len(audit3) == 13
    assert all(v.tzinfo is not None for d in docs.values() for v in d.values() if isinstance(v, datetime))

    failed_state = run(Fail(REF, A, 1, t_done), state=run(Acquire(REF, A, t_lease), state=run(Register(REF, t_reg))))
    failed_docs = documents(failed_state)
    assert failed_docs[V0["lifecyclePath"]] == dict(
        lifecycle, state="failed_final", commandRevision=3, updatedAt=t_done
    )
    assert failed_docs[audit_path(H, 3)] == dict(audit3, eventType="command_failed_final", toState="failed_final")


# --- Faults ------------------------------------------------------------------------------------------

FAULT_STATES = {
    "registered": registered,
    "leased": leased,
    "taken_over": taken_over,
    "succeeded": succeeded,
    "failed": failed,
}


@pytest.mark.parametrize("kind", list(FaultKind), ids=lambda k: k.value)
@pytest.mark.parametrize("name", sorted(FAULT_STATES))
def test_fault_makes_an_invalid_record_and_every_call_unrecognized(kind, name):
    state = FAULT_STATES[name]()
    if not fault_applies(state, REF, kind):
        new, result = step(state, InjectFault(REF, kind))
        assert new is state and result.transition == "fault_not_applicable" and not result.wrote
        return
    new, result = step(state, InjectFault(REF, kind))
    assert result.transition == "fault_injected" and result.wrote and result.output is None
    docs = documents_for(new, H)
    if kind in VALID_FAULTS:
        assert isinstance(new.get(H), CommandRecord)
        assert record_problem(H, docs, environment="test", caller_scope_kind="firebase_uid") is None
        return
    assert isinstance(new.get(H), CorruptRecord)
    assert record_problem(H, docs, environment="test", caller_scope_kind="firebase_uid") is not None
    assert step(new, InjectFault(REF, kind))[1].transition == "fault_not_applicable"
    for op in (
        Register(REF, at(5)),
        Acquire(REF, A, at(5)),
        Acquire(REF, B, at(500)),
        Complete(REF, A, 1, C1, at(5)),
        Fail(REF, A, 1, at(5)),
        Register(CONFLICTING["payload"], at(5)),
    ):
        after, answer = step(new, op)
        assert after is new and answer.code == "unrecognized_record" and answer.transition == "any.corrupt"


def test_fault_preconditions():
    assert not fault_applies(JournalState.empty(), REF, FaultKind.MISSING_ROOT)
    reg = registered()
    assert fault_applies(reg, REF, FaultKind.PRESEEDED_NEXT_AUDIT)
    assert not fault_applies(reg, REF, FaultKind.MISSING_CURRENT_AUDIT)
    assert not fault_applies(reg, REF, FaultKind.REVISION_AT_MAXIMUM)
    assert not fault_applies(reg, REF, FaultKind.FENCE_AT_MAXIMUM)
    assert fault_applies(leased(), REF, FaultKind.REVISION_AT_MAXIMUM)
    assert not fault_applies(succeeded(), REF, FaultKind.REVISION_AT_MAXIMUM)
    assert not fault_applies(at_maximum(), REF, FaultKind.REVISION_AT_MAXIMUM)
    assert not fault_applies(at_maximum(), REF, FaultKind.PRESEEDED_NEXT_AUDIT)
    assert not fault_applies(corrupt(), REF, FaultKind.MISSING_ROOT)


def _fault_docs(state, kind):
    return documents_for(run(InjectFault(REF, kind), state=state), H)


def test_fault_documents():
    reg, lease = registered(), leased()
    reg_docs, lease_docs = documents(reg), documents(lease)
    root, a1, lc, a2 = root_path(H), audit_path(H, 1), lifecycle_path(H), audit_path(H, 2)

    assert _fault_docs(reg, FaultKind.MISSING_ROOT) == {a1: reg_docs[a1]}
    assert _fault_docs(lease, FaultKind.MISSING_REGISTRATION_AUDIT) == {k: v for k, v in lease_docs.items() if k != a1}
    assert _fault_docs(lease, FaultKind.ORPHAN_LIFECYCLE) == {lc: lease_docs[lc], a2: lease_docs[a2]}
    orphan = _fault_docs(reg, FaultKind.ORPHAN_LIFECYCLE)
    assert set(orphan) == {lc}
    assert orphan[lc]["leaseOwnerFingerprint"] == owner_fingerprint_of(H, FAULT_LEASE_ID)
    assert (
        record_problem(
            H,
            {
                lc: orphan[lc],
                root: reg_docs[root],
                a1: reg_docs[a1],
                a2: _fault_docs(reg, FaultKind.PRESEEDED_NEXT_AUDIT)[a2],
            },
        )
        is None
    )
    assert _fault_docs(lease, FaultKind.MISSING_CURRENT_AUDIT) == {k: v for k, v in lease_docs.items() if k != a2}

    preseeded = _fault_docs(reg, FaultKind.PRESEEDED_NEXT_AUDIT)[a2]
    assert (preseeded["auditSchemaVersion"], preseeded["eventType"]) == (2, "command_lease_acquired")
    preseeded3 = _fault_docs(lease, FaultKind.PRESEEDED_NEXT_AUDIT)[audit_path(H, 3)]
    assert (preseeded3["commandRevision"], preseeded3["fenceEpoch"]) == (3, 2)

    assert _fault_docs(reg, FaultKind.EXTRA_FIELD)[root]["unexpectedField"] == "unexpected"
    wrong = _fault_docs(reg, FaultKind.WRONG_TYPE)[root]["revision"]
    assert wrong is True
    assert _fault_docs(lease, FaultKind.WRONG_TYPE)[lc]["fenceEpoch"] == "1"
    assert _fault_docs(reg, FaultKind.FUTURE_VERSION)[root]["journalSchemaVersion"] == 2
    assert _fault_docs(lease, FaultKind.BAD_HASH)[lc]["commandKeyHash"] == H.upper()
    assert _fault_docs(reg, FaultKind.BAD_HASH)[root]["payloadFingerprint"] == REF.payload_fingerprint.upper()
    assert _fault_docs(lease, FaultKind.TIMESTAMP_REGRESSION)[lc]["createdAt"] == at(0) - US
    assert _fault_docs(reg, FaultKind.TIMESTAMP_REGRESSION)[root]["updatedAt"] == at(0) - US
    assert _fault_docs(reg, FaultKind.ENVIRONMENT_MISMATCH)[root]["environment"] == "staging"
    assert _fault_docs(lease, FaultKind.FENCE_AT_MAXIMUM)[lc]["fenceEpoch"] == MAX_REVISION


def test_revision_below_maximum_is_valid_and_leaves_room_for_one_finish_at_a_high_fence():
    state = run(InjectFault(REF, FaultKind.REVISION_BELOW_MAXIMUM), state=leased())
    docs = documents_for(state, H)
    assert set(docs) == {root_path(H), audit_path(H, 1), lifecycle_path(H), audit_path(H, MAX_REVISION - 1)}
    assert docs[lifecycle_path(H)]["fenceEpoch"] == MAX_REVISION - 2
    fence = int(str(MAX_REVISION - 2))  # another int object of the same value, as a caller's would be
    done, first = step(state, Complete(REF, A, fence, C1, at(2)))
    assert first.outcome == "terminal_succeeded" and first.wrote
    assert set(documents_for(done, H)) == set(docs) | {audit_path(H, MAX_REVISION)}
    again, retry = step(done, Complete(REF, A, fence, C1, at(3)))
    assert (retry.outcome, retry.wrote, again) == ("terminal_succeeded", False, done)
    assert not fault_applies(done, REF, FaultKind.REVISION_BELOW_MAXIMUM)


def test_revision_at_maximum_is_valid_but_cannot_mutate():
    state = at_maximum()  # A holds fence max-1 until T+61
    docs = documents_for(state, H)
    top = audit_path(H, MAX_REVISION)
    assert set(docs) == {root_path(H), audit_path(H, 1), lifecycle_path(H), top}
    assert docs[top]["eventType"] == "command_lease_taken_over"
    assert docs[top]["fenceEpoch"] == MAX_REVISION - 1 == docs[lifecycle_path(H)]["fenceEpoch"]
    assert top.endswith("_9999999999")
    # Read-only answers still work.
    _, mine = step(state, Acquire(REF, A, at(2)))
    assert mine.output["fenceEpoch"] == MAX_REVISION - 1
    assert step(state, Acquire(REF, B, at(2)))[1].outcome == "lease_busy"
    assert step(state, Register(REF, at(2)))[1].outcome == "registered_existing"
    assert step(state, Complete(REF, B, MAX_REVISION - 1, C1, at(2)))[1].code == "lease_rejected"
    # Mutations overflow.
    assert step(state, Acquire(REF, A, at(61)))[1].transition == "acquire.overflow"
    assert step(state, Complete(REF, A, MAX_REVISION - 1, C1, at(2)))[1].transition == "complete.overflow"
    assert step(state, Fail(REF, A, MAX_REVISION - 1, at(2)))[1].transition == "fail.overflow"


def test_faults_touch_only_their_key():
    other = attrs.evolve(REF, command_id="16fd2706-8baf-433b-82eb-8c7fada847da")
    state = run(Register(other, at(0)), state=leased())
    new = run(InjectFault(REF, FaultKind.MISSING_ROOT), state=state)
    assert documents_for(new, other.key_hash) == documents_for(state, other.key_hash)
    assert new.get(other.key_hash) is state.get(other.key_hash)


# --- State and descriptions ----------------------------------------------------------------------------


def test_state_is_hashable_and_canonical():
    other = attrs.evolve(REF, command_id="16fd2706-8baf-433b-82eb-8c7fada847da")
    one = run(Register(REF, at(0)), Register(other, at(0)))
    two = run(Register(other, at(0)), Register(REF, at(0)))
    assert one == two and hash(one) == hash(two)
    assert len({one, two, JournalState.empty()}) == 2


def test_operations_require_aware_utc_times():
    with pytest.raises(ValueError):
        Register(REF, datetime(2026, 1, 1))
    with pytest.raises(ValueError):
        Register(REF, datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=1))))


def test_descriptions():
    assert describe_op(Acquire(REF, A, at(60)), epoch=T0) == (
        f"acquire(cmd={H[:8]} [create_checkout_session v1 p={REF.payload_fingerprint[:8]}] "
        f"holder={owner_fingerprint_of(H, A)[:8]} at T+60.000000s)"
    )
    text = describe_op(Complete(REF, A, 3, C1, at(0) - US, commit_fails=True), epoch=T0)
    assert "complete(" in text and "fence=3" in text and "T-0.000001s" in text and "COMMIT-FAILS" in text
    assert describe_op(Fail(REF, A, 1, at(1))).startswith("fail(") and "2026-03-01T12:00:01+00:00" in describe_op(
        Fail(REF, A, 1, at(1))
    )
    assert describe_op(InjectFault(REF, FaultKind.BAD_HASH)) == f"fault(bad_hash cmd={H[:8]})"
    assert describe_state(JournalState.empty()) == "<empty journal>"
    text = describe_state(taken_over(), epoch=T0)
    assert f"{H[:8]}: registered at T+0.000000s" in text
    assert "leased rev=3 fence=2" in text and "expires=T+121.000000s" in text and "audits 1..3" in text
    assert "CORRUPT" in describe_state(corrupt())
    assert H not in describe_state(corrupt()) and H not in describe_state(succeeded())


def test_result_matches_reference_answers():
    _, lease = step(registered(), Acquire(REF, A, at(1)))
    assert lease.matches(lease.output) and not lease.matches("journal_unavailable")
    assert not lease.matches(dict(lease.output, fenceEpoch=2))
    _, error = step(JournalState.empty(), Acquire(REF, A, at(1)))
    assert error.matches("command_not_registered") and not error.matches({"outcome": "lease_busy"})
    assert lease.answer == ("output", "lease_acquired", 1, at(61)) and error.answer == ("error", error.code)


def test_unknown_transition_ids_are_refused():
    from model.journal.results import fixed

    with pytest.raises(ValueError):
        fixed("acquire.nonsense", code="journal_unavailable")
