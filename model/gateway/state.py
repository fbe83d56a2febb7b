"""Gateway state: per (namespace_id, journal_key), a record with its audit chain, or a corrupt marker.

The record's attribute names are the stored field names (docs/gateway-contract.md, "The record"), so a
record's document is its attributes in declaration order. All classes are frozen and hashable with cached
hashes; a step changes a record with `attrs.evolve` and shares every other record with the previous state.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from .constants import SCHEMA_VERSION


@attrs.frozen(cache_hash=True)
class Event:
    """`.../events/{revision:010d}`: one per write, created in the same transaction (13 fields)."""

    revision: int
    event_type: str
    from_state: str | None  # None iff revision 1
    to_state: str
    fence_epoch: int
    lease_kind: str | None
    lease_expires_at: datetime | None
    evidence_class: str | None
    independent_verification: bool | None
    region: str
    occurred_at: datetime


@attrs.frozen(cache_hash=True, kw_only=True)
class Journal:
    """`gatewayNamespaces/{namespace_id}/journals/{journal_key}` (40 fields) plus its events."""

    journal_key: str
    namespace_id: str
    gateway_binding_id: str
    operation_id: str
    provider: str
    operation_identity: str
    provider_input_digest: str
    consume_idempotency_key: str
    provider_create_idempotency_key: str
    provider_confirm_idempotency_key: str
    state: str
    revision: int
    fence_epoch: int
    lease_kind: str | None = None
    lease_owner_fingerprint: str | None = None
    lease_acquired_at: datetime | None = None
    lease_expires_at: datetime | None = None
    consume_intent_at: datetime | None = None
    consume_transition_id: str | None = None
    permit_id: str | None = None
    permit_digest: str | None = None
    consume_transitioned_at: int | None = None
    settlement_deadline_at: int | None = None
    provider_intent_at: datetime | None = None
    claim_id: str | None = None
    provider_submission_id: str | None = None
    caller_outcome: str | None = None
    submission_reported_at: datetime | None = None
    payment_reference: str | None = None
    reconciliation_started_at: datetime | None = None
    evidence_class: str | None = None
    independent_verification: bool | None = None
    evidence_verdict: str | None = None
    submission_fenced: bool | None = None
    terminal_path: str | None = None
    terminal_receipt_digest: str | None = None
    processor_result: str | None = None
    created_at: datetime
    updated_at: datetime
    events: tuple[Event, ...] = ()

    corrupt = False

    @property
    def report(self) -> tuple:
        return (self.claim_id, self.provider_submission_id, self.payment_reference, self.caller_outcome)

    @property
    def permit_group(self) -> tuple:
        return (
            self.consume_transition_id,
            self.permit_id,
            self.permit_digest,
            self.consume_transitioned_at,
            self.settlement_deadline_at,
        )

    def fields(self) -> dict:
        """The stored document: `schema_version` first, then every attribute but `events`, in order."""
        doc = {"schema_version": SCHEMA_VERSION}
        for field in attrs.fields(Journal):
            if field.name != "events":
                doc[field.name] = getattr(self, field.name)
        return doc


@attrs.frozen(cache_hash=True)
class CorruptRecord:
    """Stored documents that are not a record of this contract (only a harness fault makes one, `faults.py`):
    every call on that key answers `unrecognized_record` and writes nothing. `docs` are the damaged documents
    exactly as stored: ((path, ((field, value), ...)), ...)."""

    label: str
    docs: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()

    corrupt = True


Record = Journal | CorruptRecord
Key = tuple[str, str]  # (namespace_id, journal_key)


@attrs.frozen(cache_hash=True)
class GatewayState:
    """Records by (namespace_id, journal_key), as a tuple of pairs sorted by key (canonical form)."""

    records: tuple[tuple[Key, Record], ...] = ()

    @classmethod
    def empty(cls) -> GatewayState:
        return _EMPTY

    def get(self, key: Key) -> Record | None:
        for k, record in self.records:
            if k == key:
                return record
        return None

    def with_record(self, key: Key, record: Record) -> GatewayState:
        kept = [(k, r) for k, r in self.records if k != key]
        kept.append((key, record))
        kept.sort(key=lambda pair: pair[0])
        return attrs.evolve(self, records=tuple(kept))


_EMPTY = GatewayState()
