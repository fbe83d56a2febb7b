"""`step(state, op) -> (new_state, result)`: the gateway journal's sequential specification.

One function per operation; inside each, the rows of docs/gateway-contract.md section 8 in precedence order,
top to bottom (the first that answers wins). `_precheck` is precedence steps 1-5 (namespace declaration,
presence, structure, identity); `_write` carries the two overlays of every writing row (an earlier clock
reading, the revision/fence maximum). Never mutates its input; a read-only answer returns `state` itself.
"""

from __future__ import annotations

import attrs

from . import constants as c
from .constants import floor_ms, ms_time
from .faults import InjectFault, apply_fault
from .ops import (
    ApplyEvidence,
    Begin,
    ClaimConsume,
    CloseWindow,
    Get,
    ManualTerminal,
    Operation,
    RecordConsume,
    ReportSubmission,
    TakeProviderIntent,
    TakeReconcileLease,
)
from .results import Result, answer, error
from .settle import apply_evidence, close_window, manual_terminal
from .state import Event, GatewayState, Journal
from .writes import elapsed, held_at, is_holder, key_of, lease, precheck, undeclared, write

_COMMIT_FAILED = error("any.commit_failed", c.GATEWAY_UNAVAILABLE)
_BEFORE_PROVIDER = (c.BEGUN, c.CONSUME_INTENT, c.CONSUMED)


def _begin(state: GatewayState, op: Begin):
    ref = op.journal
    refused = undeclared(op)
    if refused is not None:
        return state, refused
    record = state.get(key_of(op))
    if record is None:
        j = Journal(
            journal_key=ref.journal_key,
            namespace_id=ref.namespace_id,
            gateway_binding_id=ref.gateway_binding_id,
            operation_id=ref.operation_id,
            provider=ref.provider,
            operation_identity=ref.operation_identity,
            provider_input_digest=ref.provider_input_digest,
            consume_idempotency_key=ref.consume_idempotency_key,
            provider_create_idempotency_key=ref.provider_create_idempotency_key,
            provider_confirm_idempotency_key=ref.provider_confirm_idempotency_key,
            state=c.BEGUN,
            revision=1,
            fence_epoch=0,
            created_at=op.now,
            updated_at=op.now,
        )
        event = Event(1, c.EV_BEGUN, None, c.BEGUN, 0, None, None, None, None, op.region, op.now)
        j = attrs.evolve(j, events=(event,))
        return state.with_record(key_of(op), j), answer("begin.new", c.BEGUN_NEW, j, wrote=True)
    j = precheck(state, op)
    if isinstance(j, Result):
        return state, j
    return state, answer("begin.existing", c.BEGUN_EXISTING, j)


def _get(state: GatewayState, op: Get):
    j = precheck(state, op)
    if isinstance(j, Result):
        return state, j
    return state, answer("get.stored", c.JOURNAL_STATE, j, lease_active=held_at(j, op.now))


def _claim(state: GatewayState, op: ClaimConsume):
    j = precheck(state, op)
    if isinstance(j, Result):
        return state, j
    now = op.now
    if j.state == c.BEGUN:
        return write(
            state,
            op,
            j,
            "claim.first",
            c.CONSUME_CLAIMED,
            c.EV_CONSUME_CLAIMED,
            grant=True,
            state=c.CONSUME_INTENT,
            consume_intent_at=now,
            **lease(c.CONSUME, op, now + c.CONSUME_LEASE),
        )
    if j.state != c.CONSUME_INTENT:
        return state, answer("claim.passed", c.OBSERVED, j)
    if now < j.lease_expires_at:
        if j.lease_owner_fingerprint != op.owner_fingerprint:
            return state, answer("claim.held_other", c.PENDING, j)
        if j.fence_epoch == 1:
            return state, answer("claim.held_same", c.CONSUME_CLAIMED, j)
        return state, answer("claim.held_same_recovery", c.CONSUME_RECOVERY_CLAIMED, j)
    # The response was lost: repeat the same transition (same key, consume_intent_at kept), never a new permit.
    return write(
        state,
        op,
        j,
        "claim.recovery",
        c.CONSUME_RECOVERY_CLAIMED,
        c.EV_CONSUME_RECOVERY,
        grant=True,
        **lease(c.CONSUME, op, now + c.CONSUME_LEASE),
    )


