"""Fault injection: deterministic rewrites of one key's stored documents (the malformed-record classes).

Every fault requires a registered key (root pair present) that is not corrupt ("stored" below), plus the
kind's own precondition (`fault_applies`).
The rewrite starts from `record_documents` of the key; the harness then writes exactly `documents_for`
the key in the new state (creating, replacing and deleting documents to match). Every kind but the two
rebases (`VALID_FAULTS`) yields a record that is not valid, kept opaque as a `CorruptRecord`.

| kind | applies to | rewrite |
| --- | --- | --- |
| missing_root | stored | delete the root (audit 1 kept) |
| missing_registration_audit | stored | delete the revision-1 audit |
| orphan_lifecycle | stored | delete root and audit 1; keep the lifecycle, or create one (FAULT_LEASE_ID) |
| missing_current_audit | with lifecycle | delete the lifecycle's revision-R audit partner |
| preseeded_next_audit | revision < max | add a valid-looking v2 audit at R+1 (2 without lifecycle) |
| extra_field | stored | root gains `unexpectedField` |
| wrong_type | stored | lifecycle fenceEpoch as str; without lifecycle root revision = True |
| future_version | stored | root journalSchemaVersion = 2 |
| bad_hash | stored | lifecycle commandKeyHash uppercased; without lifecycle root payloadFingerprint |
| timestamp_regression | stored | lifecycle createdAt = root createdAt - 1 us; without: root updatedAt - 1 us |
| environment_mismatch | stored | root environment = the next value of the enum |
| revision_at_maximum | leased, revision < max | VALID: revision max, fence max-1, partner audit moved to max |
| revision_below_maximum | leased, revision < max-1 | VALID: revision max-1, fence max-2, partner audit moved there |
| fence_at_maximum | with lifecycle | lifecycle fenceEpoch = max |

revision_below_maximum leaves room for one finish, at a fence far past the small integers CPython caches: an exact
retry of that finish is where an `==` on a fence turned `is` shows.
"""

from __future__ import annotations

from datetime import timedelta

from .constants import (
    ENVIRONMENTS,
    EV_LEASE_ACQUIRED,
    EV_LEASE_TAKEN_OVER,
    LEASE_DURATION,
    LEASED,
    MAX_REVISION,
    REGISTERED,
)
from .documents import Document, lifecycle_document, record_documents, transition_audit_document
from .identity import audit_path, digest, lifecycle_path, root_path
from .ops import CommandRef, FaultKind, InjectFault, owner_fingerprint_of
from .results import Result, fixed
from .state import AuditEvent, CommandRecord, CorruptRecord, JournalState, Lifecycle

FAULT_LEASE_ID = "00000000-0000-4000-8000-000000000000"  # holder of a lifecycle created by orphan_lifecycle
_MICROSECOND = timedelta(microseconds=1)
_INJECTED = fixed("fault_injected", wrote=True)
# The faults that leave a valid record, each with the revision it rebases a leased record to.
VALID_FAULTS = {FaultKind.REVISION_AT_MAXIMUM: MAX_REVISION, FaultKind.REVISION_BELOW_MAXIMUM: MAX_REVISION - 1}
_NOT_APPLICABLE = fixed("fault_not_applicable")


def fault_applies(state: JournalState, command: CommandRef, kind: FaultKind) -> bool:
    record = state.get(command.key_hash)
    if not isinstance(record, CommandRecord):
        return False
    lc = record.lifecycle
    if kind in (FaultKind.MISSING_CURRENT_AUDIT, FaultKind.FENCE_AT_MAXIMUM):
        return lc is not None
    if kind in VALID_FAULTS:
        return lc is not None and lc.state == LEASED and lc.revision < VALID_FAULTS[kind]
    if kind is FaultKind.PRESEEDED_NEXT_AUDIT:
        return record.revision < MAX_REVISION
    return True


def _other_hash(value: str) -> str:
    upper = value.upper()
    return upper if upper != value else digest("model-fault-bad-hash", value)


