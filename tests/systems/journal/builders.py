"""Builders shared by the journal unit suites: commands, clocks, operation calls and stored documents.

The digests and documents here are written from SPEC.md and the seeds, independently of
`reference.journal.identity` and `reference.journal.records`, so that comparing what the reference stores
with what is built here checks the reference rather than itself (test_identity_golden.py checks these
builders against the golden vectors too).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from reference import (
    CommandJournalError,
    acquire_commerce_command_lease,
    complete_commerce_command,
    fail_commerce_command,
    register_commerce_command,
)
from reference.journal import runner
from tests.fakes import FakeFirestore

T0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)  # registration
T1 = T0 + timedelta(seconds=10)  # first lease
LEASE = timedelta(seconds=60)
US = timedelta(microseconds=1)
MAX = 9_999_999_999

COMMAND_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
LEASE_A = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
LEASE_B = "886313e1-3b8a-4372-9b90-0c9aee199e5d"
REF_A = "a" * 64
REF_B = "b" * 64
OPERATIONS = ("register", "acquire", "complete", "fail")


# -- identity, from SPEC.md "Identity and fingerprints" ---------------------------------------------------------
def frame(text: str) -> bytes:
    data = text.encode("utf-8")
    return len(data).to_bytes(4, "big") + data


def digest(*fields: str) -> str:
    return hashlib.sha256(b"".join(frame(item) for item in fields)).hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True)
class Command:
    environment: str = "test"
    kind: str = "firebase_uid"
    value: str = "uid-alice"
    command_id: str = COMMAND_ID
    command_type: str = "create_checkout_session"
    endpoint_schema_version: int = 1
    payload: dict[str, Any] = field(default_factory=lambda: {"raceId": "spring-10k", "quantity": 2, "tier": "adult"})

    def kwargs(self) -> dict[str, Any]:
        """Fresh API keyword arguments (new dicts each time: the caller may not alias them)."""
        return {
            "environment": self.environment,
            "caller_scope": {"kind": self.kind, "value": self.value},
            "command_id": self.command_id,
            "command_type": self.command_type,
            "endpoint_schema_version": self.endpoint_schema_version,
            "payload": copy.deepcopy(self.payload),
        }

    def but(self, **changes: Any) -> Command:
        return replace(self, **changes)

    @property
    def key_hash(self) -> str:
        return digest("commerce-command-key", "1", self.environment, self.kind, self.value, self.command_id)

    @property
    def payload_fingerprint(self) -> str:
        return digest("commerce-command-payload", "1", self.key_hash, canonical_json(self.payload))

    def owner(self, lease_id: str) -> str:
        return digest("commerce-command-lease-owner", "1", self.key_hash, lease_id)

    def commitment(self, reference_fingerprint: str) -> str:
        return digest(
            "commerce-command-terminal-commitment", "1", self.key_hash, "business_record_digest", reference_fingerprint
        )

    @property
    def root_path(self) -> str:
        return f"checkoutRequests/{self.key_hash}"

    @property
    def lifecycle_path(self) -> str:
        return f"checkoutRequests/{self.key_hash}/lifecycle/current"

    def audit_path(self, revision: int) -> str:
        return f"auditEvents/commerce_command_{self.key_hash}_{revision:010d}"


CMD = Command()


# -- clocks and calls -----------------------------------------------------------------------------------------------
class Clock:
    """A fixed trusted reading that counts how often it is read."""

    def __init__(self, at: datetime) -> None:
        self.at = at
        self.calls = 0

    def __call__(self) -> datetime:
        self.calls += 1
        return self.at


_API: dict[str, Callable[..., Any]] = {
    "register": register_commerce_command,
    "acquire": acquire_commerce_command_lease,
    "complete": complete_commerce_command,
    "fail": fail_commerce_command,
}


def operation_kwargs(
    operation: str,
    command: Command = CMD,
    *,
    lease: str = LEASE_A,
    fence: int = 1,
    ref: str = REF_A,
) -> dict[str, Any]:
    kwargs = command.kwargs()
    if operation != "register":
        kwargs["lease_id"] = lease
    if operation in ("complete", "fail"):
        kwargs["expected_fence_epoch"] = fence
    if operation == "complete":
        kwargs["terminal_reference_fingerprint"] = ref
    return kwargs


def call(
    operation: str,
    db: Any,
    at: datetime,
    command: Command = CMD,
    *,
    lease: str = LEASE_A,
    fence: int = 1,
    ref: str = REF_A,
    **overrides: Any,
) -> Any:
    kwargs = operation_kwargs(operation, command, lease=lease, fence=fence, ref=ref)
    kwargs.update(overrides)
    kwargs.setdefault("clock", Clock(at))
    return _API[operation](db=db, **kwargs)


def answer(operation: str, db: Any, at: datetime, command: Command = CMD, **kwargs: Any) -> str:
    """The outcome name of an output, or the code of the journal error: one string for decision tables."""
    try:
        return call(operation, db, at, command, **kwargs).to_json()["outcome"]
    except CommandJournalError as error:
        return error.code


def register(db: Any, at: datetime = T0, command: Command = CMD, **kwargs: Any) -> Any:
    return call("register", db, at, command, **kwargs)


def acquire(db: Any, at: datetime, command: Command = CMD, *, lease: str = LEASE_A, **kwargs: Any) -> Any:
    return call("acquire", db, at, command, lease=lease, **kwargs)


def complete(db: Any, at: datetime, command: Command = CMD, **kwargs: Any) -> Any:
    return call("complete", db, at, command, **kwargs)


def fail(db: Any, at: datetime, command: Command = CMD, **kwargs: Any) -> Any:
    return call("fail", db, at, command, **kwargs)


def patch_backoff(monkeypatch: Any) -> list[float]:
    """Replace the runner's default `sleep` (bound at definition time) with a recorder; returns the pauses."""
    pauses: list[float] = []
    monkeypatch.setitem(runner.run_transaction.__kwdefaults__, "sleep", pauses.append)
    return pauses


