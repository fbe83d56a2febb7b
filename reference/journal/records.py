"""Stored records: exact builders and fail-closed parsers for the four document shapes.

A parser accepts only a record this contract could have written: exactly the documented fields, exact
types, closed enums and the relationships between them. Anything else raises `unrecognized_record`;
nothing here repairs or normalizes a stored value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .errors import CommandJournalError
from .identity import TERMINAL_COMMITMENT_KIND
from .inputs import CALLER_SCOPE_KINDS, ENVIRONMENTS, MAX_ENDPOINT_SCHEMA_VERSION, MAX_FENCE_EPOCH, PreparedCommand

LEASE_DURATION = timedelta(seconds=60)
MAX_REVISION = 9_999_999_999
AGGREGATE_TYPE = "commerce_command"
LEASED, SUCCEEDED, FAILED_FINAL = "leased", "succeeded", "failed_final"
TERMINAL_STATES = (SUCCEEDED, FAILED_FINAL)
TERMINAL_EVENTS = {SUCCEEDED: "command_succeeded", FAILED_FINAL: "command_failed_final"}

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_COMMAND_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def unrecognized() -> CommandJournalError:
    return CommandJournalError("unrecognized_record")


def _check(condition: bool) -> None:
    if not condition:
        raise unrecognized()


def _is_int_in(low: int, high: int) -> Callable[[Any], bool]:
    return lambda value: type(value) is int and low <= value <= high


def _is_exactly(expected: Any) -> Callable[[Any], bool]:
    return lambda value: type(value) is type(expected) and value == expected


def _is_one_of(options: tuple[str, ...]) -> Callable[[Any], bool]:
    return lambda value: type(value) is str and value in options


def _is_sha256(value: Any) -> bool:
    return type(value) is str and _SHA256_HEX.fullmatch(value) is not None


def _is_slug(value: Any) -> bool:
    return type(value) is str and _COMMAND_TYPE.fullmatch(value) is not None


def _is_timestamp(value: Any) -> bool:
    return isinstance(value, datetime) and value.utcoffset() == timedelta(0)


def _validate(document: Mapping[str, Any] | None, schema: Mapping[str, Callable[[Any], bool]]) -> Mapping[str, Any]:
    _check(type(document) is dict and set(document) == set(schema))
    _check(all(type(name) is str for name in document))
    _check(all(is_valid(document[name]) for name, is_valid in schema.items()))
    return document


ROOT_SCHEMA = {
    "journalSchemaVersion": _is_exactly(1),
    "commandIdentityVersion": _is_exactly(1),
    "endpointSchemaVersion": _is_int_in(1, MAX_ENDPOINT_SCHEMA_VERSION),
    "environment": _is_one_of(ENVIRONMENTS),
    "callerScopeKind": _is_one_of(CALLER_SCOPE_KINDS),
    "commandType": _is_slug,
    "payloadFingerprint": _is_sha256,
    "state": _is_exactly("registered"),
    "revision": _is_exactly(1),
    "createdAt": _is_timestamp,
    "updatedAt": _is_timestamp,
}

REGISTRATION_AUDIT_SCHEMA = {
    "auditSchemaVersion": _is_exactly(1),
    "aggregateType": _is_exactly(AGGREGATE_TYPE),
    "commandKeyHash": _is_sha256,
    "commandRevision": _is_exactly(1),
    "eventType": _is_exactly("command_registered"),
    "fromState": lambda value: value is None,
    "toState": _is_exactly("registered"),
    "environment": _is_one_of(ENVIRONMENTS),
    "callerScopeKind": _is_one_of(CALLER_SCOPE_KINDS),
    "commandType": _is_slug,
    "occurredAt": _is_timestamp,
}

LIFECYCLE_SCHEMA = {
    "lifecycleSchemaVersion": _is_exactly(1),
    "commandKeyHash": _is_sha256,
    "state": _is_one_of((LEASED, SUCCEEDED, FAILED_FINAL)),
    "commandRevision": _is_int_in(2, MAX_REVISION),
    "fenceEpoch": _is_int_in(1, MAX_FENCE_EPOCH),
    "leaseOwnerFingerprint": _is_sha256,
    "leaseAcquiredAt": _is_timestamp,
    "leaseExpiresAt": _is_timestamp,
    "createdAt": _is_timestamp,
    "updatedAt": _is_timestamp,
    "terminalCommitmentKind": lambda value: value is None or value == TERMINAL_COMMITMENT_KIND,
    "terminalCommitmentHash": lambda value: value is None or _is_sha256(value),
}

TRANSITION_AUDIT_SCHEMA = {
    "auditSchemaVersion": _is_exactly(2),
    "aggregateType": _is_exactly(AGGREGATE_TYPE),
    "commandKeyHash": _is_sha256,
    "commandRevision": _is_int_in(2, MAX_REVISION),
    "eventType": _is_one_of(("command_lease_acquired", "command_lease_taken_over", *TERMINAL_EVENTS.values())),
    "fromState": _is_one_of(("registered", LEASED)),
    "toState": _is_one_of((LEASED, *TERMINAL_STATES)),
    "environment": _is_one_of(ENVIRONMENTS),
    "callerScopeKind": _is_one_of(CALLER_SCOPE_KINDS),
    "commandType": _is_slug,
    "fenceEpoch": _is_int_in(1, MAX_FENCE_EPOCH),
    "leaseExpiresAt": _is_timestamp,
    "occurredAt": _is_timestamp,
}


@dataclass(frozen=True, slots=True)
class Registration:
    command_type: str
    endpoint_schema_version: int
    payload_fingerprint: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Lifecycle:
    state: str
    revision: int
    fence_epoch: int
    owner_fingerprint: str
    acquired_at: datetime
    expires_at: datetime
    created_at: datetime
    updated_at: datetime
    commitment_hash: str | None

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


def parse_registration(
    root: Mapping[str, Any] | None, audit: Mapping[str, Any] | None, command: PreparedCommand
) -> Registration:
    root = _validate(root, ROOT_SCHEMA)
    audit = _validate(audit, REGISTRATION_AUDIT_SCHEMA)
    _check(root["createdAt"] == root["updatedAt"])
    # Environment and caller kind are inputs of the key hash: a stored value that disagrees is corruption.
    _check(root["environment"] == command.environment and root["callerScopeKind"] == command.caller_scope_kind)
    _check(audit["commandKeyHash"] == command.command_key_hash)
    _check(all(audit[name] == root[name] for name in ("environment", "callerScopeKind", "commandType")))
    _check(audit["occurredAt"] == root["createdAt"])
    return Registration(
        command_type=root["commandType"],
        endpoint_schema_version=root["endpointSchemaVersion"],
        payload_fingerprint=root["payloadFingerprint"],
        created_at=root["createdAt"],
    )


def parse_lifecycle(
    document: Mapping[str, Any] | None, command: PreparedCommand, registration: Registration
) -> Lifecycle:
    doc = _validate(document, LIFECYCLE_SCHEMA)
    state, revision, fence = doc["state"], doc["commandRevision"], doc["fenceEpoch"]
    acquired, expires, created, updated = (
        doc["leaseAcquiredAt"],
        doc["leaseExpiresAt"],
        doc["createdAt"],
        doc["updatedAt"],
    )
    _check(doc["commandKeyHash"] == command.command_key_hash)
    _check(expires == acquired + LEASE_DURATION)
    _check(registration.created_at <= created <= acquired)
    kind, commitment = doc["terminalCommitmentKind"], doc["terminalCommitmentHash"]
    if state == LEASED:
        _check(revision == fence + 1 and updated == acquired and kind is None and commitment is None)
        _check(revision != 2 or created == acquired)
    else:
        _check(revision == fence + 2 and acquired <= updated < expires)
        if state == SUCCEEDED:
            _check(kind == TERMINAL_COMMITMENT_KIND and commitment is not None)
        else:
            _check(kind is None and commitment is None)
    return Lifecycle(
        state, revision, fence, doc["leaseOwnerFingerprint"], acquired, expires, created, updated, commitment
    )


def check_current_audit(
    document: Mapping[str, Any] | None, command: PreparedCommand, registration: Registration, lifecycle: Lifecycle
) -> None:
    audit = _validate(document, TRANSITION_AUDIT_SCHEMA)
    if lifecycle.is_terminal:
        expected = (TERMINAL_EVENTS[lifecycle.state], LEASED, lifecycle.state)
    elif lifecycle.revision == 2:
        expected = ("command_lease_acquired", "registered", LEASED)
    else:
        expected = ("command_lease_taken_over", LEASED, LEASED)
    _check((audit["eventType"], audit["fromState"], audit["toState"]) == expected)
    _check(audit["commandKeyHash"] == command.command_key_hash and audit["commandRevision"] == lifecycle.revision)
    _check(audit["environment"] == command.environment and audit["callerScopeKind"] == command.caller_scope_kind)
    _check(audit["commandType"] == registration.command_type)  # the caller's type may conflict: judged later
    _check(audit["fenceEpoch"] == lifecycle.fence_epoch and audit["leaseExpiresAt"] == lifecycle.expires_at)
    _check(audit["occurredAt"] == lifecycle.updated_at)


def root_document(command: PreparedCommand, now: datetime) -> dict[str, Any]:
    return {
        "journalSchemaVersion": 1,
        "commandIdentityVersion": 1,
        "endpointSchemaVersion": command.endpoint_schema_version,
        "environment": command.environment,
        "callerScopeKind": command.caller_scope_kind,
        "commandType": command.command_type,
        "payloadFingerprint": command.payload_fingerprint,
        "state": "registered",
        "revision": 1,
        "createdAt": now,
        "updatedAt": now,
    }


def registration_audit_document(command: PreparedCommand, now: datetime) -> dict[str, Any]:
    return {
        "auditSchemaVersion": 1,
        "aggregateType": AGGREGATE_TYPE,
        "commandKeyHash": command.command_key_hash,
        "commandRevision": 1,
        "eventType": "command_registered",
        "fromState": None,
        "toState": "registered",
        "environment": command.environment,
        "callerScopeKind": command.caller_scope_kind,
        "commandType": command.command_type,
        "occurredAt": now,
    }


def lifecycle_document(command: PreparedCommand, lifecycle: Lifecycle) -> dict[str, Any]:
    terminal = lifecycle.state == SUCCEEDED
    return {
        "lifecycleSchemaVersion": 1,
        "commandKeyHash": command.command_key_hash,
        "state": lifecycle.state,
        "commandRevision": lifecycle.revision,
        "fenceEpoch": lifecycle.fence_epoch,
        "leaseOwnerFingerprint": lifecycle.owner_fingerprint,
        "leaseAcquiredAt": lifecycle.acquired_at,
        "leaseExpiresAt": lifecycle.expires_at,
        "createdAt": lifecycle.created_at,
        "updatedAt": lifecycle.updated_at,
        "terminalCommitmentKind": TERMINAL_COMMITMENT_KIND if terminal else None,
        "terminalCommitmentHash": lifecycle.commitment_hash if terminal else None,
    }


def transition_audit_document(
    command: PreparedCommand, lifecycle: Lifecycle, event_type: str, from_state: str
) -> dict[str, Any]:
    """The audit for the mutation that produced `lifecycle` (its revision, fence, expiry and update time)."""
    return {
        "auditSchemaVersion": 2,
        "aggregateType": AGGREGATE_TYPE,
        "commandKeyHash": command.command_key_hash,
        "commandRevision": lifecycle.revision,
        "eventType": event_type,
        "fromState": from_state,
        "toState": lifecycle.state,
        "environment": command.environment,
        "callerScopeKind": command.caller_scope_kind,
        "commandType": command.command_type,
        "fenceEpoch": lifecycle.fence_epoch,
        "leaseExpiresAt": lifecycle.expires_at,
        "occurredAt": lifecycle.updated_at,
    }
