"""Lantern state: venues, lanterns and per-user guards, each a sorted tuple of (id, value) pairs.

All classes are frozen and hashable (cached), so a checker can memoize on `LanternState`. The state holds
exactly what the stored documents hold (pins are derived: a pin exists iff its lantern is stored active),
plus `retired_venue_ids`, bookkeeping for the "venue ids are never reused" rule. Changes go through
`attrs.evolve`; a step shares every untouched entry with the previous state.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TypeVar

import attrs

from .constants import ACTIVE

V = TypeVar("V")


@attrs.frozen(cache_hash=True)
class Venue:
    """`venues/{venueId}`: stable config (name, position, radius) and the denormalized counter."""

    name: str
    lat: float
    lng: float
    radius_meters: float
    active_lantern_count: int


@attrs.frozen(cache_hash=True)
class Lantern:
    """`lanterns/{lanternId}`; while `status == "active"` the pin `publicPins/{lanternId}` exists."""

    user_id: str
    venue_id: str
    status: str  # active | extinguished | expired
    source: str  # manual | scheduled
    lit_at: datetime
    expires_at: datetime
    scheduled_for: datetime | None = None  # scheduled door only
    ended_at: datetime | None = None  # None while active

    @property
    def stored_active(self) -> bool:
        return self.status == ACTIVE

    def active_at(self, now: datetime) -> bool:
        """Logically active: stored active and unexpired (`now < expiresAt`)."""
        return self.status == ACTIVE and now < self.expires_at


@attrs.frozen(cache_hash=True)
class Guard:
    """`activeLanterns/{userId}`: names the user's active lantern (INV-2)."""

    lantern_id: str
    venue_id: str
    expires_at: datetime


Entries = tuple[tuple[str, V], ...]


def put(entries: Entries[V], key: str, value: V | None) -> Entries[V]:
    """A new sorted tuple with `key` set to `value` (removed when `value` is None)."""
    kept = [(k, v) for k, v in entries if k != key]
    if value is not None:
        kept.append((key, value))
        kept.sort(key=lambda pair: pair[0])
    return tuple(kept)


def lookup(entries: Entries[V], key: str) -> V | None:
    for k, v in entries:
        if k == key:
            return v
    return None


@attrs.frozen(cache_hash=True)
class LanternState:
    venues: tuple[tuple[str, Venue], ...] = ()
    lanterns: tuple[tuple[str, Lantern], ...] = ()
    guards: tuple[tuple[str, Guard], ...] = ()  # by user id
    retired_venue_ids: frozenset[str] = frozenset()

    @classmethod
    def empty(cls) -> LanternState:
        return _EMPTY

    def venue(self, venue_id: str) -> Venue | None:
        return lookup(self.venues, venue_id)

    def lantern(self, lantern_id: str) -> Lantern | None:
        return lookup(self.lanterns, lantern_id)

    def guard(self, user_id: str) -> Guard | None:
        return lookup(self.guards, user_id)

    def with_venue(self, venue_id: str, venue: Venue | None) -> LanternState:
        return attrs.evolve(self, venues=put(self.venues, venue_id, venue))

    def with_lantern(self, lantern_id: str, lantern: Lantern) -> LanternState:
        return attrs.evolve(self, lanterns=put(self.lanterns, lantern_id, lantern))

    def with_guard(self, user_id: str, guard: Guard | None) -> LanternState:
        return attrs.evolve(self, guards=put(self.guards, user_id, guard))

    def stored_active(self) -> Iterator[tuple[str, Lantern]]:
        return ((lantern_id, lantern) for lantern_id, lantern in self.lanterns if lantern.stored_active)


_EMPTY = LanternState()
