"""The transition table: every answer `step` can give, one row each (docs/lantern-contract.md).

A row is (operation, from_state, condition) -> (outcome or error code, writes). `from_state` names the
class of stored state the operation meets:
  venue ops     absent | venue
  light doors   any | venue (the pre-read) | lantern_exists | no_guard | guard_active | guard_expired |
                guard_stranded (the user's guard and the lantern it names)
  extinguish    absent | lantern (another user's) | ended | active | active_expired (the lantern)
  read_active   any
`reachable` is False for rows that a sequential, fault-free run cannot reach (race-only or damaged data).
Both light doors carry the same rows (the #889 one-contract rule), plus one door-specific precheck each.
"""

from __future__ import annotations

import attrs

from .constants import (
    ACTIVE_LANTERNS,
    LANTERN_ALREADY_ACTIVE,
    LANTERN_ID_TAKEN,
    LANTERN_NOT_ACTIVE,
    LANTERN_NOT_FOUND,
    LANTERN_UNAVAILABLE,
    LIT,
    NOT_LANTERN_OWNER,
    OUT_EXPIRED,
    OUT_EXTINGUISHED,
    OUTSIDE_GEOFENCE,
    SCHEDULE_NOT_DUE,
    UNRECOGNIZED_RECORD,
    VENUE_CREATED,
    VENUE_DELETED,
    VENUE_EXISTS,
    VENUE_NOT_FOUND,
)


@attrs.frozen
class Transition:
    id: str
    operation: str  # create_venue | delete_venue | light | scheduled_light | extinguish | read_active | any | fault
    from_state: str
    condition: str
    outcome: str | None  # output outcome or error code; None for fault rows
    writes: bool
    reachable: bool = True


def _t(id_: str, from_state: str, condition: str, outcome: str | None, writes=False, reachable=True) -> Transition:
    return Transition(id_, id_.split(".")[0], from_state, condition, outcome, writes, reachable)


def _door_rows(door: str) -> tuple[Transition, ...]:
    """The shared light contract (the #889 guard discipline), for `light` and `scheduled_light`."""
    return (
        _t(
            f"{door}.venue_missing",
            "any",
            "venue absent at the pre-read (B1, outside the transaction)",
            VENUE_NOT_FOUND,
        ),
        _t(
            f"{door}.retry",
            "lantern_exists",
            "lantern id is the user's stored-active lantern at this venue from this door (same scheduledFor), "
            "now < expiresAt: the stored lantern is answered",
            LIT,
        ),
        _t(f"{door}.id_taken", "lantern_exists", "lantern id stored, and not an exact retry", LANTERN_ID_TAKEN),
        _t(
            f"{door}.guard_held",
            "guard_active",
            "the guard names the user's stored-active lantern and now < its expiresAt (INV-1)",
            LANTERN_ALREADY_ACTIVE,
        ),
        _t(f"{door}.new", "no_guard", "no guard: lantern, pin, venue +1, guard", LIT, writes=True),
        _t(
            f"{door}.stranded_guard",
            "guard_stranded",
            "the guard names a missing or ended lantern, or another user's (D2: treated as absent and overwritten); "
            "only damaged data (a stranded guard, #4) gets here",
            LIT,
            writes=True,
            reachable=False,
        ),
        _t(
            f"{door}.relight_elsewhere",
            "guard_expired",
            "the named lantern is stored active, now >= its expiresAt, at another venue that exists: retired "
            "(expired), its pin deleted, its venue -1; then lit",
            LIT,
            writes=True,
        ),
        _t(
            f"{door}.relight_old_venue_gone",
            "guard_expired",
            "as relight_elsewhere, but the old venue is deleted: no decrement (C2); then lit",
            LIT,
            writes=True,
        ),
        _t(
            f"{door}.relight_in_place",
            "guard_expired",
            "as relight_elsewhere, at the same venue: the counter is left as it is (-1 +1); then lit",
            LIT,
            writes=True,
        ),
        _t(
            f"{door}.relight_in_place_venue_gone",
            "guard_expired",
            "same venue, deleted between the pre-read and the transaction's C2 read (race only)",
            VENUE_NOT_FOUND,
            reachable=False,
        ),
    )


