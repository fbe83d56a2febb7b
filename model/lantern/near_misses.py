"""The lantern's near-miss classes that only its state tells (fencecheck.checker.near_miss). The lantern has no
fences; what stands for one is the lantern id a caller presents, so "current fence, other holder" is a call on an
active lantern by a user who does not own it. "Stored but one field" is a venue created again with one of its
stored fields changed, or a light that reuses a stored lantern id with one of its user and venue changed. "Clock
boundary" is a reading at a stored lantern's expiry, a guard's expiry or a scheduled time, or 1 µs either side.
Pure, like the step."""

from __future__ import annotations

from datetime import datetime

from ..boundaries import near
from .ops import CreateVenue, Extinguish, Light, ScheduledLight
from .state import LanternState


def near_misses(state: LanternState, op: object) -> tuple[str, ...]:
    found = []
    lantern = state.lantern(op.lantern_id) if isinstance(op, Light | ScheduledLight | Extinguish) else None
    if isinstance(op, Extinguish) and lantern is not None and lantern.status == "active" and (
            lantern.user_id != op.user_id):
        found.append("current-fence-other-holder")
    if isinstance(op, CreateVenue) and (venue := state.venue(op.venue_id)) is not None:
        stored = (venue.name, venue.lat, venue.lng, venue.radius_meters)
        asked = (op.name, op.latitude, op.longitude, op.radius_meters)
        if sum(a != b for a, b in zip(stored, asked, strict=True)) == 1:
            found.append("stored-but-one-field")
    if isinstance(op, Light | ScheduledLight) and lantern is not None and (
            (lantern.user_id != op.user_id) + (lantern.venue_id != op.venue_id) == 1):
        found.append("stored-but-one-field")
    moments: list[datetime | None] = [lantern.expires_at, lantern.scheduled_for] if lantern is not None else []
    user = getattr(op, "user_id", None)
    guard = state.guard(user) if user is not None else None
    if guard is not None:
        moments.append(guard.expires_at)
    moments += [stored.expires_at for _id, stored in state.stored_active() if stored.user_id == user]
    if near(getattr(op, "now", None), moments):
        found.append("clock-boundary")
    return tuple(found)