def _record_consume(state: GatewayState, op: RecordConsume):
    j = precheck(state, op)
    if isinstance(j, Result):
        return state, j
    a, now = op.answer, op.now
    same_lease = j.lease_kind == c.CONSUME and is_holder(j, op)
    if same_lease and j.state == c.CONSUMED and j.permit_group == a.permit_group:
        return state, answer("rcr.retry_consumed", c.OUT_CONSUMED, j)
    if same_lease and j.state == c.SWC and j.permit_group == a.permit_group:
        return state, answer("rcr.retry_closed", c.WINDOW_CLOSED, j)
    if j.state != c.CONSUME_INTENT or not is_holder(j, op):
        return state, error("rcr.no_lease", c.LEASE_REJECTED)
    if now >= j.lease_expires_at:
        return state, error("rcr.expired", c.LEASE_REJECTED)
    if a.idempotency_key != j.consume_idempotency_key or a.operation_identity != j.operation_identity:
        return state, error("rcr.mismatch", c.CONSUME_RESPONSE_MISMATCH)
    if a.kind == c.OTHER_STATE:
        return state, answer("rcr.unresolved", c.CONSUME_UNRESOLVED, j)
    if (
        a.settlement_deadline_at != a.transitioned_at + c.SETTLEMENT_WINDOW_MS
        or a.transitioned_at < floor_ms(j.consume_intent_at)
        or a.transitioned_at > floor_ms(now)
    ):
        return state, error("rcr.unbound", c.CONSUME_RESPONSE_MISMATCH)
    late = now >= ms_time(a.settlement_deadline_at)
    if a.kind == c.FRESH and late:
        return state, error("rcr.fresh_not_future", c.CONSUME_RESPONSE_MISMATCH)
    permit = {
        "consume_transition_id": a.transition_id,
        "permit_id": a.permit_id,
        "permit_digest": a.permit_digest,
        "consume_transitioned_at": a.transitioned_at,
        "settlement_deadline_at": a.settlement_deadline_at,
    }
    if not late:
        return write(state, op, j, "rcr.consumed", c.OUT_CONSUMED, c.EV_CONSUME_RECORDED, state=c.CONSUMED, **permit)
    # A correctly bounded replay whose deadline passed while the response was lost: closed, never unlocked.
    return write(state, op, j, "rcr.replay_elapsed", c.WINDOW_CLOSED, c.EV_WINDOW_CLOSED, state=c.SWC, **permit)


def _take_provider_intent(state: GatewayState, op: TakeProviderIntent):
    j = precheck(state, op)
    if isinstance(j, Result):
        return state, j
    now = op.now
    if j.state == c.CONSUMED:
        if not elapsed(j, now):
            expires = min(now + c.PROVIDER_LEASE, ms_time(j.settlement_deadline_at))
            return write(
                state,
                op,
                j,
                "tpi.first",
                c.PROVIDER_INTENT_TAKEN,
                c.EV_PROVIDER_INTENT,
                grant=True,
                state=c.PROVIDER_INTENT,
                provider_intent_at=now,
                **lease(c.PROVIDER, op, expires),
            )
        return write(state, op, j, "tpi.window_elapsed", c.WINDOW_CLOSED, c.EV_WINDOW_CLOSED, state=c.SWC)
    if j.state == c.PROVIDER_INTENT:
        if now < j.lease_expires_at:
            if j.lease_owner_fingerprint == op.owner_fingerprint:
                return state, answer("tpi.held_same", c.PROVIDER_INTENT_TAKEN, j)
            return state, answer("tpi.held_other", c.PENDING, j)
        return state, answer("tpi.abandoned", c.RECONCILIATION_REQUIRED, j)  # never resubmitted
    if j.state in (c.RECONCILE_INTENT, c.OUTCOME_UNKNOWN):
        return state, answer("tpi.reconciling", c.RECONCILIATION_REQUIRED, j)
    if j.state in (c.BEGUN, c.CONSUME_INTENT):
        return state, answer("tpi.locked", c.PENDING, j)
    return state, answer("tpi.closed", c.OBSERVED, j)


