"""The decisions: for one call and the parsed stored record, what to answer and what to write.

Pure: no Firestore, no clock (the call carries `now`), no randomness. Each function is one operation's
rows of docs/gateway-contract.md ("Transition table") in precedence order; `_write` carries the two
overlays of every writing row (an earlier clock reading never writes; the revision/fence maximum is
`unrecognized_record`). Errors are raised as GatewayError.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import constants as c
from .errors import GatewayError
from .inputs import PreparedJournal
from .outputs import GatewayOutput
from .records import RECORD_FIELDS

Record = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Call:
    operation: str
    journal: PreparedJournal
    now: datetime | None  # filled in after validation (the clock is read last)
    owner: str | None = None  # the caller's lease owner fingerprint
    fence: int | None = None  # the caller's expected fence epoch
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decision:
    output: GatewayOutput
    record: Record | None = None  # the record to store, when the call writes
    event: Record | None = None  # the event to create with it
    begins: bool = False  # the record is created, not replaced


def _fail(code: str) -> GatewayError:
    return GatewayError(code)


def _answer(outcome: str, r: Record, **extra: Any) -> Decision:
    return Decision(GatewayOutput.of(outcome, r, **extra))


def _write(call: Call, r: Record, outcome: str, event_type: str, *, grant: bool = False, **changes: Any) -> Decision:
    now = call.now
    if now < r["updated_at"]:
        raise _fail("gateway_unavailable")  # an earlier reading may observe, never decide
    if r["revision"] >= c.MAX_REVISION or (grant and r["fence_epoch"] >= c.MAX_FENCE):
        raise _fail("unrecognized_record")
    new = {
        **r,
        **changes,
        "revision": r["revision"] + 1,
        "fence_epoch": r["fence_epoch"] + int(grant),
        "updated_at": now,
    }
    return Decision(GatewayOutput.of(outcome, new), new, _event(call, new, event_type, r["state"]))


def _event(call: Call, r: Record, event_type: str, from_state: str | None) -> Record:
    return {
        "schema_version": c.SCHEMA_VERSION,
        "journal_key": r["journal_key"],
        "revision": r["revision"],
        "event_type": event_type,
        "from_state": from_state,
        "to_state": r["state"],
        "fence_epoch": r["fence_epoch"],
        "lease_kind": r["lease_kind"],
        "lease_expires_at": r["lease_expires_at"],
        "evidence_class": r["evidence_class"],
        "independent_verification": r["independent_verification"],
        "region": call.journal.region,
        "occurred_at": r["updated_at"],
    }


def _lease(call: Call, kind: str, expires: datetime) -> dict[str, Any]:
    return {
        "lease_kind": kind,
        "lease_owner_fingerprint": call.owner,
        "lease_acquired_at": call.now,
        "lease_expires_at": expires,
    }


def _held(r: Record, now: datetime) -> bool:
    kind = r["lease_kind"]
    return kind is not None and c.LEASE_STATE[kind] == r["state"] and now < r["lease_expires_at"]


def _holder(r: Record, call: Call) -> bool:
    return r["lease_owner_fingerprint"] == call.owner and r["fence_epoch"] == call.fence


def _elapsed(r: Record, now: datetime) -> bool:
    return now >= c.ms_time(r["settlement_deadline_at"])


def _begin(call: Call, r: Record | None) -> Decision:
    if r is not None:
        return _answer("begun_existing", r)
    j, now = call.journal, call.now
    new: Record = dict.fromkeys(RECORD_FIELDS)
    new.update(
        schema_version=c.SCHEMA_VERSION,
        journal_key=j.journal_key,
        namespace_id=j.namespace_id,
        gateway_binding_id=j.gateway_binding_id,
        operation_id=j.operation_id,
        provider=j.provider,
        operation_identity=j.operation_identity,
        provider_input_digest=j.provider_input_digest,
        consume_idempotency_key=j.consume_idempotency_key,
        provider_create_idempotency_key=j.provider_create_idempotency_key,
        provider_confirm_idempotency_key=j.provider_confirm_idempotency_key,
        state="BEGUN",
        revision=1,
        fence_epoch=0,
        created_at=now,
        updated_at=now,
    )
    return Decision(GatewayOutput.of("begun_new", new), new, _event(call, new, "journal_begun", None), begins=True)


def _get(call: Call, r: Record) -> Decision:
    return _answer("journal_state", r, lease_active=_held(r, call.now))


def _claim(call: Call, r: Record) -> Decision:
    now, state = call.now, r["state"]
    if state == "BEGUN":
        return _write(
            call,
            r,
            "consume_claimed",
            "consume_intent_claimed",
            grant=True,
            state="CONSUME_INTENT",
            consume_intent_at=now,
            **_lease(call, "consume", now + c.CONSUME_LEASE),
        )
    if state != "CONSUME_INTENT":
        return _answer("observed", r)
    if now < r["lease_expires_at"]:
        if r["lease_owner_fingerprint"] != call.owner:
            return _answer("pending", r)
        return _answer("consume_claimed" if r["fence_epoch"] == 1 else "consume_recovery_claimed", r)
    # A lost response: the same transition again (same key, consume_intent_at kept), never a new permit.
    return _write(
        call,
        r,
        "consume_recovery_claimed",
        "consume_recovery_claimed",
        grant=True,
        **_lease(call, "consume", now + c.CONSUME_LEASE),
    )


def _permit_of(a: dict[str, Any]) -> tuple:
    return (a["transition_id"], a["permit_id"], a["permit_digest"], a["transitioned_at"], a["settlement_deadline_at"])


def _stored_permit(r: Record) -> tuple:
    return (
        r["consume_transition_id"],
        r["permit_id"],
        r["permit_digest"],
        r["consume_transitioned_at"],
        r["settlement_deadline_at"],
    )


def _record_consume(call: Call, r: Record) -> Decision:
    a, now = call.args["answer"], call.now
    retry = r["lease_kind"] == "consume" and _holder(r, call) and _stored_permit(r) == _permit_of(a)
    if retry and r["state"] == "CONSUMED":
        return _answer("consumed", r)
    if retry and r["state"] == "SUBMISSION_WINDOW_CLOSED":
        return _answer("submission_window_closed", r)
    if r["state"] != "CONSUME_INTENT" or not _holder(r, call) or now >= r["lease_expires_at"]:
        raise _fail("lease_rejected")
    if a["idempotency_key"] != r["consume_idempotency_key"] or a["operation_identity"] != r["operation_identity"]:
        raise _fail("consume_response_mismatch")
    if a["kind"] == "OTHER_STATE":
        return _answer("consume_unresolved", r)
    moment = a["transitioned_at"]
    bound = a["settlement_deadline_at"] == moment + c.SETTLEMENT_WINDOW_MS
    if not bound or not c.floor_ms(r["consume_intent_at"]) <= moment <= c.floor_ms(now):
        raise _fail("consume_response_mismatch")
    late = now >= c.ms_time(a["settlement_deadline_at"])
    if a["kind"] == "FRESH" and late:
        raise _fail("consume_response_mismatch")
    permit = dict(
        zip(
            (
                "consume_transition_id",
                "permit_id",
                "permit_digest",
                "consume_transitioned_at",
                "settlement_deadline_at",
            ),
            _permit_of(a),
            strict=True,
        )
    )
    if not late:
        return _write(call, r, "consumed", "consume_recorded", state="CONSUMED", **permit)
    # A bounded replay whose deadline passed while the response was lost: closed, never unlocked.
    return _write(
        call, r, "submission_window_closed", "submission_window_closed", state="SUBMISSION_WINDOW_CLOSED", **permit
    )


def _take_provider_intent(call: Call, r: Record) -> Decision:
    now, state = call.now, r["state"]
    if state == "CONSUMED":
        if _elapsed(r, now):
            return _write(
                call, r, "submission_window_closed", "submission_window_closed", state="SUBMISSION_WINDOW_CLOSED"
            )
        expires = min(now + c.PROVIDER_LEASE, c.ms_time(r["settlement_deadline_at"]))
        return _write(
            call,
            r,
            "provider_intent_taken",
            "provider_intent_taken",
            grant=True,
            state="PROVIDER_INTENT",
            provider_intent_at=now,
            **_lease(call, "provider", expires),
        )
    if state == "PROVIDER_INTENT":
        if now >= r["lease_expires_at"]:
            return _answer("reconciliation_required", r)  # abandoned: reconciled, never resubmitted
        if r["lease_owner_fingerprint"] == call.owner:
            return _answer("provider_intent_taken", r)
        return _answer("pending", r)
    if state in ("RECONCILE_INTENT", "OUTCOME_UNKNOWN"):
        return _answer("reconciliation_required", r)
    if state in ("BEGUN", "CONSUME_INTENT"):
        return _answer("pending", r)
    return _answer("observed", r)


def _report(call: Call, r: Record) -> Decision:
    report = call.args["report"]  # (claim_id, provider_submission_id, payment_reference, caller_outcome)
    stored = (r["claim_id"], r["provider_submission_id"], r["payment_reference"], r["caller_outcome"])
    if r["lease_kind"] == "provider" and _holder(r, call) and r["claim_id"] is not None:
        if stored == report:
            return _answer("submission_reported", r)
        raise _fail("report_conflict")
    if r["state"] != "PROVIDER_INTENT" or not _holder(r, call) or call.now >= r["lease_expires_at"]:
        raise _fail("lease_rejected")
    claim_id, submission_id, payment_reference, caller_outcome = report
    return _write(
        call,
        r,
        "submission_reported",
        "provider_submission_reported",
        claim_id=claim_id,
        provider_submission_id=submission_id,
        caller_outcome=caller_outcome,
        submission_reported_at=call.now,
        payment_reference=payment_reference,
        evidence_class=c.CALLER_ASSERTED,
        independent_verification=False,
    )


def _take_reconcile_lease(call: Call, r: Record) -> Decision:
    now, state = call.now, r["state"]
    lease = _lease(call, "reconcile", now + c.RECONCILE_LEASE)
    if state == "PROVIDER_INTENT":
        if now < r["lease_expires_at"]:
            return _answer("pending", r)  # an active submission is never overwritten
        return _write(
            call,
            r,
            "reconcile_lease_taken",
            "reconcile_lease_taken",
            grant=True,
            state="RECONCILE_INTENT",
            reconciliation_started_at=now,
            **lease,
        )
    if state == "RECONCILE_INTENT":
        if now < r["lease_expires_at"]:
            return _answer("reconcile_lease_taken" if r["lease_owner_fingerprint"] == call.owner else "pending", r)
        return _write(call, r, "reconcile_lease_taken", "reconcile_lease_taken_over", grant=True, **lease)
    if state == "OUTCOME_UNKNOWN":
        return _write(
            call, r, "reconcile_lease_taken", "reconcile_lease_taken", grant=True, state="RECONCILE_INTENT", **lease
        )
    if state in ("BEGUN", "CONSUME_INTENT", "CONSUMED"):
        raise _fail("not_applicable")
    return _answer("observed", r)


def _same(values: tuple, others: tuple) -> bool:
    return all(type(a) is type(b) and a == b for a, b in zip(values, others, strict=True))  # True is not 1


def _apply_evidence(call: Call, r: Record) -> Decision:
    e, now, state = call.args["evidence"], call.now, r["state"]
    stored = (
        r["evidence_class"],
        r["independent_verification"],
        r["evidence_verdict"],
        r["submission_fenced"],
        r["terminal_receipt_digest"],
        r["payment_reference"],
        r["operation_identity"],
    )
    given = (
        e["evidence_class"],
        e["independent_verification"],
        e["verdict"],
        e["submission_fenced"],
        e["receipt_digest"],
        e["payment_reference"],
        e["operation_identity"],
    )
    if _holder(r, call) and _same(stored, given):
        if state == "COMMIT" and r["terminal_path"] != "manual":
            return _answer("committed", r)
        if state == "RELEASE" and r["terminal_path"] != "manual":
            return _answer("released", r)
        if state == "OUTCOME_UNKNOWN":
            return _answer("outcome_unknown", r)
    if state in c.FINAL:
        raise _fail("terminal_conflict")
    if state not in ("PROVIDER_INTENT", "RECONCILE_INTENT") or not _holder(r, call) or now >= r["lease_expires_at"]:
        raise _fail("lease_rejected")
    owner_path = state == "PROVIDER_INTENT"
    if owner_path and r["claim_id"] is None:
        raise _fail("submission_not_reported")
    verified = c.VERIFIED_CLASS[r["provider"]]
    if e["operation_identity"] != r["operation_identity"] or e["evidence_class"] not in (c.CALLER_ASSERTED, verified):
        raise _fail("evidence_mismatch")
    if (
        e["evidence_class"] != verified
        or e["independent_verification"] is not True
        or e["verdict"] not in (c.DECISIVE_VERDICTS)
    ):
        return _answer("reconciliation_continues", r)  # fail closed: nothing written, no lease extension
    reference = e["payment_reference"]
    if e["verdict"] == "NOT_SUBMITTED":
        foreign = reference is not None or r["payment_reference"] is not None
    else:
        foreign = reference is None or r["payment_reference"] not in (None, reference)
    if foreign:
        raise _fail("evidence_mismatch")
    late = _elapsed(r, now)
    if e["verdict"] == "SETTLED":
        decision = "COMMIT"  # a confirmed settlement may commit after the deadline
    elif owner_path:
        decision = "RELEASE"  # the held provider lease ends at the deadline at the latest
    else:
        decision = "OUTCOME_UNKNOWN" if late or not e["submission_fenced"] else "RELEASE"
    terminal = decision in ("COMMIT", "RELEASE")
    if terminal != (e["receipt_digest"] is not None):
        raise _fail("evidence_mismatch")
    changes: dict[str, Any] = {
        "state": decision,
        "evidence_class": e["evidence_class"],
        "independent_verification": True,
        "evidence_verdict": e["verdict"],
        "submission_fenced": e["submission_fenced"],
        "payment_reference": r["payment_reference"] or reference,
    }
    if terminal:
        changes["terminal_path"] = "provider_owner" if owner_path else "reconciliation"
        changes["terminal_receipt_digest"] = e["receipt_digest"]
    outcome, event_type = {
        "COMMIT": ("committed", "committed"),
        "RELEASE": ("released", "released"),
        "OUTCOME_UNKNOWN": ("outcome_unknown", "outcome_unknown_recorded"),
    }[decision]
    return _write(call, r, outcome, event_type, **changes)


def _manual_terminal(call: Call, r: Record) -> Decision:
    result, fenced, state = call.args["processor_result"], call.args["submission_fenced"], r["state"]
    retry = r["terminal_path"] == "manual" and r["processor_result"] == result and r["submission_fenced"] is fenced
    if retry and state == "COMMIT":
        return _answer("committed", r)
    if retry and state == "RELEASE":
        return _answer("released", r)
    if state in c.FINAL:
        raise _fail("terminal_conflict")
    if state in ("BEGUN", "CONSUME_INTENT", "CONSUMED"):
        raise _fail("not_applicable")
    if _held(r, call.now):
        return _answer("pending", r)
    # Always caller-asserted, whatever claimed_independent_verification says (G25).
    changes = {
        "evidence_class": c.CALLER_ASSERTED,
        "independent_verification": False,
        "evidence_verdict": None,
        "submission_fenced": fenced,
        "processor_result": result,
        "terminal_path": "manual",
        "terminal_receipt_digest": None,
    }
    if result == "COMMIT":
        return _write(call, r, "committed", "manual_committed", state="COMMIT", **changes)
    if _elapsed(r, call.now) or not fenced:
        raise _fail("release_refused")
    return _write(call, r, "released", "manual_released", state="RELEASE", **changes)


def _close_window(call: Call, r: Record) -> Decision:
    if r["state"] == "CONSUMED":
        if _elapsed(r, call.now):
            return _write(
                call, r, "submission_window_closed", "submission_window_closed", state="SUBMISSION_WINDOW_CLOSED"
            )
        return _answer("window_open", r)
    if r["state"] == "SUBMISSION_WINDOW_CLOSED":
        return _answer("submission_window_closed", r)
    return _answer("observed", r)  # no deadline yet, or provider ownership taken: never closes


_DECIDE = {
    "get": _get,
    "claim": _claim,
    "record_consume": _record_consume,
    "take_provider_intent": _take_provider_intent,
    "report": _report,
    "take_reconcile_lease": _take_reconcile_lease,
    "apply_evidence": _apply_evidence,
    "manual_terminal": _manual_terminal,
    "close_window": _close_window,
}


def decide(call: Call, record: Record | None) -> Decision:
    """Precedence steps 3 (absent) and 5 (identity), then the operation's rows."""
    if call.operation == "begin" and record is None:
        return _begin(call, None)
    if record is None:
        raise _fail("journal_not_begun")
    if record["operation_identity"] != call.journal.operation_identity:
        raise _fail("binding_conflict")
    if call.operation == "begin":
        return _begin(call, record)
    return _DECIDE[call.operation](call, record)
