"""Document paths and fixed values of docs/lantern-contract.md (the reference's own copy; the unit tests
check it against model/lantern/constants.py)."""

from __future__ import annotations

from datetime import timedelta

LANTERN_TTL = timedelta(hours=2)

VENUES = "venues"
LANTERNS = "lanterns"
PINS = "publicPins"
GUARDS = "activeLanterns"

ACTIVE, EXTINGUISHED, EXPIRED = "active", "extinguished", "expired"
MANUAL, SCHEDULED = "manual", "scheduled"


def venue_path(venue_id: str) -> str:
    return f"{VENUES}/{venue_id}"


def lantern_path(lantern_id: str) -> str:
    return f"{LANTERNS}/{lantern_id}"


def pin_path(lantern_id: str) -> str:
    return f"{PINS}/{lantern_id}"


def guard_path(user_id: str) -> str:
    return f"{GUARDS}/{user_id}"
