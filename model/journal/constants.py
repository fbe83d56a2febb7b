"""Fixed values of the command-journal contract (seeds 000/001, SPEC.md, docs/journal-decisions.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

LEASE_DURATION = timedelta(seconds=60)
MAX_REVISION = 9_999_999_999  # also the fence maximum
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

JOURNAL_SCHEMA_VERSION = 1
COMMAND_IDENTITY_VERSION = 1
LIFECYCLE_SCHEMA_VERSION = 1
AUDIT_V1 = 1
AUDIT_V2 = 2
AGGREGATE_TYPE = "commerce_command"
TERMINAL_COMMITMENT_KIND = "business_record_digest"

ENVIRONMENTS = ("local", "test", "staging", "production")
CALLER_SCOPE_KINDS = ("firebase_uid", "anonymous_principal", "internal_system")

# Stored states.
REGISTERED = "registered"
LEASED = "leased"
SUCCEEDED = "succeeded"
FAILED_FINAL = "failed_final"
TERMINAL_STATES = (SUCCEEDED, FAILED_FINAL)

# Audit event types.
EV_REGISTERED = "command_registered"
EV_LEASE_ACQUIRED = "command_lease_acquired"
EV_LEASE_TAKEN_OVER = "command_lease_taken_over"
EV_SUCCEEDED = "command_succeeded"
EV_FAILED_FINAL = "command_failed_final"

# Output outcomes.
REGISTERED_NEW = "registered_new"
REGISTERED_EXISTING = "registered_existing"
LEASE_ACQUIRED = "lease_acquired"
LEASE_BUSY = "lease_busy"
TERMINAL_SUCCEEDED = "terminal_succeeded"
TERMINAL_FAILED_FINAL = "terminal_failed_final"
TERMINAL_OUTCOME = {SUCCEEDED: TERMINAL_SUCCEEDED, FAILED_FINAL: TERMINAL_FAILED_FINAL}

# Error codes.
INVALID_COMMAND_INPUT = "invalid_command_input"
COMMAND_NOT_REGISTERED = "command_not_registered"
COMMAND_CONFLICT = "command_conflict"
UNRECOGNIZED_RECORD = "unrecognized_record"
LEASE_REJECTED = "lease_rejected"
TERMINAL_CONFLICT = "terminal_conflict"
JOURNAL_UNAVAILABLE = "journal_unavailable"
ERROR_CODES = (
    INVALID_COMMAND_INPUT,
    COMMAND_NOT_REGISTERED,
    COMMAND_CONFLICT,
    UNRECOGNIZED_RECORD,
    LEASE_REJECTED,
    TERMINAL_CONFLICT,
    JOURNAL_UNAVAILABLE,
)
