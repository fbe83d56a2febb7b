"""The shared write-sets (decision E2): every writer that ends or lights a lantern composes these.

A transition moves {lantern.status, public pin, venue.activeLanternCount, guard} together or not at all
(INV-4); the pin is derived from the lantern's status, so it cannot drift in the model.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from .constants import ACTIVE, EXPIRED
from .results import LanternView
from .state import Guard, Lantern, LanternState


def view(lantern_id: str, lantern: Lantern) -> LanternView:
    return LanternView(lantern_id, lantern.venue_id, lantern.lit_at, lantern.expires_at)


def _count(state: LanternState, venue_id: str, delta: int) -> LanternState:
    """Move a venue's counter, only if the venue exists (C2: never against a deleted venue)."""
    venue = state.venue(venue_id)
    if venue is None:
        return state
    return state.with_venue(venue_id, attrs.evolve(venue, active_lantern_count=venue.active_lantern_count + delta))


def end_lantern(
    state: LanternState, lantern_id: str, status: str, ended_at: datetime, *, clear_guard: bool = True
) -> LanternState:
    """The one end-of-lantern write-set: status + endedAt, pin gone (derived), venue -1 if it exists, and
    the guard deleted if it names this lantern. `clear_guard=False` only for the stranded-guard fault."""
    lantern = state.lantern(lantern_id)
    assert lantern is not None and lantern.status == ACTIVE
    state = state.with_lantern(lantern_id, attrs.evolve(lantern, status=status, ended_at=ended_at))
    state = _count(state, lantern.venue_id, -1)
    guard = state.guard(lantern.user_id)
    if clear_guard and guard is not None and guard.lantern_id == lantern_id:
        state = state.with_guard(lantern.user_id, None)
    return state


def retire_expired(state: LanternState, lantern_id: str) -> LanternState:
    """Expire-retire: the lantern ended at its expiry, whoever notices it (endedAt = expiresAt)."""
    lantern = state.lantern(lantern_id)
    return end_lantern(state, lantern_id, EXPIRED, lantern.expires_at)


def light_lantern(state: LanternState, user_id: str, lantern_id: str, lantern: Lantern) -> LanternState:
    """The one activation write-set: lantern, pin (derived), venue +1, guard naming it."""
    state = state.with_lantern(lantern_id, lantern)
    state = _count(state, lantern.venue_id, +1)
    return state.with_guard(user_id, Guard(lantern_id, lantern.venue_id, lantern.expires_at))
