"""`step(state, op) -> (new_state, result)`: the lantern layer's sequential specification.

Follows docs/lantern-contract.md. Every lantern-ending transition goes through `writesets.end_lantern` (the
model's mirror of the one shared transaction-body helper, decision E2), every activation through
`writesets.light_lantern`.
Never mutates its input; a read-only answer returns `state` itself.
"""

from __future__ import annotations

import attrs

from .constants import (
    ACTIVE,
    ACTIVE_LANTERNS,
    EXTINGUISHED,
    LANTERN_ALREADY_ACTIVE,
    LANTERN_ID_TAKEN,
    LANTERN_NOT_ACTIVE,
    LANTERN_NOT_FOUND,
    LANTERN_TTL,
    LANTERN_UNAVAILABLE,
    LIT,
    MANUAL,
    NOT_LANTERN_OWNER,
    OUT_EXPIRED,
    OUT_EXTINGUISHED,
    OUTSIDE_GEOFENCE,
    SCHEDULE_NOT_DUE,
    SCHEDULED,
    VENUE_CREATED,
    VENUE_DELETED,
    VENUE_EXISTS,
    VENUE_NOT_FOUND,
)
from .faults import apply_fault
from .geo import within_geofence
from .ops import (
    CreateVenue,
    DeleteVenue,
    Extinguish,
    InjectFault,
    Light,
    Operation,
    ReadActive,
    ScheduledLight,
)
from .results import LanternView, Result, fixed, result
from .state import Lantern, LanternState, Venue
from .writesets import end_lantern, light_lantern, retire_expired, view


def _create_venue(state: LanternState, op: CreateVenue) -> tuple[LanternState, Result]:
    if state.venue(op.venue_id) is not None:
        return state, fixed("create_venue.exists", code=VENUE_EXISTS)
    if op.venue_id in state.retired_venue_ids:
        raise ValueError("venue ids are never reused (docs/lantern-contract.md): outside the contract")
    venue = Venue(op.name, op.latitude, op.longitude, op.radius_meters, 0)
    return state.with_venue(op.venue_id, venue), result(
        "create_venue.new", wrote=True, outcome=VENUE_CREATED, subject=op.venue_id
    )


def _delete_venue(state: LanternState, op: DeleteVenue) -> tuple[LanternState, Result]:
    if state.venue(op.venue_id) is None:
        return state, fixed("delete_venue.absent", code=VENUE_NOT_FOUND)
    new_state = state.with_venue(op.venue_id, None)
    new_state = attrs.evolve(new_state, retired_venue_ids=new_state.retired_venue_ids | {op.venue_id})
    return new_state, result("delete_venue.deleted", wrote=True, outcome=VENUE_DELETED, subject=op.venue_id)


