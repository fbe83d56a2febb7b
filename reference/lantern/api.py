"""The public operations: validate, read the clock once, pre-read what B1 keeps outside, run the shared
layer's transaction(s), return a frozen output (or raise LanternError)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from google.cloud import firestore

from reference.clock import (  # absolute: known-bad copies of this package share it
    Clock,
    read_trusted_clock,
    system_clock,
)

from .decide import LightRequest
from .errors import LanternError
from .geo import within_geofence
from .inputs import prepare_id, prepare_latitude, prepare_longitude, prepare_moment, prepare_name, prepare_radius
from .layer import create_venue_body, delete_venue_body, extinguish_body, light_body, retire_body
from .outputs import ActiveLanterns, LanternEnded, LanternLit, LanternPin, VenueChanged
from .paths import ACTIVE, LANTERNS, MANUAL, SCHEDULED, venue_path
from .records import StoredVenue, parse_lantern, parse_venue, venue_document
from .runner import AttemptLog, outside_transaction, run_lantern_transaction


def _read_clock(clock: Clock) -> datetime:
    return read_trusted_clock(clock, lambda: LanternError("lantern_unavailable"))


def _run(db: Any, factory: Callable[..., Callable[[Any], Any]], *args: Any, attempt_log: AttemptLog | None) -> Any:
    return run_lantern_transaction(db, factory(db, *args), look=factory(db, *args, read_only=True), log=attempt_log)


def _venue(db: Any, venue_id: str) -> StoredVenue:
    """B1: the current venue is read OUTSIDE the transaction (stable config; may be milliseconds stale)."""
    snapshot = outside_transaction(lambda: db.document(venue_path(venue_id)).get())
    if not snapshot.exists:
        raise LanternError("venue_not_found")
    return parse_venue(snapshot.to_dict())


def light_lantern(
    *,
    db: Any,
    user_id: Any,
    lantern_id: Any,
    venue_id: Any,
    latitude: Any,
    longitude: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> LanternLit:
    """The manual door: light `lantern_id` for `user_id` at `venue_id`, standing at (latitude, longitude)."""
    user_id, lantern_id, venue_id = prepare_id(user_id), prepare_id(lantern_id), prepare_id(venue_id)
    latitude, longitude = prepare_latitude(latitude), prepare_longitude(longitude)
    now = _read_clock(clock)
    venue = _venue(db, venue_id)
    if not within_geofence(venue.lat, venue.lng, venue.radius_meters, latitude, longitude):
        raise LanternError("outside_geofence")
    request = LightRequest(user_id, lantern_id, venue_id, MANUAL, None, now)
    return _run(db, light_body, request, attempt_log=attempt_log)


def activate_scheduled_lantern(
    *,
    db: Any,
    user_id: Any,
    lantern_id: Any,
    venue_id: Any,
    scheduled_for: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> LanternLit:
    """The scheduled door: the scheduler activates a lantern planned for `scheduled_for` (no geofence)."""
    user_id, lantern_id, venue_id = prepare_id(user_id), prepare_id(lantern_id), prepare_id(venue_id)
    scheduled_for = prepare_moment(scheduled_for)
    now = _read_clock(clock)
    if now < scheduled_for:
        raise LanternError("schedule_not_due")
    _venue(db, venue_id)
    request = LightRequest(user_id, lantern_id, venue_id, SCHEDULED, scheduled_for, now)
    return _run(db, light_body, request, attempt_log=attempt_log)


def extinguish_lantern(
    *,
    db: Any,
    user_id: Any,
    lantern_id: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> LanternEnded:
    """The owner puts the lantern out (A2: one transaction serialized on the lantern document)."""
    user_id, lantern_id = prepare_id(user_id), prepare_id(lantern_id)
    now = _read_clock(clock)
    return _run(db, extinguish_body, user_id, lantern_id, now, attempt_log=attempt_log)


def read_active_lanterns(
    *,
    db: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> ActiveLanterns:
    """getActiveLanterns: the public view of every unexpired active lantern, by lantern id. Each expired
    lantern the query meets is retired through the shared layer, one transaction each (never a batch)."""
    now = _read_clock(clock)
    query = db.collection(LANTERNS).where(filter=firestore.FieldFilter("status", "==", ACTIVE))
    snapshots = outside_transaction(lambda: list(query.stream()))
    visible: list[LanternPin] = []
    expired: list[str] = []
    for snapshot in sorted(snapshots, key=lambda s: s.id):
        lantern = parse_lantern(snapshot.to_dict())
        if now < lantern.expires_at:
            visible.append(LanternPin(snapshot.id, lantern.venue_id, lantern.lit_at, lantern.expires_at))
        else:
            expired.append(snapshot.id)
    for lantern_id in expired:
        _run(db, retire_body, lantern_id, now, attempt_log=attempt_log)
    return ActiveLanterns(tuple(visible))


def create_venue(
    *,
    db: Any,
    venue_id: Any,
    name: Any,
    latitude: Any,
    longitude: Any,
    radius_meters: Any,
    attempt_log: AttemptLog | None = None,
) -> VenueChanged:
    """Admin: create a venue with activeLanternCount 0. Venue ids are never reused (caller's duty)."""
    venue_id, name = prepare_id(venue_id), prepare_name(name)
    document = venue_document(
        name, prepare_latitude(latitude), prepare_longitude(longitude), prepare_radius(radius_meters)
    )
    output = VenueChanged("venue_created", venue_id)
    return _run(db, create_venue_body, venue_id, document, output, attempt_log=attempt_log)


def delete_venue(*, db: Any, venue_id: Any, attempt_log: AttemptLog | None = None) -> VenueChanged:
    """Admin: delete a venue document; lanterns at it are left as they are (their ends skip the decrement)."""
    venue_id = prepare_id(venue_id)
    return _run(db, delete_venue_body, venue_id, VenueChanged("venue_deleted", venue_id), attempt_log=attempt_log)
