"""Shared values for the gateway model's unit tests: a journal, lease ids, a clock origin and builders for
the simulated hosted answers and settlement evidence (valid by default; tests bend one field at a time)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from model.gateway import (
    SETTLEMENT_WINDOW_MS,
    ApplyEvidence,
    Begin,
    ClaimConsume,
    CloseWindow,
    Evidence,
    Get,
    HostedAnswer,
    JournalRef,
    ManualTerminal,
    RecordConsume,
    ReportSubmission,
    TakeProviderIntent,
    TakeReconcileLease,
    floor_ms,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
US = timedelta(microseconds=1)
MS = timedelta(milliseconds=1)
NAMESPACE = "gw-prod"
REF = JournalRef(
    NAMESPACE,
    "merchant-binding-1",
    "0f8fad5b-d9cb-469f-a165-70867728950e",
    "stripe_payment_intent",
    '{"amount":1200,"currency":"usd"}',
    '{"payment_method":"pm_card_visa"}',
)
X402 = attrs.evolve(REF, operation_id="16fd2706-8baf-433b-82eb-8c7fada847da", provider="x402")
CHANGED_INPUT = attrs.evolve(REF, provider_input='{"payment_method":"pm_card_mastercard"}')
UNDECLARED = attrs.evolve(REF, consistency="PER_REGION")
A, B, C = (
    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "886313e1-3b8a-4372-9b90-0c9aee199e5d",
    "9b2b5d1e-3f4a-4c6d-8e7f-a1b2c3d4e5f6",
)
RECEIPT = "c" * 64


def hosted(ref: JournalRef = REF, *, at: datetime = T0, kind: str = "FRESH", permit: str = "permit-1", **bend):
    """A hosted CONSUME answer transitioned at floor_ms(at), bound to `ref`."""
    if kind == "OTHER_STATE":
        fields = {"hosted_state": "EXPIRED"}
    else:
        ms = floor_ms(at)
        fields = {
            "transition_id": f"tr-{permit}",
            "permit_id": permit,
            "permit_digest": "d" * 64,
            "transitioned_at": ms,
            "settlement_deadline_at": ms + SETTLEMENT_WINDOW_MS,
        }
    fields = {"idempotency_key": ref.consume_idempotency_key, "operation_identity": ref.operation_identity, **fields}
    fields.update(bend)
    return HostedAnswer(kind, **fields)


def evidence(verdict: str = "SETTLED", ref: JournalRef = REF, *, reference: str | None = "pi_1", **bend) -> Evidence:
    """Decisive verified evidence for `ref`'s provider (a receipt unless bent)."""
    verified = "PROVIDER_API_VERIFIED" if ref.provider == "stripe_payment_intent" else "CHAIN_FINALIZED"
    fields = {
        "evidence_class": verified,
        "independent_verification": True,
        "verdict": verdict,
        "operation_identity": ref.operation_identity,
        "payment_reference": reference,
        "submission_fenced": True,
        "receipt_digest": RECEIPT,
    }
    fields.update(bend)
    return Evidence(**fields)


def begin(now=T0, ref=REF, **kw):
    return Begin(journal=ref, now=now, **kw)


def get(now, ref=REF, **kw):
    return Get(journal=ref, now=now, **kw)


def claim(lease, now, ref=REF, **kw):
    return ClaimConsume(journal=ref, lease_id=lease, now=now, **kw)


def record(lease, fence, answer, now, ref=REF, **kw):
    return RecordConsume(journal=ref, lease_id=lease, expected_fence_epoch=fence, answer=answer, now=now, **kw)


def provider_intent(lease, now, ref=REF, **kw):
    return TakeProviderIntent(journal=ref, lease_id=lease, now=now, **kw)


def report(lease, fence, now, ref=REF, *, reference="pi_1", outcome="succeeded", claim_id="claim-1", **kw):
    return ReportSubmission(
        journal=ref,
        lease_id=lease,
        expected_fence_epoch=fence,
        claim_id=claim_id,
        provider_submission_id="sub-1",
        payment_reference=reference,
        caller_outcome=outcome,
        now=now,
        **kw,
    )


def reconcile(lease, now, ref=REF, **kw):
    return TakeReconcileLease(journal=ref, lease_id=lease, now=now, **kw)


def apply(lease, fence, ev, now, ref=REF, **kw):
    return ApplyEvidence(journal=ref, lease_id=lease, expected_fence_epoch=fence, evidence=ev, now=now, **kw)


def manual(result, now, ref=REF, *, fenced=True, claimed=True, **kw):
    return ManualTerminal(
        journal=ref,
        processor_result=result,
        claimed_independent_verification=claimed,
        submission_fenced=fenced,
        now=now,
        **kw,
    )


def close(now, ref=REF, **kw):
    return CloseWindow(journal=ref, now=now, **kw)
