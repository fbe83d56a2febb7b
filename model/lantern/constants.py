"""Fixed values of the lantern contract (docs/lantern-contract.md): paths, statuses, outcomes, error codes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

LANTERN_TTL = timedelta(hours=2)  # expiresAt = litAt + 2 h; `now < expiresAt` is active, equality is expired
EARTH_RADIUS_METERS = 6_371_008.8  # mean Earth radius of the pinned haversine geofence
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Collections (top level; document ids are the entity ids).
VENUES = "venues"
LANTERNS = "lanterns"
PINS = "publicPins"  # a pin's id is its lantern's id; the pin holds no user id
GUARDS = "activeLanterns"  # one guard per user, id = userId
COLLECTIONS = (VENUES, LANTERNS, PINS, GUARDS)


def venue_path(venue_id: str) -> str:
    return f"{VENUES}/{venue_id}"


def lantern_path(lantern_id: str) -> str:
    return f"{LANTERNS}/{lantern_id}"


def pin_path(lantern_id: str) -> str:
    return f"{PINS}/{lantern_id}"


def guard_path(user_id: str) -> str:
    return f"{GUARDS}/{user_id}"


# Lantern statuses.
ACTIVE = "active"
EXTINGUISHED = "extinguished"
EXPIRED = "expired"
STATUSES = (ACTIVE, EXTINGUISHED, EXPIRED)
ENDED_STATUSES = (EXTINGUISHED, EXPIRED)

# Doors that light a lantern (the #889 contract: both share one guard discipline).
MANUAL = "manual"
SCHEDULED = "scheduled"
SOURCES = (MANUAL, SCHEDULED)

# Output outcomes.
LIT = "lit"
OUT_EXTINGUISHED = "extinguished"
OUT_EXPIRED = "expired"
ACTIVE_LANTERNS = "active_lanterns"
VENUE_CREATED = "venue_created"
VENUE_DELETED = "venue_deleted"
OUTCOMES = (LIT, OUT_EXTINGUISHED, OUT_EXPIRED, ACTIVE_LANTERNS, VENUE_CREATED, VENUE_DELETED)

# Error codes (the reference raises LanternError(code)).
INVALID_LANTERN_INPUT = "invalid_lantern_input"
SCHEDULE_NOT_DUE = "schedule_not_due"
VENUE_NOT_FOUND = "venue_not_found"
OUTSIDE_GEOFENCE = "outside_geofence"
LANTERN_ID_TAKEN = "lantern_id_taken"
LANTERN_ALREADY_ACTIVE = "lantern_already_active"
LANTERN_NOT_FOUND = "lantern_not_found"
NOT_LANTERN_OWNER = "not_lantern_owner"
LANTERN_NOT_ACTIVE = "lantern_not_active"
VENUE_EXISTS = "venue_exists"
UNRECOGNIZED_RECORD = "unrecognized_record"
LANTERN_UNAVAILABLE = "lantern_unavailable"
ERROR_CODES = (
    INVALID_LANTERN_INPUT,
    SCHEDULE_NOT_DUE,
    VENUE_NOT_FOUND,
    OUTSIDE_GEOFENCE,
    LANTERN_ID_TAKEN,
    LANTERN_ALREADY_ACTIVE,
    LANTERN_NOT_FOUND,
    NOT_LANTERN_OWNER,
    LANTERN_NOT_ACTIVE,
    VENUE_EXISTS,
    UNRECOGNIZED_RECORD,
    LANTERN_UNAVAILABLE,
)

# Document field sets (exact).
VENUE_FIELDS = frozenset({"name", "lat", "lng", "radiusMeters", "activeLanternCount"})
LANTERN_FIELDS = frozenset({"userId", "venueId", "status", "source", "litAt", "expiresAt", "scheduledFor", "endedAt"})
PIN_FIELDS = frozenset({"venueId", "litAt", "expiresAt"})
GUARD_FIELDS = frozenset({"lanternId", "venueId", "expiresAt"})
