"""Fixed values of the gateway-journal contract (docs/gateway-contract.md); callers cannot set them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

SCHEMA_VERSION = 2
IDENTITY_VERSION = "2"
CONSUME_LEASE = timedelta(seconds=30)
PROVIDER_LEASE = timedelta(seconds=120)  # capped at the settlement deadline
RECONCILE_LEASE = timedelta(seconds=60)
SETTLEMENT_WINDOW_MS = 900_000
MAX_REVISION = 9_999_999_999
MAX_FENCE = 9_999_999_999
MS_MAX = 253_402_300_799_999
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LINEARIZABLE = "GLOBAL_SHARED_LINEARIZABLE"

PROVIDERS = ("stripe_payment_intent", "x402")
VERIFIED_CLASS = {"stripe_payment_intent": "PROVIDER_API_VERIFIED", "x402": "CHAIN_FINALIZED"}
CALLER_ASSERTED = "CALLER_ASSERTED"
EVIDENCE_CLASSES = (CALLER_ASSERTED, "PROVIDER_API_VERIFIED", "CHAIN_FINALIZED")
CALLER_OUTCOMES = ("succeeded", "failed", "pending", "unknown")
SETTLED, FAILED, NOT_SUBMITTED = "SETTLED", "FAILED", "NOT_SUBMITTED"
DECISIVE_VERDICTS = (SETTLED, FAILED, NOT_SUBMITTED)
VERDICTS = (*DECISIVE_VERDICTS, "PENDING", "UNKNOWN", "CONFLICTING")
FRESH, IDEMPOTENT_CONSUMED, OTHER_STATE = "FRESH", "IDEMPOTENT_CONSUMED", "OTHER_STATE"

# Stored states.
BEGUN = "BEGUN"
CONSUME_INTENT = "CONSUME_INTENT"
CONSUMED = "CONSUMED"
PROVIDER_INTENT = "PROVIDER_INTENT"
RECONCILE_INTENT = "RECONCILE_INTENT"
OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
SWC = "SUBMISSION_WINDOW_CLOSED"
COMMIT = "COMMIT"
RELEASE = "RELEASE"
STATES = (BEGUN, CONSUME_INTENT, CONSUMED, PROVIDER_INTENT, RECONCILE_INTENT, OUTCOME_UNKNOWN, SWC, COMMIT, RELEASE)
FINAL_STATES = (SWC, COMMIT, RELEASE)  # never written again

# Lease kinds and the state each lease is held in.
CONSUME, PROVIDER, RECONCILE = "consume", "provider", "reconcile"
LEASE_STATE = {CONSUME: CONSUME_INTENT, PROVIDER: PROVIDER_INTENT, RECONCILE: RECONCILE_INTENT}
PATH_PROVIDER_OWNER, PATH_RECONCILIATION, PATH_MANUAL = "provider_owner", "reconciliation", "manual"

# Audit event types.
EV_BEGUN = "journal_begun"
EV_CONSUME_CLAIMED = "consume_intent_claimed"
EV_CONSUME_RECOVERY = "consume_recovery_claimed"
EV_CONSUME_RECORDED = "consume_recorded"
EV_WINDOW_CLOSED = "submission_window_closed"
EV_PROVIDER_INTENT = "provider_intent_taken"
EV_REPORTED = "provider_submission_reported"
EV_RECONCILE = "reconcile_lease_taken"
EV_RECONCILE_TAKEOVER = "reconcile_lease_taken_over"
EV_OUTCOME_UNKNOWN = "outcome_unknown_recorded"
EV_COMMITTED = "committed"
EV_RELEASED = "released"
EV_MANUAL_COMMITTED = "manual_committed"
EV_MANUAL_RELEASED = "manual_released"

# Output outcomes.
BEGUN_NEW, BEGUN_EXISTING, JOURNAL_STATE = "begun_new", "begun_existing", "journal_state"
CONSUME_CLAIMED, CONSUME_RECOVERY_CLAIMED = "consume_claimed", "consume_recovery_claimed"
PENDING, OBSERVED = "pending", "observed"
OUT_CONSUMED, CONSUME_UNRESOLVED, WINDOW_CLOSED = "consumed", "consume_unresolved", "submission_window_closed"
PROVIDER_INTENT_TAKEN, RECONCILIATION_REQUIRED = "provider_intent_taken", "reconciliation_required"
SUBMISSION_REPORTED, RECONCILE_LEASE_TAKEN = "submission_reported", "reconcile_lease_taken"
COMMITTED, RELEASED, OUT_UNKNOWN = "committed", "released", "outcome_unknown"
RECONCILIATION_CONTINUES, WINDOW_OPEN = "reconciliation_continues", "window_open"

# Error codes.
INVALID_GATEWAY_INPUT = "invalid_gateway_input"
JOURNAL_NOT_BEGUN = "journal_not_begun"
BINDING_CONFLICT = "binding_conflict"
LEASE_REJECTED = "lease_rejected"
REPORT_CONFLICT = "report_conflict"
SUBMISSION_NOT_REPORTED = "submission_not_reported"
CONSUME_RESPONSE_MISMATCH = "consume_response_mismatch"
EVIDENCE_MISMATCH = "evidence_mismatch"
RELEASE_REFUSED = "release_refused"
TERMINAL_CONFLICT = "terminal_conflict"
NOT_APPLICABLE = "not_applicable"
NAMESPACE_NOT_LINEARIZABLE = "namespace_not_linearizable"
UNRECOGNIZED_RECORD = "unrecognized_record"
GATEWAY_UNAVAILABLE = "gateway_unavailable"
ERROR_CODES = (
    INVALID_GATEWAY_INPUT,
    JOURNAL_NOT_BEGUN,
    BINDING_CONFLICT,
    LEASE_REJECTED,
    REPORT_CONFLICT,
    SUBMISSION_NOT_REPORTED,
    CONSUME_RESPONSE_MISMATCH,
    EVIDENCE_MISMATCH,
    RELEASE_REFUSED,
    TERMINAL_CONFLICT,
    NOT_APPLICABLE,
    NAMESPACE_NOT_LINEARIZABLE,
    UNRECOGNIZED_RECORD,
    GATEWAY_UNAVAILABLE,
)


def floor_ms(moment: datetime) -> int:
    """Whole milliseconds since the Unix epoch, rounded down."""
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000 + delta.microseconds // 1_000


def ms_time(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)
