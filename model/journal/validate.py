"""Structural validation of one key's stored documents (docs/journal-decisions.md, precedence steps 2-3).

`record_problem` is independent of `step`: it reads documents as the reference's transaction would and
says why they are not a valid record (None when they are, or when the pair is absent and no lifecycle
exists). The model uses it only in tests and harnesses, to check that valid states produce valid documents
and that every corrupting fault produces an invalid record.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .constants import (
    AGGREGATE_TYPE,
    CALLER_SCOPE_KINDS,
    ENVIRONMENTS,
    EV_FAILED_FINAL,
    EV_LEASE_ACQUIRED,
    EV_LEASE_TAKEN_OVER,
    EV_REGISTERED,
    EV_SUCCEEDED,
    FAILED_FINAL,
    LEASE_DURATION,
    LEASED,
    MAX_REVISION,
    REGISTERED,
    SUCCEEDED,
    TERMINAL_COMMITMENT_KIND,
)
from .identity import audit_path, lifecycle_path, root_path

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SLUG = re.compile(r"[a-z][a-z0-9_]{0,63}")

ROOT_FIELDS = frozenset(
    "journalSchemaVersion commandIdentityVersion endpointSchemaVersion environment callerScopeKind "
    "commandType payloadFingerprint state revision createdAt updatedAt".split()
)
AUDIT_V1_FIELDS = frozenset(
    "auditSchemaVersion aggregateType commandKeyHash commandRevision eventType fromState toState "
    "environment callerScopeKind commandType occurredAt".split()
)
AUDIT_V2_FIELDS = AUDIT_V1_FIELDS | {"fenceEpoch", "leaseExpiresAt"}
LIFECYCLE_FIELDS = frozenset(
    "lifecycleSchemaVersion commandKeyHash state commandRevision fenceEpoch leaseOwnerFingerprint "
    "leaseAcquiredAt leaseExpiresAt createdAt updatedAt terminalCommitmentKind terminalCommitmentHash".split()
)
_EVENTS = {
    (LEASED, True): (EV_LEASE_ACQUIRED, REGISTERED, LEASED),
    (LEASED, False): (EV_LEASE_TAKEN_OVER, LEASED, LEASED),
    (SUCCEEDED, False): (EV_SUCCEEDED, LEASED, SUCCEEDED),
    (FAILED_FINAL, False): (EV_FAILED_FINAL, LEASED, FAILED_FINAL),
}


def _int(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _hex(value: Any) -> bool:
    return type(value) is str and _HEX64.fullmatch(value) is not None


def _time(value: Any) -> bool:
    return isinstance(value, datetime) and value.tzinfo is not None


def _root_problem(root: Mapping[str, Any]) -> str | None:
    if set(root) != ROOT_FIELDS:
        return "root fields"
    ok = (
        _int(root["journalSchemaVersion"], 1, 1)
        and _int(root["commandIdentityVersion"], 1, 1)
        and _int(root["endpointSchemaVersion"], 1, 1_000_000)
        and root["environment"] in ENVIRONMENTS
        and root["callerScopeKind"] in CALLER_SCOPE_KINDS
        and type(root["commandType"]) is str
        and _SLUG.fullmatch(root["commandType"]) is not None
        and _hex(root["payloadFingerprint"])
        and root["state"] == REGISTERED
        and _int(root["revision"], 1, 1)
        and _time(root["createdAt"])
        and _time(root["updatedAt"])
    )
    if not ok:
        return "root value"
    return None if root["updatedAt"] == root["createdAt"] else "root times"


def _same_registration(audit: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    return all(audit[f] == root[f] and type(audit[f]) is type(root[f]) for f in _REG_FIELDS)


_REG_FIELDS = ("environment", "callerScopeKind", "commandType")


def _audit1_problem(h: str, audit: Mapping[str, Any], root: Mapping[str, Any]) -> str | None:
    if set(audit) != AUDIT_V1_FIELDS:
        return "audit 1 fields"
    ok = (
        _int(audit["auditSchemaVersion"], 1, 1)
        and audit["aggregateType"] == AGGREGATE_TYPE
        and audit["commandKeyHash"] == h
        and _int(audit["commandRevision"], 1, 1)
        and audit["eventType"] == EV_REGISTERED
        and audit["fromState"] is None
        and audit["toState"] == REGISTERED
        and _same_registration(audit, root)
        and _time(audit["occurredAt"])
        and audit["occurredAt"] == root["createdAt"]
    )
    return None if ok else "audit 1 value"


def _lifecycle_problem(h: str, lc: Mapping[str, Any], root: Mapping[str, Any]) -> str | None:
    if set(lc) != LIFECYCLE_FIELDS:
        return "lifecycle fields"
    times = ("leaseAcquiredAt", "leaseExpiresAt", "createdAt", "updatedAt")
    ok = (
        _int(lc["lifecycleSchemaVersion"], 1, 1)
        and lc["commandKeyHash"] == h
        and lc["state"] in (LEASED, SUCCEEDED, FAILED_FINAL)
        and _int(lc["commandRevision"], 2, MAX_REVISION)
        and _int(lc["fenceEpoch"], 1, MAX_REVISION)
        and _hex(lc["leaseOwnerFingerprint"])
        and all(_time(lc[t]) for t in times)
    )
    if not ok:
        return "lifecycle value"
    acquired, created, updated = lc["leaseAcquiredAt"], lc["createdAt"], lc["updatedAt"]
    if lc["leaseExpiresAt"] != acquired + LEASE_DURATION or not root["createdAt"] <= created <= acquired:
        return "lifecycle times"
    revision, fence, kind, digest = lc["commandRevision"], lc["fenceEpoch"], *_terminal(lc)
    if lc["state"] == LEASED:
        ok = (
            revision == fence + 1
            and updated == acquired
            and kind is None
            and digest is None
            and (revision != 2 or created == acquired)
        )
    else:
        ok = revision == fence + 2 and acquired <= updated < lc["leaseExpiresAt"]
        if lc["state"] == SUCCEEDED:
            ok = ok and kind == TERMINAL_COMMITMENT_KIND and _hex(digest)
        else:
            ok = ok and kind is None and digest is None
    return None if ok else "lifecycle state invariants"


def _terminal(lc: Mapping[str, Any]) -> tuple[Any, Any]:
    return lc["terminalCommitmentKind"], lc["terminalCommitmentHash"]


def _partner_problem(h: str, audit: Mapping[str, Any] | None, lc: Mapping[str, Any], root: Mapping[str, Any]):
    if audit is None:
        return "missing current audit"
    if set(audit) != AUDIT_V2_FIELDS:
        return "current audit fields"
    revision = lc["commandRevision"]
    expected = _EVENTS.get((lc["state"], revision == 2))
    ok = (
        expected is not None
        and _int(audit["auditSchemaVersion"], 2, 2)
        and audit["aggregateType"] == AGGREGATE_TYPE
        and audit["commandKeyHash"] == h
        and _int(audit["commandRevision"], revision, revision)
        and (audit["eventType"], audit["fromState"], audit["toState"]) == expected
        and _same_registration(audit, root)
        and _int(audit["fenceEpoch"], lc["fenceEpoch"], lc["fenceEpoch"])
        and _time(audit["leaseExpiresAt"])
        and audit["leaseExpiresAt"] == lc["leaseExpiresAt"]
        and _time(audit["occurredAt"])
        and audit["occurredAt"] == lc["updatedAt"]
    )
    return None if ok else "current audit value"


def record_problem(
    key_hash: str,
    docs: Mapping[str, Mapping[str, Any]],
    *,
    environment: str | None = None,
    caller_scope_kind: str | None = None,
) -> str | None:
    """Why `docs` (one key's documents by path) is not a valid record; None if valid or unregistered."""
    h = key_hash
    root, audit1 = docs.get(root_path(h)), docs.get(audit_path(h, 1))
    lc = docs.get(lifecycle_path(h))
    if root is None and audit1 is None:
        return "orphan lifecycle" if lc is not None else None
    if root is None or audit1 is None:
        return "missing half of pair"
    problem = _root_problem(root) or _audit1_problem(h, audit1, root)
    if problem:
        return problem
    if (environment is not None and root["environment"] != environment) or (
        caller_scope_kind is not None and root["callerScopeKind"] != caller_scope_kind
    ):
        return "environment or caller scope kind mismatch"
    if lc is None:
        return "preseeded next audit" if audit_path(h, 2) in docs else None
    problem = _lifecycle_problem(h, lc, root)
    if problem:
        return problem
    revision = lc["commandRevision"]
    problem = _partner_problem(h, docs.get(audit_path(h, revision)), lc, root)
    if problem:
        return problem
    return "preseeded next audit" if audit_path(h, revision + 1) in docs else None