# -- stored documents, from the seeds' field lists --------------------------------------------------------------------
def root_doc(command: Command = CMD, at: datetime = T0) -> dict[str, Any]:
    return {
        "journalSchemaVersion": 1,
        "commandIdentityVersion": 1,
        "endpointSchemaVersion": command.endpoint_schema_version,
        "environment": command.environment,
        "callerScopeKind": command.kind,
        "commandType": command.command_type,
        "payloadFingerprint": command.payload_fingerprint,
        "state": "registered",
        "revision": 1,
        "createdAt": at,
        "updatedAt": at,
    }


def registration_audit_doc(command: Command = CMD, at: datetime = T0) -> dict[str, Any]:
    return {
        "auditSchemaVersion": 1,
        "aggregateType": "commerce_command",
        "commandKeyHash": command.key_hash,
        "commandRevision": 1,
        "eventType": "command_registered",
        "fromState": None,
        "toState": "registered",
        "environment": command.environment,
        "callerScopeKind": command.kind,
        "commandType": command.command_type,
        "occurredAt": at,
    }


def lifecycle_doc(
    command: Command = CMD,
    *,
    state: str = "leased",
    fence: int = 1,
    revision: int | None = None,
    lease: str = LEASE_A,
    acquired: datetime = T1,
    created: datetime | None = None,
    updated: datetime | None = None,
    ref: str = REF_A,
) -> dict[str, Any]:
    terminal = state != "leased"
    succeeded = state == "succeeded"
    return {
        "lifecycleSchemaVersion": 1,
        "commandKeyHash": command.key_hash,
        "state": state,
        "commandRevision": revision if revision is not None else fence + (2 if terminal else 1),
        "fenceEpoch": fence,
        "leaseOwnerFingerprint": command.owner(lease),
        "leaseAcquiredAt": acquired,
        "leaseExpiresAt": acquired + LEASE,
        "createdAt": created if created is not None else acquired,
        "updatedAt": updated if updated is not None else acquired,
        "terminalCommitmentKind": "business_record_digest" if succeeded else None,
        "terminalCommitmentHash": command.commitment(ref) if succeeded else None,
    }


