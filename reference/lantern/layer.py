"""The shared lantern transaction layer (decision E2): transaction-body factories, one per kind of writer.

Each factory returns a callback for the runner (and, with `read_only=True`, the same decision as a
lock-free look that answers `NEEDS_WRITE` when only a write can decide). A callback reads (all reads
before any write), calls one pure decision of decide.py, and applies its writes. Serialization points
(INV-5): a light writes the user's guard `activeLanterns/{userId}`; an end writes the lantern document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from google.cloud import firestore

from .decide import (
    CREATE,
    DELETE,
    INCREMENT,
    SET,
    UPDATE,
    Decision,
    LightRequest,
    Write,
    decide_extinguish,
    decide_light,
    decide_retire,
    extinguish_status,
    needs_retire,
    old_venue_to_read,
    predecessor_to_read,
)
from .errors import LanternError
from .paths import guard_path, lantern_path, venue_path
from .records import StoredGuard, StoredLantern, parse_guard, parse_lantern
from .runner import NEEDS_WRITE

Document = Mapping[str, Any]


def _read(transaction: Any, db: Any, paths: Iterable[str]) -> dict[str, Document | None]:
    found: dict[str, Document | None] = dict.fromkeys(paths)
    for snapshot in transaction.get_all([db.document(path) for path in found]):
        if snapshot.exists:
            found[snapshot.reference.path] = snapshot.to_dict()
    return found


def _lantern(doc: Document | None) -> StoredLantern | None:
    return None if doc is None else parse_lantern(doc)


def _guard(doc: Document | None) -> StoredGuard | None:
    return None if doc is None else parse_guard(doc)


def _apply(transaction: Any, db: Any, writes: Iterable[Write]) -> None:
    for write in writes:
        reference = db.document(write.path)
        if write.kind == CREATE:
            transaction.create(reference, write.data)
        elif write.kind == SET:
            transaction.set(reference, write.data)
        elif write.kind == UPDATE:
            transaction.update(reference, write.data)
        elif write.kind == DELETE:
            transaction.delete(reference)
        else:
            assert write.kind == INCREMENT
            # A blind write: no read lock on the venue (B1). Fails NOT_FOUND if the venue is gone, which is
            # why every decrement is existence-guarded first (C2).
            transaction.update(reference, {"activeLanternCount": firestore.Increment(write.amount)})


def _finish(transaction: Any, db: Any, decision: Decision, read_only: bool) -> Any:
    if read_only and decision.writes:
        return NEEDS_WRITE
    _apply(transaction, db, decision.writes)
    return decision.output


def _end_context(transaction: Any, db: Any, lantern: StoredLantern) -> tuple[bool, StoredGuard | None]:
    """C2 and A2: the lantern's venue (existence only) and its user's guard, read inside the transaction."""
    venue, guard = _read(transaction, db, (venue_path(lantern.venue_id), guard_path(lantern.user_id))).values()
    return venue is not None, _guard(guard)


def light_body(db: Any, request: LightRequest, *, read_only: bool = False) -> Callable[[Any], Any]:
    """Both light doors. Read set: the new lantern id and the user's guard; the lantern the guard names
    (D2); the old venue of an expired predecessor (C2). Never the current venue (B1: pre-read outside)."""

    def body(transaction: Any) -> Any:
        existing, guard = _read(
            transaction, db, (lantern_path(request.lantern_id), guard_path(request.user_id))
        ).values()
        existing, guard = _lantern(existing), _guard(guard)
        predecessor = None
        named = predecessor_to_read(request, existing, guard)
        if named is not None:
            (predecessor,) = _read(transaction, db, (lantern_path(named),)).values()
            predecessor = _lantern(predecessor)
        old_venue_exists = None
        old_venue = old_venue_to_read(request, predecessor)
        if old_venue is not None:
            (stored,) = _read(transaction, db, (venue_path(old_venue),)).values()
            old_venue_exists = stored is not None
        decision = decide_light(request, existing, guard, predecessor, old_venue_exists)
        return _finish(transaction, db, decision, read_only)

    return body


def extinguish_body(
    db: Any, user_id: str, lantern_id: str, now: datetime, *, read_only: bool = False
) -> Callable[[Any], Any]:
    """A2: serialized on the lantern document (read here, status written at commit); then C2 + guard."""

    def body(transaction: Any) -> Any:
        (lantern,) = _read(transaction, db, (lantern_path(lantern_id),)).values()
        lantern = _lantern(lantern)
        status = extinguish_status(user_id, now, lantern)
        venue_exists, guard = _end_context(transaction, db, lantern)
        decision = decide_extinguish(lantern_id, lantern, status, now, venue_exists, guard)
        return _finish(transaction, db, decision, read_only)

    return body


def retire_body(db: Any, lantern_id: str, now: datetime, *, read_only: bool = False) -> Callable[[Any], Any]:
    """Auto-extinguish on read: retire one lantern if it is still stored active and expired, else nothing."""

    def body(transaction: Any) -> Any:
        (lantern,) = _read(transaction, db, (lantern_path(lantern_id),)).values()
        lantern = _lantern(lantern)
        if not needs_retire(lantern, now):
            return None  # someone else ended it meanwhile: nothing to do
        venue_exists, guard = _end_context(transaction, db, lantern)
        return _finish(transaction, db, decide_retire(lantern_id, lantern, venue_exists, guard), read_only)

    return body


def create_venue_body(
    db: Any, venue_id: str, document: dict[str, Any], output: Any, *, read_only: bool = False
) -> Callable[[Any], Any]:
    def body(transaction: Any) -> Any:
        (stored,) = _read(transaction, db, (venue_path(venue_id),)).values()
        if stored is not None:
            raise LanternError("venue_exists")
        return _finish(transaction, db, Decision(output, (Write(venue_path(venue_id), CREATE, document),)), read_only)

    return body


def delete_venue_body(db: Any, venue_id: str, output: Any, *, read_only: bool = False) -> Callable[[Any], Any]:
    def body(transaction: Any) -> Any:
        (stored,) = _read(transaction, db, (venue_path(venue_id),)).values()
        if stored is None:
            raise LanternError("venue_not_found")
        return _finish(transaction, db, Decision(output, (Write(venue_path(venue_id), DELETE),)), read_only)

    return body