def _rebase(record: CommandRecord, revision: int) -> CommandRecord:
    """The leased record moved to `revision` (fence revision-1), its partner audit with it; the audits below
    stay, so the chain keeps one gap below the new revision."""
    lc = record.lifecycle
    new_lc = Lifecycle(
        LEASED,
        revision,
        revision - 1,
        lc.owner_fingerprint,
        lc.acquired_at,
        lc.expires_at,
        lc.created_at,
        lc.updated_at,
    )
    partner = AuditEvent(revision, EV_LEASE_TAKEN_OVER, LEASED, LEASED, revision - 1, lc.expires_at, lc.updated_at)
    audits = tuple(e for e in record.audits if e.revision != lc.revision) + (partner,)
    return CommandRecord(record.registration, new_lc, audits)


def _corrupt_documents(h: str, record: CommandRecord, kind: FaultKind) -> dict[str, Document]:
    docs = record_documents(h, record)
    reg = record.registration
    lc = record.lifecycle
    root = docs[root_path(h)]
    lifecycle = docs.get(lifecycle_path(h))
    if kind is FaultKind.MISSING_ROOT:
        del docs[root_path(h)]
    elif kind is FaultKind.MISSING_REGISTRATION_AUDIT:
        del docs[audit_path(h, 1)]
    elif kind is FaultKind.ORPHAN_LIFECYCLE:
        del docs[root_path(h)]
        del docs[audit_path(h, 1)]
        if lifecycle is None:
            t = reg.created_at
            owner = owner_fingerprint_of(h, FAULT_LEASE_ID)
            docs[lifecycle_path(h)] = lifecycle_document(h, Lifecycle(LEASED, 2, 1, owner, t, t + LEASE_DURATION, t, t))
    elif kind is FaultKind.MISSING_CURRENT_AUDIT:
        del docs[audit_path(h, lc.revision)]
    elif kind is FaultKind.PRESEEDED_NEXT_AUDIT:
        if lc is None:
            t = reg.created_at
            event = AuditEvent(2, EV_LEASE_ACQUIRED, REGISTERED, LEASED, 1, t + LEASE_DURATION, t)
        else:
            event = AuditEvent(
                lc.revision + 1,
                EV_LEASE_TAKEN_OVER,
                LEASED,
                LEASED,
                lc.fence_epoch + 1,
                lc.expires_at + LEASE_DURATION,
                lc.expires_at,
            )
        docs[audit_path(h, event.revision)] = transition_audit_document(h, reg, event)
    elif kind is FaultKind.EXTRA_FIELD:
        root["unexpectedField"] = "unexpected"
    elif kind is FaultKind.WRONG_TYPE:
        if lifecycle is not None:
            lifecycle["fenceEpoch"] = str(lc.fence_epoch)
        else:
            root["revision"] = True
    elif kind is FaultKind.FUTURE_VERSION:
        root["journalSchemaVersion"] = 2
    elif kind is FaultKind.BAD_HASH:
        if lifecycle is not None:
            lifecycle["commandKeyHash"] = _other_hash(h)
        else:
            root["payloadFingerprint"] = _other_hash(reg.payload_fingerprint)
    elif kind is FaultKind.TIMESTAMP_REGRESSION:
        if lifecycle is not None:
            lifecycle["createdAt"] = reg.created_at - _MICROSECOND
        else:
            root["updatedAt"] = reg.created_at - _MICROSECOND
    elif kind is FaultKind.ENVIRONMENT_MISMATCH:
        root["environment"] = ENVIRONMENTS[(ENVIRONMENTS.index(reg.environment) + 1) % len(ENVIRONMENTS)]
    elif kind is FaultKind.FENCE_AT_MAXIMUM:
        lifecycle["fenceEpoch"] = MAX_REVISION
    else:  # pragma: no cover - every kind is handled above or in apply_fault
        raise ValueError(kind)
    return docs


def apply_fault(state: JournalState, op: InjectFault) -> tuple[JournalState, Result]:
    if not fault_applies(state, op.command, op.kind):
        return state, _NOT_APPLICABLE
    h = op.command.key_hash
    record = state.get(h)
    if op.kind in VALID_FAULTS:
        new_record = _rebase(record, VALID_FAULTS[op.kind])
    else:
        new_record = CorruptRecord.of(_corrupt_documents(h, record, op.kind))
    return state.with_record(h, new_record), _INJECTED
