"""The exact Firestore documents a model state stands for: {path: fields}, timestamps as aware datetimes,
ms values as ints. Invariants (`invariants.py`) and, later, the lockstep read-back use this form."""

from __future__ import annotations

from typing import Any

import attrs

from .constants import SCHEMA_VERSION
from .identity import event_path, record_path
from .state import CorruptRecord, Event, GatewayState, Journal

RECORD_FIELDS: tuple[str, ...] = ("schema_version", *(f.name for f in attrs.fields(Journal) if f.name != "events"))
EVENT_FIELDS: tuple[str, ...] = (
    "schema_version",
    "journal_key",
    *(f.name for f in attrs.fields(Event)),
)


def event_document(journal_key: str, event: Event) -> dict[str, Any]:
    doc = {"schema_version": SCHEMA_VERSION, "journal_key": journal_key}
    doc.update((f.name, getattr(event, f.name)) for f in attrs.fields(Event))
    return doc


def record_documents(journal: Journal) -> dict[str, dict[str, Any]]:
    docs = {record_path(journal.namespace_id, journal.journal_key): journal.fields()}
    for event in journal.events:
        docs[event_path(journal.namespace_id, journal.journal_key, event.revision)] = event_document(
            journal.journal_key, event
        )
    return docs


def documents(state: GatewayState) -> dict[str, dict[str, Any]]:
    """Every stored document of a state (a corrupt record's are its damaged documents, as stored)."""
    out: dict[str, dict[str, Any]] = {}
    for _key, record in state.records:
        out.update(stored_documents(record))
    return out


def stored_documents(record: Journal | CorruptRecord) -> dict[str, dict[str, Any]]:
    """The documents of one record: a journal's record and events, or a corrupt record's damaged documents."""
    if isinstance(record, Journal):
        return record_documents(record)
    return {path: dict(fields) for path, fields in record.docs}
