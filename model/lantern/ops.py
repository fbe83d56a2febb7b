"""Operations: the layer's calls (and two admin calls on venues), each with its injected clock reading.

Every operation is a frozen, hashable value whose fields are exactly the reference's keyword arguments
(`now` stands for the clock reading; coordinates are stored as floats). Inputs are assumed valid: the model
starts after input validation, as the journal model does.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

import attrs

_ZERO = timedelta(0)


def _utc_datetime(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, datetime) or value.utcoffset() != _ZERO:
        raise ValueError(f"{attribute.name} must be an aware UTC datetime")


def _optional_utc_datetime(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None:
        _utc_datetime(instance, attribute, value)


@attrs.frozen(cache_hash=True)
class CreateVenue:
    """Admin: create `venues/{venue_id}` with activeLanternCount 0 (venue ids are never reused)."""

    venue_id: str
    name: str
    latitude: float = attrs.field(converter=float)
    longitude: float = attrs.field(converter=float)
    radius_meters: float = attrs.field(converter=float)


@attrs.frozen(cache_hash=True)
class DeleteVenue:
    """Admin: delete `venues/{venue_id}`; lanterns at it are left as they are (#13)."""

    venue_id: str


@attrs.frozen(cache_hash=True)
class Light:
    """The manual door: the user, standing at (latitude, longitude), lights lantern `lantern_id` at a venue."""

    user_id: str
    lantern_id: str
    venue_id: str
    latitude: float = attrs.field(converter=float)
    longitude: float = attrs.field(converter=float)
    now: datetime = attrs.field(validator=_utc_datetime, kw_only=True)
    # the harness loses the commit's answer on the wire (fencecheck/wire/lockstep.py); the step is the same
    response_lost: bool = attrs.field(default=False, kw_only=True, metadata={"omit_default": True})


@attrs.frozen(cache_hash=True)
class ScheduledLight:
    """The scheduled door: the scheduler activates a lantern planned for `scheduled_for` (no geofence)."""

    user_id: str
    lantern_id: str
    venue_id: str
    scheduled_for: datetime = attrs.field(validator=_utc_datetime)
    now: datetime = attrs.field(validator=_utc_datetime, kw_only=True)
    # the harness loses the commit's answer on the wire (fencecheck/wire/lockstep.py); the step is the same
    response_lost: bool = attrs.field(default=False, kw_only=True, metadata={"omit_default": True})


@attrs.frozen(cache_hash=True)
class Extinguish:
    """The owner puts lantern `lantern_id` out."""

    user_id: str
    lantern_id: str
    now: datetime = attrs.field(validator=_utc_datetime, kw_only=True)
    # the harness loses the commit's answer on the wire (fencecheck/wire/lockstep.py); the step is the same
    response_lost: bool = attrs.field(default=False, kw_only=True, metadata={"omit_default": True})


@attrs.frozen(cache_hash=True)
class ReadActive:
    """getActiveLanterns: the public view of every active lantern; retires the expired ones it meets."""

    now: datetime = attrs.field(validator=_utc_datetime, kw_only=True)


class FaultKind(enum.Enum):
    """Document damage a broken writer leaves behind; see faults.py."""

    STRANDED_GUARD = "stranded_guard"  # #4: extinguish committed, the guard delete after it did not
    COUNTER_DRIFT = "counter_drift"  # #5: a second decrement of one end


@attrs.frozen(cache_hash=True)
class InjectFault:
    """Rewrite stored documents as a broken writer would (the harness writes `documents` of the new state).

    `subject` is the user id (stranded_guard) or the venue id (counter_drift); `now` is the time of the
    broken extinguish (stranded_guard only)."""

    kind: FaultKind
    subject: str
    now: datetime | None = attrs.field(default=None, validator=_optional_utc_datetime, kw_only=True)


LanternCall = Light | ScheduledLight | Extinguish | ReadActive
VenueCall = CreateVenue | DeleteVenue
Operation = LanternCall | VenueCall | InjectFault
OPERATION_NAMES: dict[type, str] = {
    CreateVenue: "create_venue",
    DeleteVenue: "delete_venue",
    Light: "light",
    ScheduledLight: "scheduled_light",
    Extinguish: "extinguish",
    ReadActive: "read_active",
    InjectFault: "fault",
}


def operation_name(op: Operation) -> str:
    return OPERATION_NAMES[type(op)]
