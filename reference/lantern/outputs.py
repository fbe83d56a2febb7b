"""Frozen outputs of the lantern operations; `.to_json()` is what the model's `Result.output` predicts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class LanternPin:
    """The public view of one lantern: never the user id."""

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


@dataclass(frozen=True, slots=True)
class LanternLit:
    """Both light doors: the lantern now active (a new one, or the stored one for an exact retry)."""

    lantern: LanternPin
    outcome: str = "lit"

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, **self.lantern.to_json()}


@dataclass(frozen=True, slots=True)
class LanternEnded:
    """Extinguish: `extinguished`, or `expired` when the lantern had already expired and was retired."""

    outcome: str
    lantern_id: str

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "lanternId": self.lantern_id}


@dataclass(frozen=True, slots=True)
class ActiveLanterns:
    """getActiveLanterns: every unexpired active lantern, by lantern id."""

    lanterns: tuple[LanternPin, ...]
    outcome: str = "active_lanterns"

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "lanterns": [pin.to_json() for pin in self.lanterns]}


@dataclass(frozen=True, slots=True)
class VenueChanged:
    outcome: str  # venue_created | venue_deleted
    venue_id: str

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "venueId": self.venue_id}
