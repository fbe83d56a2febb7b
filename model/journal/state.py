"""Journal state: per command key hash, a valid record (registration, lifecycle, audits) or a corrupt one.

All classes are frozen and hashable with cached hashes, so a checker can memoize on `JournalState`. A step
replaces one key's record and shares every other record with the previous state.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import attrs


@attrs.frozen(cache_hash=True)
class Registration:
    """The immutable root `checkoutRequests/{h}` (and, derived from it, the revision-1 audit)."""

    command_type: str
    endpoint_schema_version: int
    payload_fingerprint: str
    environment: str
    caller_scope_kind: str
    created_at: datetime


@attrs.frozen(cache_hash=True)
class Lifecycle:
    """`checkoutRequests/{h}/lifecycle/current`."""

    state: str  # leased | succeeded | failed_final
    revision: int
    fence_epoch: int
    owner_fingerprint: str
    acquired_at: datetime
    expires_at: datetime
    created_at: datetime
    updated_at: datetime
    terminal_kind: str | None = None
    terminal_hash: str | None = None


@attrs.frozen(cache_hash=True)
class AuditEvent:
    """A version-2 audit event; environment, caller kind, command type and hash come from the record."""

    revision: int
    event_type: str
    from_state: str
    to_state: str
    fence_epoch: int
    lease_expires_at: datetime
    occurred_at: datetime


@attrs.frozen(cache_hash=True)
class CommandRecord:
    """A valid stored command: root + revision-1 audit, optional lifecycle, version-2 audits by revision."""

    registration: Registration
    lifecycle: Lifecycle | None = None
    audits: tuple[AuditEvent, ...] = ()

    corrupt = False

    @property
    def revision(self) -> int:
        return 1 if self.lifecycle is None else self.lifecycle.revision


FrozenDoc = tuple[tuple[str, str, Any], ...]  # (field, type name, value), sorted by field


def freeze_document(doc: dict[str, Any]) -> FrozenDoc:
    # The type name keeps True distinct from 1 (they compare and hash equal in Python).
    return tuple((k, type(v).__name__, v) for k, v in sorted(doc.items()))


def thaw_document(frozen: FrozenDoc) -> dict[str, Any]:
    return {k: v for k, _t, v in frozen}


@attrs.frozen(cache_hash=True)
class CorruptRecord:
    """A key whose stored documents are not a valid record: kept opaque; every call answers unrecognized."""

    documents: tuple[tuple[str, FrozenDoc], ...]  # (path, document), sorted by path

    corrupt = True

    @classmethod
    def of(cls, docs: dict[str, dict[str, Any]]) -> CorruptRecord:
        return cls(tuple((path, freeze_document(doc)) for path, doc in sorted(docs.items())))

    def thawed(self) -> dict[str, dict[str, Any]]:
        return {path: thaw_document(doc) for path, doc in self.documents}


Record = CommandRecord | CorruptRecord


@attrs.frozen(cache_hash=True)
class JournalState:
    """Records by command key hash, as a tuple of (hash, record) pairs sorted by hash (canonical form)."""

    records: tuple[tuple[str, Record], ...] = ()

    @classmethod
    def empty(cls) -> JournalState:
        return _EMPTY

    def get(self, key_hash: str) -> Record | None:
        for h, record in self.records:
            if h == key_hash:
                return record
        return None

    def with_record(self, key_hash: str, record: Record) -> JournalState:
        items = self.records
        for i, (h, _old) in enumerate(items):
            if h == key_hash:
                return JournalState(items[:i] + ((key_hash, record),) + items[i + 1 :])
            if h > key_hash:
                return JournalState(items[:i] + ((key_hash, record),) + items[i:])
        return JournalState(items + ((key_hash, record),))

    def keys(self) -> Iterator[str]:
        return (h for h, _ in self.records)

    def __len__(self) -> int:
        return len(self.records)


_EMPTY = JournalState()
