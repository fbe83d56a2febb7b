"""The exact stored documents a state stands for: field names as the seeds spell them, aware UTC times."""

from __future__ import annotations

from typing import Any

from .constants import (
    AGGREGATE_TYPE,
    AUDIT_V1,
    AUDIT_V2,
    COMMAND_IDENTITY_VERSION,
    EV_REGISTERED,
    JOURNAL_SCHEMA_VERSION,
    LIFECYCLE_SCHEMA_VERSION,
    REGISTERED,
)
from .identity import audit_path, lifecycle_path, root_path
from .state import AuditEvent, CommandRecord, JournalState, Lifecycle, Record, Registration

Document = dict[str, Any]


def root_document(reg: Registration) -> Document:
    return {
        "journalSchemaVersion": JOURNAL_SCHEMA_VERSION,
        "commandIdentityVersion": COMMAND_IDENTITY_VERSION,
        "endpointSchemaVersion": reg.endpoint_schema_version,
        "environment": reg.environment,
        "callerScopeKind": reg.caller_scope_kind,
        "commandType": reg.command_type,
        "payloadFingerprint": reg.payload_fingerprint,
        "state": REGISTERED,
        "revision": 1,
        "createdAt": reg.created_at,
        "updatedAt": reg.created_at,
    }


def registration_audit_document(key_hash: str, reg: Registration) -> Document:
    return {
        "auditSchemaVersion": AUDIT_V1,
        "aggregateType": AGGREGATE_TYPE,
        "commandKeyHash": key_hash,
        "commandRevision": 1,
        "eventType": EV_REGISTERED,
        "fromState": None,
        "toState": REGISTERED,
        "environment": reg.environment,
        "callerScopeKind": reg.caller_scope_kind,
        "commandType": reg.command_type,
        "occurredAt": reg.created_at,
    }


def lifecycle_document(key_hash: str, lc: Lifecycle) -> Document:
    return {
        "lifecycleSchemaVersion": LIFECYCLE_SCHEMA_VERSION,
        "commandKeyHash": key_hash,
        "state": lc.state,
        "commandRevision": lc.revision,
        "fenceEpoch": lc.fence_epoch,
        "leaseOwnerFingerprint": lc.owner_fingerprint,
        "leaseAcquiredAt": lc.acquired_at,
        "leaseExpiresAt": lc.expires_at,
        "createdAt": lc.created_at,
        "updatedAt": lc.updated_at,
        "terminalCommitmentKind": lc.terminal_kind,
        "terminalCommitmentHash": lc.terminal_hash,
    }


def transition_audit_document(key_hash: str, reg: Registration, event: AuditEvent) -> Document:
    return {
        "auditSchemaVersion": AUDIT_V2,
        "aggregateType": AGGREGATE_TYPE,
        "commandKeyHash": key_hash,
        "commandRevision": event.revision,
        "eventType": event.event_type,
        "fromState": event.from_state,
        "toState": event.to_state,
        "environment": reg.environment,
        "callerScopeKind": reg.caller_scope_kind,
        "commandType": reg.command_type,
        "fenceEpoch": event.fence_epoch,
        "leaseExpiresAt": event.lease_expires_at,
        "occurredAt": event.occurred_at,
    }


def record_documents(key_hash: str, record: Record) -> dict[str, Document]:
    """Every stored document of one key (fresh dicts; the caller may modify them)."""
    if not isinstance(record, CommandRecord):
        return record.thawed()
    reg = record.registration
    docs = {
        root_path(key_hash): root_document(reg),
        audit_path(key_hash, 1): registration_audit_document(key_hash, reg),
    }
    for event in record.audits:
        docs[audit_path(key_hash, event.revision)] = transition_audit_document(key_hash, reg, event)
    if record.lifecycle is not None:
        docs[lifecycle_path(key_hash)] = lifecycle_document(key_hash, record.lifecycle)
    return docs


def documents_for(state: JournalState, key_hash: str) -> dict[str, Document]:
    """The stored documents of one key ({} when absent). Paths not listed must not exist."""
    record = state.get(key_hash)
    return {} if record is None else record_documents(key_hash, record)


def documents(state: JournalState) -> dict[str, Document]:
    """Every document the reference's Firestore must hold for this state, by path."""
    out: dict[str, Document] = {}
    for key_hash, record in state.records:
        out.update(record_documents(key_hash, record))
    return out
