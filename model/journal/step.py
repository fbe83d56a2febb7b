"""`step(state, op) -> (new_state, result)`: the journal's sequential specification.

Follows docs/journal-decisions.md: pair presence, structural validity (a corrupt key answers
unrecognized_record), identity comparison, then the operation rules. Never mutates its input; only the
stepped key's record is replaced.
"""

from __future__ import annotations

from .constants import (
    COMMAND_CONFLICT,
    COMMAND_NOT_REGISTERED,
    EV_FAILED_FINAL,
    EV_LEASE_ACQUIRED,
    EV_LEASE_TAKEN_OVER,
    EV_SUCCEEDED,
    FAILED_FINAL,
    JOURNAL_UNAVAILABLE,
    LEASE_BUSY,
    LEASE_DURATION,
    LEASE_REJECTED,
    LEASED,
    MAX_REVISION,
    REGISTERED,
    REGISTERED_EXISTING,
    REGISTERED_NEW,
    SUCCEEDED,
    TERMINAL_COMMITMENT_KIND,
    TERMINAL_CONFLICT,
    TERMINAL_OUTCOME,
    UNRECOGNIZED_RECORD,
)
from .faults import apply_fault
from .ops import Acquire, CommandRef, Complete, Fail, InjectFault, Operation, Register
from .results import Result, fixed, lease_result
from .state import AuditEvent, CommandRecord, JournalState, Lifecycle, Record, Registration

_CORRUPT = fixed("any.corrupt", code=UNRECOGNIZED_RECORD)
_COMMIT_FAILED = fixed("any.commit_failed", code=JOURNAL_UNAVAILABLE)


def _conflicts(reg: Registration, ref: CommandRef) -> bool:
    return (
        reg.command_type != ref.command_type
        or reg.endpoint_schema_version != ref.endpoint_schema_version
        or reg.payload_fingerprint != ref.payload_fingerprint
    )


def _precheck(record: Record | None, ref: CommandRef, op_name: str) -> Result | None:
    """Steps 2-4 of the precedence for acquire/complete/fail."""
    if record is None:
        return fixed(f"{op_name}.unregistered", code=COMMAND_NOT_REGISTERED)
    if record.corrupt:
        return _CORRUPT
    if _conflicts(record.registration, ref):
        return fixed(f"{op_name}.conflict", code=COMMAND_CONFLICT)
    return None


def _register(state: JournalState, op: Register) -> tuple[JournalState, Result]:
    ref = op.command
    h = ref.key_hash
    record = state.get(h)
    if record is None:
        reg = Registration(
            ref.command_type,
            ref.endpoint_schema_version,
            ref.payload_fingerprint,
            ref.environment,
            ref.caller_scope_kind,
            op.now,
        )
        return state.with_record(h, CommandRecord(reg)), fixed(
            "register.absent.new", outcome=REGISTERED_NEW, wrote=True
        )
    if record.corrupt:
        return state, _CORRUPT
    reg = record.registration
    if reg.command_type != ref.command_type:
        return state, fixed("register.existing.conflict_type", code=COMMAND_CONFLICT)
    if reg.endpoint_schema_version != ref.endpoint_schema_version:
        return state, fixed("register.existing.conflict_version", code=COMMAND_CONFLICT)
    if reg.payload_fingerprint != ref.payload_fingerprint:
        return state, fixed("register.existing.conflict_payload", code=COMMAND_CONFLICT)
    return state, fixed("register.existing.same", outcome=REGISTERED_EXISTING)


def _acquire(state: JournalState, op: Acquire) -> tuple[JournalState, Result]:
    ref = op.command
    h = ref.key_hash
    record = state.get(h)
    early = _precheck(record, ref, "acquire")
    if early is not None:
        return state, early
    now = op.now
    lc = record.lifecycle
    if lc is None:
        if now < record.registration.created_at:
            return state, fixed("acquire.first_clock_before_registration", code=JOURNAL_UNAVAILABLE)
        expires = now + LEASE_DURATION
        new_lc = Lifecycle(LEASED, 2, 1, op.owner_fingerprint, now, expires, now, now)
        event = AuditEvent(2, EV_LEASE_ACQUIRED, REGISTERED, LEASED, 1, expires, now)
        new_record = CommandRecord(record.registration, new_lc, record.audits + (event,))
        return state.with_record(h, new_record), lease_result("acquire.first", 1, expires, True)
    if lc.state != LEASED:
        return state, fixed(f"acquire.terminal.{lc.state}", outcome=TERMINAL_OUTCOME[lc.state])
    owner = op.owner_fingerprint
    if now < lc.expires_at:
        if lc.owner_fingerprint == owner:
            return state, lease_result("acquire.active.same_holder", lc.fence_epoch, lc.expires_at, False)
        return state, fixed("acquire.active.other_holder", outcome=LEASE_BUSY)
    if lc.revision >= MAX_REVISION:
        return state, fixed("acquire.overflow", code=UNRECOGNIZED_RECORD)
    transition = (
        "acquire.expired.takeover_same_id" if lc.owner_fingerprint == owner else "acquire.expired.takeover_other"
    )
    revision = lc.revision + 1
    fence = lc.fence_epoch + 1
    expires = now + LEASE_DURATION
    new_lc = Lifecycle(LEASED, revision, fence, owner, now, expires, lc.created_at, now)
    event = AuditEvent(revision, EV_LEASE_TAKEN_OVER, LEASED, LEASED, fence, expires, now)
    new_record = CommandRecord(record.registration, new_lc, record.audits + (event,))
    return state.with_record(h, new_record), lease_result(transition, fence, expires, True)


