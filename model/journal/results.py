"""Step results: the reference's output JSON (or error code), the transition row that fired, and `wrote`."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import attrs

from .constants import (
    EPOCH,
    JOURNAL_SCHEMA_VERSION,
    LEASE_ACQUIRED,
    LEASE_BUSY,
    LIFECYCLE_SCHEMA_VERSION,
    REGISTERED,
    REGISTERED_EXISTING,
    REGISTERED_NEW,
    TERMINAL_FAILED_FINAL,
    TERMINAL_SUCCEEDED,
)
from .transitions import TRANSITION_IDS

_OUTCOME_STATE = {
    REGISTERED_NEW: REGISTERED,
    REGISTERED_EXISTING: REGISTERED,
    LEASE_ACQUIRED: "leased",
    LEASE_BUSY: "leased",
    TERMINAL_SUCCEEDED: "succeeded",
    TERMINAL_FAILED_FINAL: "failed_final",
}


def timestamp_parts(moment: datetime) -> tuple[int, int]:
    """(seconds, nanoseconds) of an aware datetime: floor of epoch seconds, microsecond * 1000 (exact)."""
    delta = moment - EPOCH
    return delta.days * 86_400 + delta.seconds, delta.microseconds * 1_000


@attrs.frozen(cache_hash=True)
class Result:
    """Exactly one of `outcome` (a successful output) or `code` (an error) is set, except for fault rows."""

    transition: str
    wrote: bool
    outcome: str | None = None
    code: str | None = None
    fence_epoch: int | None = None  # lease_acquired only
    lease_expires_at: datetime | None = None  # lease_acquired only

    @property
    def ok(self) -> bool:
        return self.outcome is not None

    @property
    def output(self) -> dict[str, Any] | None:
        """The reference output's `.to_json()`, or None for an error (or a fault)."""
        outcome = self.outcome
        if outcome is None:
            return None
        out: dict[str, Any] = {"journalSchemaVersion": JOURNAL_SCHEMA_VERSION}
        if outcome not in (REGISTERED_NEW, REGISTERED_EXISTING):
            out["lifecycleSchemaVersion"] = LIFECYCLE_SCHEMA_VERSION
        out["outcome"] = outcome
        out["state"] = _OUTCOME_STATE[outcome]
        if outcome == LEASE_ACQUIRED:
            seconds, nanoseconds = timestamp_parts(self.lease_expires_at)
            out["fenceEpoch"] = self.fence_epoch
            out["leaseExpiresAt"] = {"seconds": seconds, "nanoseconds": nanoseconds}
        return out

    def matches(self, observed: dict[str, Any] | str) -> bool:
        """Whether a reference answer (an output's `.to_json()` dict, or an error code) is this result's."""
        if isinstance(observed, str):
            return self.code == observed and self.outcome is None
        return self.output == observed

    @property
    def answer(self) -> tuple:
        """Hashable form of what a caller observes (output or error), ignoring transition and `wrote`."""
        if self.outcome is None:
            return ("error", self.code)
        return ("output", self.outcome, self.fence_epoch, self.lease_expires_at)


@functools.cache
def fixed(transition: str, *, outcome: str | None = None, code: str | None = None, wrote: bool = False) -> Result:
    """Shared instance for answers without per-call data (everything but lease_acquired)."""
    if transition not in TRANSITION_IDS:
        raise ValueError(f"transition {transition!r} is not in the table")
    return Result(transition, wrote, outcome, code)


def lease_result(transition: str, fence_epoch: int, expires_at: datetime, wrote: bool) -> Result:
    return Result(transition, wrote, LEASE_ACQUIRED, None, fence_epoch, expires_at)
