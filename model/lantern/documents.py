"""The exact stored documents a state stands for: field names as docs/lantern-contract.md pins them."""

from __future__ import annotations

from typing import Any

from .constants import guard_path, lantern_path, pin_path, venue_path
from .state import Guard, Lantern, LanternState, Venue

Document = dict[str, Any]


def venue_document(venue: Venue) -> Document:
    return {
        "name": venue.name,
        "lat": venue.lat,
        "lng": venue.lng,
        "radiusMeters": venue.radius_meters,
        "activeLanternCount": venue.active_lantern_count,
    }


def lantern_document(lantern: Lantern) -> Document:
    return {
        "userId": lantern.user_id,
        "venueId": lantern.venue_id,
        "status": lantern.status,
        "source": lantern.source,
        "litAt": lantern.lit_at,
        "expiresAt": lantern.expires_at,
        "scheduledFor": lantern.scheduled_for,
        "endedAt": lantern.ended_at,
    }


def pin_document(lantern: Lantern) -> Document:
    """The de-identified public pin: no user id."""
    return {"venueId": lantern.venue_id, "litAt": lantern.lit_at, "expiresAt": lantern.expires_at}


def guard_document(guard: Guard) -> Document:
    return {"lanternId": guard.lantern_id, "venueId": guard.venue_id, "expiresAt": guard.expires_at}


def documents(state: LanternState) -> dict[str, Document]:
    """Every document the reference's Firestore must hold for this state, by path (fresh dicts).

    Paths not listed must not exist in the four collections."""
    out: dict[str, Document] = {}
    for venue_id, venue in state.venues:
        out[venue_path(venue_id)] = venue_document(venue)
    for lantern_id, lantern in state.lanterns:
        out[lantern_path(lantern_id)] = lantern_document(lantern)
        if lantern.stored_active:
            out[pin_path(lantern_id)] = pin_document(lantern)
    for user_id, guard in state.guards:
        out[guard_path(user_id)] = guard_document(guard)
    return dict(sorted(out.items()))