def _finish(
    state: JournalState,
    op: Complete | Fail,
    op_name: str,
    target: str,
    commitment: str | None,
) -> tuple[JournalState, Result]:
    """Complete (target succeeded, commitment hash) or fail (target failed_final, no commitment)."""
    ref = op.command
    h = ref.key_hash
    record = state.get(h)
    early = _precheck(record, ref, op_name)
    if early is not None:
        return state, early
    now = op.now
    owner = op.owner_fingerprint
    fence = op.expected_fence_epoch
    lc = record.lifecycle
    exact_retry = (
        lc is not None
        and lc.state == target
        and lc.owner_fingerprint == owner
        and lc.fence_epoch == fence
        and lc.terminal_hash == commitment
    )
    outcome = TERMINAL_OUTCOME[target]
    stored_time = record.registration.created_at if lc is None else lc.updated_at
    if now < stored_time:
        if exact_retry:
            return state, fixed(f"{op_name}.clock_earlier.exact_retry", outcome=outcome)
        return state, fixed(f"{op_name}.clock_earlier.unavailable", code=JOURNAL_UNAVAILABLE)
    if lc is None:
        return state, fixed(f"{op_name}.no_lease", code=LEASE_REJECTED)
    if lc.state != LEASED:
        if exact_retry:
            return state, fixed(f"{op_name}.terminal.exact_retry", outcome=outcome)
        return state, fixed(f"{op_name}.terminal.conflict", code=TERMINAL_CONFLICT)
    if lc.owner_fingerprint != owner:
        return state, fixed(f"{op_name}.wrong_holder", code=LEASE_REJECTED)
    if lc.fence_epoch != fence:
        return state, fixed(f"{op_name}.stale_fence", code=LEASE_REJECTED)
    if now >= lc.expires_at:
        return state, fixed(f"{op_name}.expired", code=LEASE_REJECTED)
    if lc.revision >= MAX_REVISION:
        return state, fixed(f"{op_name}.overflow", code=UNRECOGNIZED_RECORD)
    revision = lc.revision + 1
    new_lc = Lifecycle(
        target,
        revision,
        lc.fence_epoch,
        lc.owner_fingerprint,
        lc.acquired_at,
        lc.expires_at,
        lc.created_at,
        now,
        None if commitment is None else TERMINAL_COMMITMENT_KIND,
        commitment,
    )
    event_type = EV_SUCCEEDED if target == SUCCEEDED else EV_FAILED_FINAL
    event = AuditEvent(revision, event_type, LEASED, target, lc.fence_epoch, lc.expires_at, now)
    new_record = CommandRecord(record.registration, new_lc, record.audits + (event,))
    return state.with_record(h, new_record), fixed(f"{op_name}.exact", outcome=outcome, wrote=True)


def _complete(state: JournalState, op: Complete) -> tuple[JournalState, Result]:
    return _finish(state, op, "complete", SUCCEEDED, op.commitment_hash)


def _fail(state: JournalState, op: Fail) -> tuple[JournalState, Result]:
    return _finish(state, op, "fail", FAILED_FINAL, None)


_HANDLERS = {Register: _register, Acquire: _acquire, Complete: _complete, Fail: _fail}


def step(state: JournalState, op: Operation) -> tuple[JournalState, Result]:
    """Apply one operation atomically; returns the new state (or `state` itself) and the result."""
    handler = _HANDLERS.get(type(op))
    if handler is None:
        if isinstance(op, InjectFault):
            return apply_fault(state, op)
        raise TypeError(f"not a journal operation: {type(op).__name__}")
    new_state, result = handler(state, op)
    if op.commit_fails and result.code is None:
        # The commit fails definitely: nothing applied. In-callback errors never reach the commit.
        return state, _COMMIT_FAILED
    return new_state, result