_EVENTS = {
    ("registered", "leased"): "command_lease_acquired",
    ("leased", "leased"): "command_lease_taken_over",
    ("leased", "succeeded"): "command_succeeded",
    ("leased", "failed_final"): "command_failed_final",
}


def transition_audit_doc(
    command: Command,
    *,
    revision: int,
    from_state: str,
    to_state: str,
    fence: int,
    expires: datetime,
    occurred: datetime,
) -> dict[str, Any]:
    return {
        "auditSchemaVersion": 2,
        "aggregateType": "commerce_command",
        "commandKeyHash": command.key_hash,
        "commandRevision": revision,
        "eventType": _EVENTS[(from_state, to_state)],
        "fromState": from_state,
        "toState": to_state,
        "environment": command.environment,
        "callerScopeKind": command.kind,
        "commandType": command.command_type,
        "fenceEpoch": fence,
        "leaseExpiresAt": expires,
        "occurredAt": occurred,
    }


def partner_of(command: Command, lifecycle: dict[str, Any]) -> dict[str, Any]:
    """The current-revision audit a valid lifecycle document needs."""
    state, revision = lifecycle["state"], lifecycle["commandRevision"]
    from_state = "registered" if state == "leased" and revision == 2 else "leased"
    return transition_audit_doc(
        command,
        revision=revision,
        from_state=from_state,
        to_state=state,
        fence=lifecycle["fenceEpoch"],
        expires=lifecycle["leaseExpiresAt"],
        occurred=lifecycle["updatedAt"],
    )


def registered_docs(command: Command = CMD, at: datetime = T0) -> dict[str, dict[str, Any]]:
    return {command.root_path: root_doc(command, at), command.audit_path(1): registration_audit_doc(command, at)}


def lifecycle_docs(
    command: Command = CMD, *, registered_at: datetime = T0, **lifecycle: Any
) -> dict[str, dict[str, Any]]:
    """Registration pair + lifecycle + its current audit partner (earlier audits are not read: left out)."""
    document = lifecycle_doc(command, **lifecycle)
    docs = registered_docs(command, registered_at)
    docs[command.lifecycle_path] = document
    docs[command.audit_path(document["commandRevision"])] = partner_of(command, document)
    return docs


def seed(db: FakeFirestore, docs: dict[str, dict[str, Any]]) -> FakeFirestore:
    for path, data in docs.items():
        db.seed(path, data)
    return db


def leased_db(**lifecycle: Any) -> FakeFirestore:
    return seed(FakeFirestore(), lifecycle_docs(**lifecycle))


def typed(document: dict[str, Any] | None) -> Any:
    """A comparable form that tells `True` from `1` and a timestamp from a number."""
    if document is None:
        return None
    return {key: (_kind(value), value) for key, value in document.items()}


def _kind(value: Any) -> str:
    # A timestamp read back from Firestore is a datetime subclass (DatetimeWithNanoseconds): same kind.
    if isinstance(value, datetime):
        return "timestamp" if value.utcoffset() == timedelta(0) else "non-utc-datetime"
    return type(value).__name__


@contextmanager
def no_writes(db: FakeFirestore) -> Iterator[None]:
    """Assert the block buffers no write, applies none and leaves every document byte-identical."""
    before, counts, start = db.dump(), db.update_counts(), len(db.calls)
    yield
    assert [entry for entry in db.calls[start:] if entry[0] in ("create", "set", "applied")] == []
    assert db.dump() == before
    assert db.update_counts() == counts
