"""Step results: the reference's output JSON (or error code), the transition row that fired, and `wrote`."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

import attrs

from .constants import ACTIVE_LANTERNS, LIT, OUT_EXPIRED, OUT_EXTINGUISHED, VENUE_CREATED, VENUE_DELETED
from .transitions import TRANSITION_IDS


def iso(moment: datetime) -> str:
    """Timestamps in outputs: ISO 8601 UTC with microseconds, `2026-01-01T00:00:00.000000Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@attrs.frozen(cache_hash=True)
class LanternView:
    """The public view of one lantern (a pin plus its id): never the user id."""

    lantern_id: str
    venue_id: str
    lit_at: datetime
    expires_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "lanternId": self.lantern_id,
            "venueId": self.venue_id,
            "litAt": iso(self.lit_at),
            "expiresAt": iso(self.expires_at),
        }


@attrs.frozen(cache_hash=True)
class Result:
    """Exactly one of `outcome` (a successful output) or `code` (an error) is set, except for fault rows."""

    transition: str
    wrote: bool
    outcome: str | None = None
    code: str | None = None
    subject: str | None = None  # the lantern id (extinguish) or venue id (venue ops) the output names
    lantern: LanternView | None = None  # lit
    lanterns: tuple[LanternView, ...] | None = None  # active_lanterns, sorted by lantern id

    @property
    def ok(self) -> bool:
        return self.outcome is not None

    @property
    def output(self) -> dict[str, Any] | None:
        """The reference output's `.to_json()`, or None for an error (or a fault)."""
        outcome = self.outcome
        if outcome is None:
            return None
        if outcome == LIT:
            return {"outcome": LIT, **self.lantern.to_json()}
        if outcome in (OUT_EXTINGUISHED, OUT_EXPIRED):
            return {"outcome": outcome, "lanternId": self.subject}
        if outcome == ACTIVE_LANTERNS:
            return {"outcome": outcome, "lanterns": [view.to_json() for view in self.lanterns]}
        assert outcome in (VENUE_CREATED, VENUE_DELETED)
        return {"outcome": outcome, "venueId": self.subject}

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
        return ("output", self.outcome, self.subject, self.lantern, self.lanterns)


@functools.cache
def fixed(transition: str, *, outcome: str | None = None, code: str | None = None, wrote: bool = False) -> Result:
    """Shared instance for answers without per-call data."""
    if transition not in TRANSITION_IDS:
        raise ValueError(f"transition {transition!r} is not in the table")
    return Result(transition, wrote, outcome, code)


def result(transition: str, *, wrote: bool, outcome: str, **data: Any) -> Result:
    if transition not in TRANSITION_IDS:
        raise ValueError(f"transition {transition!r} is not in the table")
    return Result(transition, wrote, outcome, None, **data)
