"""Fixed-shape, immutable operation outputs. `to_json()` gives exactly the seeds' keys, in their order."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

JOURNAL_SCHEMA_VERSION = 1
LIFECYCLE_SCHEMA_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class LeaseTimestamp:
    seconds: int
    nanoseconds: int

    @classmethod
    def of(cls, moment: datetime) -> LeaseTimestamp:
        delta = moment - _EPOCH  # exact integer arithmetic: no float rounding of seconds
        return cls(delta.days * 86_400 + delta.seconds, delta.microseconds * 1_000)

    def to_json(self) -> dict[str, int]:
        return {"seconds": self.seconds, "nanoseconds": self.nanoseconds}


@dataclass(frozen=True, slots=True)
class RegistrationResult:
    outcome: str  # registered_new | registered_existing
    state: str = "registered"
    journal_schema_version: int = JOURNAL_SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        return {"journalSchemaVersion": self.journal_schema_version, "outcome": self.outcome, "state": self.state}


@dataclass(frozen=True, slots=True)
class LeaseAcquired:
    fence_epoch: int
    lease_expires_at: LeaseTimestamp
    outcome: str = "lease_acquired"
    state: str = "leased"
    journal_schema_version: int = JOURNAL_SCHEMA_VERSION
    lifecycle_schema_version: int = LIFECYCLE_SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "journalSchemaVersion": self.journal_schema_version,
            "lifecycleSchemaVersion": self.lifecycle_schema_version,
            "outcome": self.outcome,
            "state": self.state,
            "fenceEpoch": self.fence_epoch,
            "leaseExpiresAt": self.lease_expires_at.to_json(),
        }


@dataclass(frozen=True, slots=True)
class LifecycleObservation:
    """Busy and terminal answers: an outcome and a state, never a fence, expiry or holder."""

    outcome: str  # lease_busy | terminal_succeeded | terminal_failed_final
    state: str  # leased | succeeded | failed_final
    journal_schema_version: int = JOURNAL_SCHEMA_VERSION
    lifecycle_schema_version: int = LIFECYCLE_SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "journalSchemaVersion": self.journal_schema_version,
            "lifecycleSchemaVersion": self.lifecycle_schema_version,
            "outcome": self.outcome,
            "state": self.state,
        }


LEASE_BUSY = LifecycleObservation("lease_busy", "leased")
TERMINAL_SUCCEEDED = LifecycleObservation("terminal_succeeded", "succeeded")
TERMINAL_FAILED_FINAL = LifecycleObservation("terminal_failed_final", "failed_final")
TERMINAL_OBSERVATIONS = {"succeeded": TERMINAL_SUCCEEDED, "failed_final": TERMINAL_FAILED_FINAL}