def _light(state: LanternState, op: Light | ScheduledLight) -> tuple[LanternState, Result]:
    scheduled = isinstance(op, ScheduledLight)
    door = "scheduled_light" if scheduled else "light"
    now = op.now
    # Prechecks outside the transaction: schedule due, the venue pre-read (B1), the geofence.
    if scheduled and now < op.scheduled_for:
        return state, fixed("scheduled_light.not_due", code=SCHEDULE_NOT_DUE)
    venue = state.venue(op.venue_id)
    if venue is None:
        return state, fixed(f"{door}.venue_missing", code=VENUE_NOT_FOUND)
    if not scheduled and not within_geofence(venue.lat, venue.lng, venue.radius_meters, op.latitude, op.longitude):
        return state, fixed("light.outside_geofence", code=OUTSIDE_GEOFENCE)
    source = SCHEDULED if scheduled else MANUAL
    scheduled_for = op.scheduled_for if scheduled else None
    # The transaction: the lantern id, then the user's guard and the lantern it names.
    existing = state.lantern(op.lantern_id)
    if existing is not None:
        exact_retry = (
            existing.user_id == op.user_id
            and existing.active_at(now)
            and existing.venue_id == op.venue_id
            and existing.source == source
            and existing.scheduled_for == scheduled_for
        )
        if exact_retry:
            return state, result(f"{door}.retry", wrote=False, outcome=LIT, lantern=view(op.lantern_id, existing))
        return state, fixed(f"{door}.id_taken", code=LANTERN_ID_TAKEN)
    kind = "new"
    guard = state.guard(op.user_id)
    if guard is not None:
        named = state.lantern(guard.lantern_id)
        if named is None or named.user_id != op.user_id or not named.stored_active:
            kind = "stranded_guard"  # D2: a guard naming no active lantern of this user counts as absent
        elif now < named.expires_at:
            return state, fixed(f"{door}.guard_held", code=LANTERN_ALREADY_ACTIVE)
        else:
            if named.venue_id == op.venue_id:
                kind = "relight_in_place"
            elif state.venue(named.venue_id) is None:
                kind = "relight_old_venue_gone"
            else:
                kind = "relight_elsewhere"
            state = retire_expired(state, guard.lantern_id)
    lantern = Lantern(op.user_id, op.venue_id, ACTIVE, source, now, now + LANTERN_TTL, scheduled_for, None)
    new_state = light_lantern(state, op.user_id, op.lantern_id, lantern)
    return new_state, result(f"{door}.{kind}", wrote=True, outcome=LIT, lantern=view(op.lantern_id, lantern))


def _extinguish(state: LanternState, op: Extinguish) -> tuple[LanternState, Result]:
    lantern = state.lantern(op.lantern_id)
    if lantern is None:
        return state, fixed("extinguish.not_found", code=LANTERN_NOT_FOUND)
    if lantern.user_id != op.user_id:
        return state, fixed("extinguish.not_owner", code=NOT_LANTERN_OWNER)
    if not lantern.stored_active:
        return state, fixed("extinguish.ended", code=LANTERN_NOT_ACTIVE)
    if op.now < lantern.lit_at:
        return state, fixed("extinguish.clock_earlier", code=LANTERN_UNAVAILABLE)
    suffix = "" if state.venue(lantern.venue_id) is not None else "_venue_gone"
    if op.now >= lantern.expires_at:
        new_state = retire_expired(state, op.lantern_id)
        return new_state, result(f"extinguish.expired{suffix}", wrote=True, outcome=OUT_EXPIRED, subject=op.lantern_id)
    new_state = end_lantern(state, op.lantern_id, EXTINGUISHED, op.now)
    return new_state, result(f"extinguish.active{suffix}", wrote=True, outcome=OUT_EXTINGUISHED, subject=op.lantern_id)


def _read_active(state: LanternState, op: ReadActive) -> tuple[LanternState, Result]:
    visible: list[LanternView] = []
    expired: list[str] = []
    for lantern_id, lantern in state.stored_active():
        if op.now < lantern.expires_at:
            visible.append(view(lantern_id, lantern))
        else:
            expired.append(lantern_id)
    new_state = state
    for lantern_id in expired:  # one transaction each, in lantern id order
        new_state = retire_expired(new_state, lantern_id)
    transition = "read_active.retired" if expired else "read_active.clean"
    return new_state, result(transition, wrote=bool(expired), outcome=ACTIVE_LANTERNS, lanterns=tuple(visible))


_HANDLERS = {
    CreateVenue: _create_venue,
    DeleteVenue: _delete_venue,
    Light: _light,
    ScheduledLight: _light,
    Extinguish: _extinguish,
    ReadActive: _read_active,
    InjectFault: apply_fault,
}


def step(state: LanternState, op: Operation) -> tuple[LanternState, Result]:
    """Apply one operation atomically; returns the new state (or `state` itself) and the result."""
    handler = _HANDLERS.get(type(op))
    if handler is None:
        raise TypeError(f"not a lantern operation: {type(op).__name__}")
    return handler(state, op)
