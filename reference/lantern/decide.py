"""The lantern layer's decisions and write-sets: pure functions of parsed reads and prepared values.

Called from inside transaction callbacks, so free of clocks, randomness, logging and I/O: `now` is the one
reading taken before the callback, reused by every attempt. The write-sets are the shared part of
decision E2: `end_writes` is the only way a lantern ends (extinguish, auto-extinguish on read, the relight
retire path) and `light_writes` the only way one becomes active (both light doors).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import LanternError
from .outputs import LanternEnded, LanternLit, LanternPin
from .paths import EXPIRED, EXTINGUISHED, LANTERN_TTL, guard_path, lantern_path, pin_path, venue_path
from .records import StoredGuard, StoredLantern, guard_document, lantern_document, pin_document

CREATE, SET, UPDATE, DELETE, INCREMENT = "create", "set", "update", "delete", "increment"


@dataclass(frozen=True, slots=True)
class Write:
    path: str
    kind: str  # create | set | update | delete | increment (activeLanternCount by `amount`)
    data: dict[str, Any] | None = None
    amount: int = 0


@dataclass(frozen=True, slots=True)
class Decision:
    output: Any
    writes: tuple[Write, ...] = ()


@dataclass(frozen=True, slots=True)
class LightRequest:
    user_id: str
    lantern_id: str
    venue_id: str
    source: str  # manual | scheduled
    scheduled_for: datetime | None
    now: datetime


def pin_of(lantern_id: str, lantern: StoredLantern) -> LanternPin:
    return LanternPin(lantern_id, lantern.venue_id, lantern.lit_at, lantern.expires_at)


# --- the shared write-sets (E2) -----------------------------------------------------------------------------


def end_writes(
    lantern_id: str,
    lantern: StoredLantern,
    *,
    status: str,
    ended_at: datetime,
    venue_exists: bool,
    guard: StoredGuard | None,
) -> tuple[Write, ...]:
    """End one stored-active lantern: {status, pin, counter, guard} in one unit (INV-4).

    The decrement only if the venue exists (C2, read inside the same transaction); the guard is deleted only
    if it still names THIS lantern (A2/D1). Pass `guard=None` when the caller overwrites the guard itself."""
    writes = [
        Write(lantern_path(lantern_id), UPDATE, {"status": status, "endedAt": ended_at}),
        Write(pin_path(lantern_id), DELETE),
    ]
    if venue_exists:
        writes.append(Write(venue_path(lantern.venue_id), INCREMENT, amount=-1))
    if guard is not None and guard.lantern_id == lantern_id:
        writes.append(Write(guard_path(lantern.user_id), DELETE))
    return tuple(writes)


def light_writes(request: LightRequest, *, count: bool) -> tuple[Write, ...]:
    """Activate one lantern: lantern, pin, blind venue +1 (B1; skipped for an in-place relight), guard."""
    expires_at = request.now + LANTERN_TTL
    writes = [
        Write(
            lantern_path(request.lantern_id),
            CREATE,
            lantern_document(
                user_id=request.user_id,
                venue_id=request.venue_id,
                source=request.source,
                lit_at=request.now,
                scheduled_for=request.scheduled_for,
            ),
        ),
        Write(pin_path(request.lantern_id), SET, pin_document(request.venue_id, request.now)),
    ]
    if count:
        writes.append(Write(venue_path(request.venue_id), INCREMENT, amount=+1))
    writes.append(
        Write(guard_path(request.user_id), SET, guard_document(request.lantern_id, request.venue_id, expires_at))
    )
    return tuple(writes)


# --- light (both doors) ------------------------------------------------------------------------------------


def _users_active(user_id: str, lantern: StoredLantern | None) -> bool:
    return lantern is not None and lantern.user_id == user_id and lantern.stored_active


def predecessor_to_read(request: LightRequest, existing: StoredLantern | None, guard: StoredGuard | None) -> str | None:
    """The lantern the guard names, when the decision needs it (D2: the guard alone never decides)."""
    if existing is not None or guard is None or guard.lantern_id == request.lantern_id:
        return None
    return guard.lantern_id


def old_venue_to_read(request: LightRequest, predecessor: StoredLantern | None) -> str | None:
    """C2: the old venue of an expired predecessor is read inside the transaction before its decrement."""
    if _users_active(request.user_id, predecessor) and request.now >= predecessor.expires_at:
        return predecessor.venue_id
    return None


def decide_light(
    request: LightRequest,
    existing: StoredLantern | None,
    guard: StoredGuard | None,
    predecessor: StoredLantern | None,
    old_venue_exists: bool | None,
) -> Decision:
    if existing is not None:
        exact_retry = (
            existing.user_id == request.user_id
            and existing.stored_active
            and request.now < existing.expires_at
            and existing.venue_id == request.venue_id
            and existing.source == request.source
            and existing.scheduled_for == request.scheduled_for
        )
        if exact_retry:
            return Decision(LanternLit(pin_of(request.lantern_id, existing)))
        raise LanternError("lantern_id_taken")
    writes: tuple[Write, ...] = ()
    count = True
    if guard is not None and _users_active(request.user_id, predecessor):
        if request.now < predecessor.expires_at:
            raise LanternError("lantern_already_active")
        in_place = predecessor.venue_id == request.venue_id
        if in_place and not old_venue_exists:
            raise LanternError("venue_not_found")  # deleted after the pre-read: the +1 could not apply
        writes = end_writes(
            guard.lantern_id,
            predecessor,
            status=EXPIRED,
            ended_at=predecessor.expires_at,
            venue_exists=bool(old_venue_exists) and not in_place,  # in place: -1 and +1 cancel, neither written
            guard=None,  # overwritten by the new light
        )
        count = not in_place
    # Otherwise no guard, or a stranded one (D2): the new guard overwrites it.
    writes += light_writes(request, count=count)
    lit = LanternPin(request.lantern_id, request.venue_id, request.now, request.now + LANTERN_TTL)
    return Decision(LanternLit(lit), writes)


# --- extinguish and auto-extinguish on read ------------------------------------------------------------------


def extinguish_status(user_id: str, now: datetime, lantern: StoredLantern | None) -> str:
    """The checks before the end write-set, in order; answers the status the lantern ends with."""
    if lantern is None:
        raise LanternError("lantern_not_found")
    if lantern.user_id != user_id:
        raise LanternError("not_lantern_owner")
    if not lantern.stored_active:
        raise LanternError("lantern_not_active")
    if now < lantern.lit_at:
        raise LanternError("lantern_unavailable")  # an earlier clock reading may observe, never decide
    return EXPIRED if now >= lantern.expires_at else EXTINGUISHED


def decide_extinguish(
    lantern_id: str,
    lantern: StoredLantern,
    status: str,
    now: datetime,
    venue_exists: bool,
    guard: StoredGuard | None,
) -> Decision:
    ended_at = now if status == EXTINGUISHED else lantern.expires_at
    writes = end_writes(lantern_id, lantern, status=status, ended_at=ended_at, venue_exists=venue_exists, guard=guard)
    return Decision(LanternEnded(status, lantern_id), writes)


def needs_retire(lantern: StoredLantern | None, now: datetime) -> bool:
    return lantern is not None and lantern.stored_active and now >= lantern.expires_at


def decide_retire(lantern_id: str, lantern: StoredLantern, venue_exists: bool, guard: StoredGuard | None) -> Decision:
    writes = end_writes(
        lantern_id,
        lantern,
        status=EXPIRED,
        ended_at=lantern.expires_at,
        venue_exists=venue_exists,
        guard=guard,
    )
    return Decision(None, writes)
