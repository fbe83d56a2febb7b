"""G-INV-3..8 over one well-shaped record document: the per-state field table, lease arithmetic, the bound
permit, window closure, release safety and evidence honesty (docs/gateway-contract.md, "Invariants").
`state_rule_violations(record)` yields (invariant, detail) pairs; it reads only the document."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from . import constants as c
from .constants import floor_ms, ms_time

PERMIT_GROUP = (
    "consume_transition_id",
    "permit_id",
    "permit_digest",
    "consume_transitioned_at",
    "settlement_deadline_at",
)
REPORT_GROUP = ("claim_id", "provider_submission_id", "caller_outcome", "submission_reported_at")
LEASE_FIELDS = ("lease_kind", "lease_owner_fingerprint", "lease_acquired_at", "lease_expires_at")
TERMINAL_FIELDS = ("terminal_path", "terminal_receipt_digest", "processor_result")
EVIDENCE_FIELDS = ("evidence_class", "independent_verification", "evidence_verdict", "submission_fenced")
ONCE_FIELDS = (
    "consume_intent_at",
    *PERMIT_GROUP,
    "provider_intent_at",
    *REPORT_GROUP,
    "payment_reference",
    "reconciliation_started_at",
)
_ALL_NULLABLE = (*LEASE_FIELDS, *ONCE_FIELDS, *EVIDENCE_FIELDS, *TERMINAL_FIELDS)
_FIRST_LEASE_STATE = {c.CONSUME_INTENT: 1, c.PROVIDER_INTENT: 2, c.RECONCILE_INTENT: 3, c.OUTCOME_UNKNOWN: 3}
_LEASE_OF = {
    c.CONSUME_INTENT: (c.CONSUME,),
    c.CONSUMED: (c.CONSUME,),
    c.SWC: (c.CONSUME,),
    c.PROVIDER_INTENT: (c.PROVIDER,),
    c.RECONCILE_INTENT: (c.RECONCILE,),
    c.OUTCOME_UNKNOWN: (c.RECONCILE,),
    c.COMMIT: (c.PROVIDER, c.RECONCILE),
    c.RELEASE: (c.PROVIDER, c.RECONCILE),
}
_DURATION = {c.CONSUME: c.CONSUME_LEASE, c.RECONCILE: c.RECONCILE_LEASE}


def _set(r, names) -> bool:
    return all(r[n] is not None for n in names)


def _null(r, names) -> bool:
    return all(r[n] is None for n in names)


def _groups(r) -> Iterator[tuple[str, str]]:
    for name, group in (
        ("permit", PERMIT_GROUP),
        ("report", REPORT_GROUP),
        ("lease", LEASE_FIELDS),
        ("evidence pair", ("evidence_class", "independent_verification")),
    ):
        if not (_set(r, group) or _null(r, group)):
            yield "G-INV-3", f"{name} group half set"
    times = [
        r[f]
        for f in ("created_at", "consume_intent_at", "provider_intent_at", "reconciliation_started_at", "updated_at")
        if r[f] is not None
    ]
    if times != sorted(times):
        yield "G-INV-3", "created/consume/provider/reconciliation/updated times out of order"
    if r["claim_id"] is not None and (r["payment_reference"] is None or r["evidence_class"] is None):
        yield "G-INV-3", "a report without its payment reference or evidence class"
    if r["consume_transitioned_at"] is not None and r["consume_intent_at"] is not None:
        bound = r["settlement_deadline_at"] == r["consume_transitioned_at"] + c.SETTLEMENT_WINDOW_MS
        inside = floor_ms(r["consume_intent_at"]) <= r["consume_transitioned_at"] <= floor_ms(r["updated_at"])
        if not (bound and inside):
            yield "G-INV-5", "the settlement deadline is not bound to a transition after the local claim"


def _per_state(r) -> Iterator[tuple[str, str]]:
    state = r["state"]
    if state == c.BEGUN:
        if (
            not _null(r, _ALL_NULLABLE)
            or r["fence_epoch"] != 0
            or r["revision"] != 1
            or r["created_at"] != r["updated_at"]
        ):
            yield "G-INV-3", "BEGUN with more than its identity"
        return
    if r["lease_kind"] not in _LEASE_OF[state] or r["fence_epoch"] < _FIRST_LEASE_STATE.get(state, 1):
        yield "G-INV-3", f"{state} with lease {r['lease_kind']} at fence {r['fence_epoch']}"
    if r["consume_intent_at"] is None:
        yield "G-INV-3", f"{state} without consume_intent_at"
    before_provider = state in (c.CONSUME_INTENT, c.CONSUMED, c.SWC)
    if before_provider:
        if not _null(
            r,
            (
                "provider_intent_at",
                *REPORT_GROUP,
                "payment_reference",
                "reconciliation_started_at",
                *EVIDENCE_FIELDS,
                *TERMINAL_FIELDS,
            ),
        ):
            yield "G-INV-3", f"{state} with provider, evidence or terminal fields"
        if (state == c.CONSUME_INTENT) != _null(r, PERMIT_GROUP):
            yield "G-INV-3", f"{state} permit group presence"
        return
    if r["provider_intent_at"] is None or r["consume_transitioned_at"] is None:
        yield "G-INV-3", f"{state} without provider ownership or permit"
    if (state in (c.RECONCILE_INTENT, c.OUTCOME_UNKNOWN)) and r["reconciliation_started_at"] is None:
        yield "G-INV-3", f"{state} without reconciliation_started_at"
    if state in (c.PROVIDER_INTENT, c.RECONCILE_INTENT, c.OUTCOME_UNKNOWN) and not _null(r, TERMINAL_FIELDS):
        yield "G-INV-3", f"{state} with terminal fields"
    if state == c.PROVIDER_INTENT and not _null(
        r, ("reconciliation_started_at", "evidence_verdict", "submission_fenced")
    ):
        yield "G-INV-3", "PROVIDER_INTENT with reconciliation or decisive evidence"
    if state in (c.PROVIDER_INTENT, c.RECONCILE_INTENT) and r["evidence_verdict"] is None:
        asserted = (r["evidence_class"], r["independent_verification"]) == (c.CALLER_ASSERTED, False)
        reported = r["claim_id"] is not None
        if (
            asserted != reported
            or (not reported and r["evidence_class"] is not None)
            or r["submission_fenced"] is not None
        ):
            yield "G-INV-3", f"{state} evidence is not exactly the report's"
    if state == c.RECONCILE_INTENT and r["evidence_verdict"] is not None:
        resumed = (
            r["evidence_class"] == c.VERIFIED_CLASS.get(r["provider"])
            and r["independent_verification"] is True
            and r["evidence_verdict"] in (c.FAILED, c.NOT_SUBMITTED)
            and type(r["submission_fenced"]) is bool
        )
        if not resumed:
            yield "G-INV-3", "RECONCILE_INTENT with decisive evidence it did not park on"
    if state in (c.COMMIT, c.RELEASE) and r["terminal_path"] is None:
        yield "G-INV-3", f"{state} without terminal_path"


def _leases(r) -> Iterator[tuple[str, str]]:
    kind = r["lease_kind"]
    if kind is None:
        return
    acquired, expires = r["lease_acquired_at"], r["lease_expires_at"]
    if kind == c.PROVIDER:
        deadline = r["settlement_deadline_at"]
        cap = None if deadline is None else min(acquired + c.PROVIDER_LEASE, ms_time(deadline))
        if expires != cap or acquired != r["provider_intent_at"]:
            yield "G-INV-4", "provider lease is not min(intent + 120 s, deadline) from the intent"
    elif expires - acquired != _DURATION[kind]:
        yield "G-INV-4", f"{kind} lease duration {expires - acquired}"
    if not acquired <= r["updated_at"]:
        yield "G-INV-4", "lease acquired after the last write"
    if c.LEASE_STATE[kind] == r["state"] and not r["updated_at"] < expires:
        yield "G-INV-4", "a lease state written at or after its lease's expiry"


def _safety(r) -> Iterator[tuple[str, str]]:
    state, deadline = r["state"], r["settlement_deadline_at"]
    if r["provider_intent_at"] is not None and (deadline is None or r["provider_intent_at"] >= ms_time(deadline)):
        yield "G-INV-5", "provider ownership without a bound permit, or at or after the deadline"
    if state == c.CONSUMED and deadline is not None and r["updated_at"] >= ms_time(deadline):
        yield "G-INV-3", "CONSUMED recorded at or after its deadline"
    if state == c.SWC and (
        r["provider_intent_at"] is not None or deadline is None or r["updated_at"] < ms_time(deadline)
    ):
        yield "G-INV-6", "window closed after provider ownership or before the deadline"
    path = r["terminal_path"]
    if state == c.RELEASE:
        if deadline is None or r["updated_at"] >= ms_time(deadline):
            yield "G-INV-7", "released at or after the settlement deadline"
        if path in (c.PATH_RECONCILIATION, c.PATH_MANUAL) and r["submission_fenced"] is not True:
            yield "G-INV-7", "released after abandonment or reconciliation without submission_fenced"
        if path == c.PATH_PROVIDER_OWNER and (r["reconciliation_started_at"] is not None or r["claim_id"] is None):
            yield "G-INV-7", "provider-owner release after reconciliation or without a report"
    verified = c.VERIFIED_CLASS.get(r["provider"])
    if path in (c.PATH_PROVIDER_OWNER, c.PATH_RECONCILIATION):
        honest = (
            r["evidence_class"] == verified
            and r["independent_verification"] is True
            and r["terminal_receipt_digest"] is not None
            and r["processor_result"] is None
            and (r["evidence_verdict"] == c.SETTLED) == (state == c.COMMIT)
        )
        if not honest:
            yield "G-INV-8", "an autonomous terminal without exact independently verified evidence"
    if path == c.PATH_MANUAL:
        honest = (
            (r["evidence_class"], r["independent_verification"]) == (c.CALLER_ASSERTED, False)
            and r["terminal_receipt_digest"] is None
            and r["evidence_verdict"] is None
            and r["processor_result"] == state
        )
        if not honest:
            yield "G-INV-8", "a manual terminal not recorded as caller-asserted"
    if state in (c.COMMIT, c.RELEASE) and path != c.PATH_MANUAL and r["evidence_class"] == c.CALLER_ASSERTED:
        yield "G-INV-8", "a caller hint decided a terminal state"
    if state == c.OUTCOME_UNKNOWN:
        parked = (
            r["evidence_class"] == verified
            and r["independent_verification"] is True
            and r["evidence_verdict"] in (c.FAILED, c.NOT_SUBMITTED)
            and type(r["submission_fenced"]) is bool
            and r["terminal_receipt_digest"] is None
            and (deadline is not None and r["updated_at"] >= ms_time(deadline) or r["submission_fenced"] is False)
        )
        if not parked:
            yield "G-INV-8", "OUTCOME_UNKNOWN without verified failure evidence it could not release on"


def state_rule_violations(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [*_groups(r), *_per_state(r), *_leases(r), *_safety(r)]