TRANSITIONS: tuple[Transition, ...] = (
    _t("create_venue.new", "absent", "no venue with this id: created with activeLanternCount 0", VENUE_CREATED, True),
    _t("create_venue.exists", "venue", "the venue document exists", VENUE_EXISTS),
    _t("delete_venue.deleted", "venue", "venue deleted; lanterns at it are left as they are", VENUE_DELETED, True),
    _t("delete_venue.absent", "absent", "no venue document", VENUE_NOT_FOUND),
    _t("scheduled_light.not_due", "any", "now < scheduledFor", SCHEDULE_NOT_DUE),
    _t("light.outside_geofence", "venue", "haversine distance to the venue > radiusMeters", OUTSIDE_GEOFENCE),
    *_door_rows("light"),
    *_door_rows("scheduled_light"),
    _t("extinguish.not_found", "absent", "no lantern document", LANTERN_NOT_FOUND),
    _t("extinguish.not_owner", "lantern", "lantern.userId differs", NOT_LANTERN_OWNER),
    _t("extinguish.ended", "ended", "status extinguished or expired", LANTERN_NOT_ACTIVE),
    _t("extinguish.clock_earlier", "active", "now < litAt: an earlier reading never decides", LANTERN_UNAVAILABLE),
    _t(
        "extinguish.active",
        "active",
        "litAt <= now < expiresAt, venue exists: extinguished at now, pin deleted, venue -1, guard deleted if it "
        "names the lantern",
        OUT_EXTINGUISHED,
        writes=True,
    ),
    _t(
        "extinguish.active_venue_gone",
        "active",
        "as extinguish.active, venue deleted: no decrement (C2)",
        OUT_EXTINGUISHED,
        writes=True,
    ),
    _t(
        "extinguish.expired",
        "active_expired",
        "now >= expiresAt, venue exists: retired (expired, endedAt = expiresAt), pin deleted, venue -1, guard "
        "deleted if it names the lantern",
        OUT_EXPIRED,
        writes=True,
    ),
    _t(
        "extinguish.expired_venue_gone",
        "active_expired",
        "as extinguish.expired, venue deleted: no decrement (C2)",
        OUT_EXPIRED,
        writes=True,
    ),
    _t("read_active.clean", "any", "no stored-active lantern has now >= expiresAt", ACTIVE_LANTERNS),
    _t(
        "read_active.retired",
        "any",
        "each stored-active lantern with now >= expiresAt is retired in its own transaction (as extinguish.expired)",
        ACTIVE_LANTERNS,
        writes=True,
    ),
    _t(
        "any.unrecognized",
        "corrupt",
        "a document the call reads is not of this contract",
        UNRECOGNIZED_RECORD,
        False,
        False,
    ),
    Transition(
        "fault.stranded_guard",
        "fault",
        "guard_active",
        "the named lantern is extinguished at now (pin, counter) and the guard is left in place (#4)",
        None,
        True,
        False,
    ),
    Transition("fault.counter_drift", "fault", "venue", "activeLanternCount - 1 (#5)", None, True, False),
    Transition("fault.not_applicable", "fault", "any", "fault precondition fails: no change", None, False, False),
)

TRANSITION_IDS: frozenset[str] = frozenset(row.id for row in TRANSITIONS)
TRANSITIONS_BY_ID: dict[str, Transition] = {row.id: row for row in TRANSITIONS}
REACHABLE_IDS: frozenset[str] = frozenset(row.id for row in TRANSITIONS if row.reachable)
assert len(TRANSITION_IDS) == len(TRANSITIONS), "duplicate transition id"
