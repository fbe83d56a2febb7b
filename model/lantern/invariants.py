"""INV-1..INV-5 as checked properties of stored documents (docs/lantern-contract.md, "Invariants").

`invariant_violations` takes a `LanternState` or the documents themselves ({path: dict}, as read back from
the emulator) and never consults the model's rules, only the documents. Every check is over STORED
status, so it needs no clock: the layer keeps the stored form strictly (a light retires an expired
predecessor before lighting, so even an expired-but-unretired lantern still has its guard, pin and count).

- INV-1: at most one lantern with status "active" per userId.
- INV-2: every guard activeLanterns/{u} names a lantern that exists, belongs to u, is stored active and has
  the guard's venueId and expiresAt (a stranded guard, finding #4, breaks it).
- INV-3: every venue's activeLanternCount is an int equal to the number of stored-active lanterns with that
  venueId (findings #5 and #13 break it).
- INV-4: per lantern, status active <=> pin present <=> endedAt null; the pin repeats venueId, litAt and
  expiresAt; extinguished: litAt <= endedAt < expiresAt; expired: endedAt == expiresAt; no pin without its
  lantern.
- INV-5: every stored-active lantern is the one its user's guard names, i.e. it was activated by a
  transaction that wrote the guard, the serialization point (a light serialized on a query, the #889 bug,
  leaves an active lantern no guard names).
- SHAPE: exact field sets and types of the four document kinds; no other paths in the four collections (a C1
  ghost venue, a partial document holding only activeLanternCount, is caught here).

INV-2 and INV-5 together are the seed's INV-2 "iff"; they are reported apart so that a violation names the
kind of writer at fault (an ending writer that left the guard, or an activating writer that bypassed it).

`write_set_violations` is INV-5's per-commit form: which documents one commit wrote together (as a
commit-recording client observes them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import attrs

from .constants import (
    ACTIVE,
    EXPIRED,
    EXTINGUISHED,
    GUARD_FIELDS,
    GUARDS,
    LANTERN_FIELDS,
    LANTERN_TTL,
    LANTERNS,
    MANUAL,
    PIN_FIELDS,
    PINS,
    SCHEDULED,
    STATUSES,
    VENUE_FIELDS,
    VENUES,
    guard_path,
    lantern_path,
    pin_path,
    venue_path,
)
from .documents import documents as state_documents
from .state import LanternState

INVARIANTS = ("INV-1", "INV-2", "INV-3", "INV-4", "INV-5", "SHAPE")
_ZERO = timedelta(0)


@attrs.frozen(order=True)
class Violation:
    invariant: str  # INV-1 .. INV-5 or SHAPE
    path: str  # the document the violation is about
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant} {self.path}: {self.detail}"


def _time(value: Any) -> bool:
    return isinstance(value, datetime) and value.utcoffset() == _ZERO


def _float(value: Any) -> bool:
    return type(value) is float


def _str(value: Any) -> bool:
    return type(value) is str and value != ""


def _venue_shape(doc: Mapping[str, Any]) -> str | None:
    if set(doc) != VENUE_FIELDS:
        return f"venue fields {sorted(doc)}"
    ok = (
        _str(doc["name"])
        and _float(doc["lat"])
        and _float(doc["lng"])
        and _float(doc["radiusMeters"])
        and type(doc["activeLanternCount"]) is int
    )
    return None if ok else "venue field types"


def _lantern_shape(doc: Mapping[str, Any]) -> str | None:
    if set(doc) != LANTERN_FIELDS:
        return f"lantern fields {sorted(doc)}"
    ok = (
        _str(doc["userId"])
        and _str(doc["venueId"])
        and doc["status"] in STATUSES
        and doc["source"] in (MANUAL, SCHEDULED)
        and _time(doc["litAt"])
        and _time(doc["expiresAt"])
        and (doc["endedAt"] is None or _time(doc["endedAt"]))
    )
    if not ok:
        return "lantern field types"
    if doc["expiresAt"] != doc["litAt"] + LANTERN_TTL:
        return "lantern expiresAt != litAt + 2 h"
    scheduled_for = doc["scheduledFor"]
    if doc["source"] == MANUAL:
        return None if scheduled_for is None else "manual lantern with scheduledFor"
    return None if _time(scheduled_for) and scheduled_for <= doc["litAt"] else "scheduled lantern scheduledFor"


def _pin_shape(doc: Mapping[str, Any]) -> str | None:
    if set(doc) != PIN_FIELDS:
        return f"pin fields {sorted(doc)}"
    return None if _str(doc["venueId"]) and _time(doc["litAt"]) and _time(doc["expiresAt"]) else "pin field types"


def _guard_shape(doc: Mapping[str, Any]) -> str | None:
    if set(doc) != GUARD_FIELDS:
        return f"guard fields {sorted(doc)}"
    ok = _str(doc["lanternId"]) and _str(doc["venueId"]) and _time(doc["expiresAt"])
    return None if ok else "guard field types"


_SHAPES = {VENUES: _venue_shape, LANTERNS: _lantern_shape, PINS: _pin_shape, GUARDS: _guard_shape}


def _split(docs: Mapping[str, Mapping[str, Any]], out: list[Violation]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """Well-shaped documents by collection and id; everything else is reported as SHAPE and left out."""
    found: dict[str, dict[str, Mapping[str, Any]]] = {name: {} for name in _SHAPES}
    for path, doc in docs.items():
        parts = path.split("/")
        if len(parts) != 2 or parts[0] not in _SHAPES:
            out.append(Violation("SHAPE", path, "not a document of the lantern contract"))
            continue
        problem = _SHAPES[parts[0]](doc)
        if problem is not None:
            out.append(Violation("SHAPE", path, problem))
            continue
        found[parts[0]][parts[1]] = doc
    return found


def _lantern_checks(lanterns, pins, out: list[Violation]) -> None:
    for lantern_id, doc in lanterns.items():
        path, pin = lantern_path(lantern_id), pins.get(lantern_id)
        status, ended = doc["status"], doc["endedAt"]
        if status == ACTIVE:
            if pin is None:
                out.append(Violation("INV-4", path, "active lantern without its pin"))
            elif any(pin[f] != doc[f] for f in PIN_FIELDS):
                out.append(Violation("INV-4", pin_path(lantern_id), "pin differs from its lantern"))
            if ended is not None:
                out.append(Violation("INV-4", path, "active lantern with endedAt"))
            continue
        if pin is not None:
            out.append(Violation("INV-4", pin_path(lantern_id), f"pin of an {status} lantern"))
        if ended is None:
            out.append(Violation("INV-4", path, f"{status} lantern without endedAt"))
        elif status == EXTINGUISHED and not doc["litAt"] <= ended < doc["expiresAt"]:
            out.append(Violation("INV-4", path, "extinguished outside [litAt, expiresAt)"))
        elif status == EXPIRED and ended != doc["expiresAt"]:
            out.append(Violation("INV-4", path, "expired lantern with endedAt != expiresAt"))
    for lantern_id in pins.keys() - lanterns.keys():
        out.append(Violation("INV-4", pin_path(lantern_id), "pin without a lantern"))


def invariant_violations(
    state_or_documents: LanternState | Mapping[str, Mapping[str, Any]],
) -> tuple[Violation, ...]:
    """Every violation of INV-1..INV-5 (and SHAPE) in these documents, sorted; () when they hold."""
    docs = state_documents(state_or_documents) if isinstance(state_or_documents, LanternState) else state_or_documents
    out: list[Violation] = []
    found = _split(docs, out)
    venues, lanterns, pins, guards = (found[name] for name in (VENUES, LANTERNS, PINS, GUARDS))
    active_by_user: dict[str, list[str]] = defaultdict(list)
    active_by_venue: Counter[str] = Counter()
    for lantern_id, doc in sorted(lanterns.items()):
        if doc["status"] == ACTIVE:
            active_by_user[doc["userId"]].append(lantern_id)
            active_by_venue[doc["venueId"]] += 1
    for user_id, active in sorted(active_by_user.items()):
        if len(active) > 1:
            out.append(Violation("INV-1", guard_path(user_id), f"{len(active)} active lanterns: {', '.join(active)}"))
    for user_id, guard in sorted(guards.items()):
        named = lanterns.get(guard["lanternId"])
        if named is None:
            problem = "names a missing lantern"
        elif named["userId"] != user_id:
            problem = "names another user's lantern"
        elif named["status"] != ACTIVE:
            problem = f"names an {named['status']} lantern (stranded guard)"
        elif (guard["venueId"], guard["expiresAt"]) != (named["venueId"], named["expiresAt"]):
            problem = "venueId or expiresAt differs from the named lantern"
        else:
            problem = None
        if problem:
            out.append(Violation("INV-2", guard_path(user_id), problem))
    for user_id, active in sorted(active_by_user.items()):
        guard = guards.get(user_id)
        for lantern_id in active:
            if guard is None or guard["lanternId"] != lantern_id:
                out.append(
                    Violation("INV-5", lantern_path(lantern_id), "active lantern its user's guard does not name")
                )
    for venue_id, doc in sorted(venues.items()):
        count, actual = doc["activeLanternCount"], active_by_venue[venue_id]
        if count != actual:
            out.append(
                Violation("INV-3", venue_path(venue_id), f"activeLanternCount {count}, active lanterns {actual}")
            )
    _lantern_checks(lanterns, pins, out)
    return tuple(sorted(out))


def write_set_violations(paths: Iterable[str]) -> tuple[str, ...]:
    """INV-4/INV-5 per commit: what is wrong with one commit's written paths (() when nothing).

    A lantern's pin moves only with its lantern; a guard or a venue counter moves only with some lantern
    (the document the transition serialized on); a commit that writes a venue and no lantern is an admin
    create/delete of that one venue."""
    written = set(paths)
    by_collection: dict[str, set[str]] = defaultdict(set)
    for path in written:
        collection, _, doc_id = path.partition("/")
        by_collection[collection].add(doc_id)
    lanterns, problems = by_collection[LANTERNS], []
    for lantern_id in sorted(by_collection[PINS] ^ lanterns):
        problems.append(f"lantern {lantern_id} and its pin not written together")
    if not lanterns:
        if by_collection[GUARDS]:
            problems.append("a guard written without any lantern")
        if by_collection[VENUES] and written != {venue_path(v) for v in by_collection[VENUES]}:
            problems.append("a venue written with other documents but no lantern")
        if len(by_collection[VENUES]) > 1:
            problems.append("several venues written without any lantern")
    return tuple(problems)