def _report(state: GatewayState, op: ReportSubmission):
    j = precheck(state, op)
    if isinstance(j, Result):
        return state, j
    if j.lease_kind == c.PROVIDER and is_holder(j, op) and j.claim_id is not None:
        if j.report == op.report:
            return state, answer("rps.retry", c.SUBMISSION_REPORTED, j)
        return state, error("rps.conflict", c.REPORT_CONFLICT)
    if j.state != c.PROVIDER_INTENT or not is_holder(j, op):
        return state, error("rps.no_lease", c.LEASE_REJECTED)
    if op.now >= j.lease_expires_at:
        return state, error("rps.expired", c.LEASE_REJECTED)
    # A hint opens verification; it does not decide the state (G19).
    return write(
        state,
        op,
        j,
        "rps.first",
        c.SUBMISSION_REPORTED,
        c.EV_REPORTED,
        claim_id=op.claim_id,
        provider_submission_id=op.provider_submission_id,
        caller_outcome=op.caller_outcome,
        submission_reported_at=op.now,
        payment_reference=op.payment_reference,
        evidence_class=c.CALLER_ASSERTED,
        independent_verification=False,
    )


def _take_reconcile_lease(state: GatewayState, op: TakeReconcileLease):
    j = precheck(state, op)
    if isinstance(j, Result):
        return state, j
    now = op.now
    new_lease = lease(c.RECONCILE, op, now + c.RECONCILE_LEASE)
    if j.state == c.PROVIDER_INTENT:
        if now >= j.lease_expires_at:
            return write(
                state,
                op,
                j,
                "trl.from_abandoned",
                c.RECONCILE_LEASE_TAKEN,
                c.EV_RECONCILE,
                grant=True,
                state=c.RECONCILE_INTENT,
                reconciliation_started_at=now,
                **new_lease,
            )
        return state, answer("trl.submission_active", c.PENDING, j)  # an active submission is never overwritten
    if j.state == c.RECONCILE_INTENT:
        if now < j.lease_expires_at:
            if j.lease_owner_fingerprint == op.owner_fingerprint:
                return state, answer("trl.held_same", c.RECONCILE_LEASE_TAKEN, j)
            return state, answer("trl.held_other", c.PENDING, j)
        return write(
            state, op, j, "trl.takeover", c.RECONCILE_LEASE_TAKEN, c.EV_RECONCILE_TAKEOVER, grant=True, **new_lease
        )
    if j.state == c.OUTCOME_UNKNOWN:
        return write(
            state,
            op,
            j,
            "trl.resume",
            c.RECONCILE_LEASE_TAKEN,
            c.EV_RECONCILE,
            grant=True,
            state=c.RECONCILE_INTENT,
            **new_lease,
        )
    if j.state in _BEFORE_PROVIDER:
        return state, error("trl.no_attempt", c.NOT_APPLICABLE)
    return state, answer("trl.closed", c.OBSERVED, j)


_HANDLERS = {
    Begin: _begin,
    Get: _get,
    ClaimConsume: _claim,
    RecordConsume: _record_consume,
    TakeProviderIntent: _take_provider_intent,
    ReportSubmission: _report,
    TakeReconcileLease: _take_reconcile_lease,
    ApplyEvidence: apply_evidence,
    ManualTerminal: manual_terminal,
    CloseWindow: close_window,
    InjectFault: apply_fault,
}


def step(state: GatewayState, op: Operation) -> tuple[GatewayState, Result]:
    """Apply one operation atomically; returns the new state (or `state` itself) and the result."""
    handler = _HANDLERS.get(type(op))
    if handler is None:
        raise TypeError(f"not a gateway operation: {type(op).__name__}")
    new_state, result = handler(state, op)
    if getattr(op, "commit_fails", False) and result.code is None:
        # The commit fails definitely: nothing applied. Errors decided in the callback never reach the commit.
        return state, _COMMIT_FAILED
    return new_state, result
