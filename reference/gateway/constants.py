"""The contract's fixed values (docs/gateway-contract.md, "Constants"), the reference's own copy: the
reference imports nothing from `model/`, so a slip in either shows up as a lockstep disagreement."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

SCHEMA_VERSION = 2
IDENTITY_VERSION = "2"
CONSUME_LEASE = timedelta(seconds=30)
PROVIDER_LEASE = timedelta(seconds=120)
RECONCILE_LEASE = timedelta(seconds=60)
SETTLEMENT_WINDOW_MS = 900_000
MAX_REVISION = 9_999_999_999
MAX_FENCE = 9_999_999_999
MS_MAX = 253_402_300_799_999
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LINEARIZABLE = "GLOBAL_SHARED_LINEARIZABLE"
MAX_JSON_BYTES = 16_384

PROVIDERS = ("stripe_payment_intent", "x402")
VERIFIED_CLASS = {"stripe_payment_intent": "PROVIDER_API_VERIFIED", "x402": "CHAIN_FINALIZED"}
CALLER_ASSERTED = "CALLER_ASSERTED"
EVIDENCE_CLASSES = (CALLER_ASSERTED, "PROVIDER_API_VERIFIED", "CHAIN_FINALIZED")
CALLER_OUTCOMES = ("succeeded", "failed", "pending", "unknown")
DECISIVE_VERDICTS = ("SETTLED", "FAILED", "NOT_SUBMITTED")
VERDICTS = (*DECISIVE_VERDICTS, "PENDING", "UNKNOWN", "CONFLICTING")
ANSWER_KINDS = ("FRESH", "IDEMPOTENT_CONSUMED", "OTHER_STATE")

STATES = (
    "BEGUN",
    "CONSUME_INTENT",
    "CONSUMED",
    "PROVIDER_INTENT",
    "RECONCILE_INTENT",
    "OUTCOME_UNKNOWN",
    "SUBMISSION_WINDOW_CLOSED",
    "COMMIT",
    "RELEASE",
)
FINAL = ("SUBMISSION_WINDOW_CLOSED", "COMMIT", "RELEASE")
LEASE_STATE = {"consume": "CONSUME_INTENT", "provider": "PROVIDER_INTENT", "reconcile": "RECONCILE_INTENT"}
TERMINAL_PATHS = ("provider_owner", "reconciliation", "manual")
EVENT_TYPES = (
    "journal_begun",
    "consume_intent_claimed",
    "consume_recovery_claimed",
    "consume_recorded",
    "submission_window_closed",
    "provider_intent_taken",
    "provider_submission_reported",
    "reconcile_lease_taken",
    "reconcile_lease_taken_over",
    "outcome_unknown_recorded",
    "committed",
    "released",
    "manual_committed",
    "manual_released",
)
GRANTS = (
    "consume_intent_claimed",
    "consume_recovery_claimed",
    "provider_intent_taken",
    "reconcile_lease_taken",
    "reconcile_lease_taken_over",
)


def floor_ms(moment: datetime) -> int:
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000 + delta.microseconds // 1_000


def ms_time(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)
