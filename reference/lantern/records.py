"""Stored documents: strict parsers (anything else is unrecognized_record, never repaired) and builders.

Pure: no Firestore, clock or randomness. Field sets are exact; `int` is never `bool`; times are aware UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .errors import LanternError
from .paths import ACTIVE, EXPIRED, EXTINGUISHED, LANTERN_TTL, MANUAL, SCHEDULED

VENUE_FIELDS = frozenset({"name", "lat", "lng", "radiusMeters", "activeLanternCount"})
LANTERN_FIELDS = frozenset({"userId", "venueId", "status", "source", "litAt", "expiresAt", "scheduledFor", "endedAt"})
GUARD_FIELDS = frozenset({"lanternId", "venueId", "expiresAt"})


def unrecognized() -> LanternError:
    return LanternError("unrecognized_record")


@dataclass(frozen=True, slots=True)
class StoredVenue:
    name: str
    lat: float
    lng: float
    radius_meters: float


@dataclass(frozen=True, slots=True)
class StoredLantern:
    user_id: str
    venue_id: str
    status: str
    source: str
    lit_at: datetime
    expires_at: datetime
    scheduled_for: datetime | None
    ended_at: datetime | None

    @property
    def stored_active(self) -> bool:
        return self.status == ACTIVE


@dataclass(frozen=True, slots=True)
class StoredGuard:
    lantern_id: str
    venue_id: str
    expires_at: datetime


def _time(value: Any) -> bool:
    return isinstance(value, datetime) and value.utcoffset() == timedelta(0)


def _text(value: Any) -> bool:
    return type(value) is str and value != ""


def parse_venue(doc: Mapping[str, Any]) -> StoredVenue:
    if set(doc) != VENUE_FIELDS:
        raise unrecognized()
    if not (
        _text(doc["name"])
        and all(type(doc[f]) is float for f in ("lat", "lng", "radiusMeters"))
        and type(doc["activeLanternCount"]) is int
    ):
        raise unrecognized()
    return StoredVenue(doc["name"], doc["lat"], doc["lng"], doc["radiusMeters"])


def parse_lantern(doc: Mapping[str, Any]) -> StoredLantern:
    if set(doc) != LANTERN_FIELDS:
        raise unrecognized()
    ok = (
        _text(doc["userId"])
        and _text(doc["venueId"])
        and doc["status"] in (ACTIVE, EXTINGUISHED, EXPIRED)
        and doc["source"] in (MANUAL, SCHEDULED)
        and _time(doc["litAt"])
        and _time(doc["expiresAt"])
        and doc["expiresAt"] == doc["litAt"] + LANTERN_TTL
        and (doc["scheduledFor"] is None if doc["source"] == MANUAL else _time(doc["scheduledFor"]))
        and (doc["endedAt"] is None) == (doc["status"] == ACTIVE)
        and (doc["endedAt"] is None or _time(doc["endedAt"]))
    )
    if not ok:
        raise unrecognized()
    return StoredLantern(
        doc["userId"],
        doc["venueId"],
        doc["status"],
        doc["source"],
        doc["litAt"],
        doc["expiresAt"],
        doc["scheduledFor"],
        doc["endedAt"],
    )


def parse_guard(doc: Mapping[str, Any]) -> StoredGuard:
    if set(doc) != GUARD_FIELDS:
        raise unrecognized()
    if not (_text(doc["lanternId"]) and _text(doc["venueId"]) and _time(doc["expiresAt"])):
        raise unrecognized()
    return StoredGuard(doc["lanternId"], doc["venueId"], doc["expiresAt"])


def venue_document(name: str, lat: float, lng: float, radius_meters: float) -> dict[str, Any]:
    return {"name": name, "lat": lat, "lng": lng, "radiusMeters": radius_meters, "activeLanternCount": 0}


def lantern_document(
    *, user_id: str, venue_id: str, source: str, lit_at: datetime, scheduled_for: datetime | None
) -> dict[str, Any]:
    return {
        "userId": user_id,
        "venueId": venue_id,
        "status": ACTIVE,
        "source": source,
        "litAt": lit_at,
        "expiresAt": lit_at + LANTERN_TTL,
        "scheduledFor": scheduled_for,
        "endedAt": None,
    }


def pin_document(venue_id: str, lit_at: datetime) -> dict[str, Any]:
    """The de-identified public pin: no user id."""
    return {"venueId": venue_id, "litAt": lit_at, "expiresAt": lit_at + LANTERN_TTL}


def guard_document(lantern_id: str, venue_id: str, expires_at: datetime) -> dict[str, Any]:
    return {"lanternId": lantern_id, "venueId": venue_id, "expiresAt": expires_at}
