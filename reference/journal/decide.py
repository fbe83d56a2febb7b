"""The journal's decisions: pure functions of validated records and values prepared before the transaction.

Called from inside the transaction callback, so they must stay free of clocks, randomness, logging and I/O:
`now` is the one trusted reading taken before the callback, reused by every attempt. The rules and their
order are those of docs/journal-decisions.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from . import identity
from .errors import CommandJournalError
from .inputs import MAX_FENCE_EPOCH, PreparedCommand
from .outputs import LEASE_BUSY, TERMINAL_OBSERVATIONS, LeaseAcquired, LeaseTimestamp, RegistrationResult
from .records import (
    FAILED_FINAL,
    LEASE_DURATION,
    LEASED,
    MAX_REVISION,
    SUCCEEDED,
    TERMINAL_EVENTS,
    Lifecycle,
    Registration,
    lifecycle_document,
    registration_audit_document,
    root_document,
    transition_audit_document,
    unrecognized,
)

REGISTER, ACQUIRE, COMPLETE, FAIL = "register", "acquire", "complete", "fail"


@dataclass(frozen=True, slots=True)
class Request:
    operation: str
    command: PreparedCommand
    now: datetime
    owner_fingerprint: str | None = None
    expected_fence_epoch: int | None = None
    commitment_hash: str | None = None  # complete only


@dataclass(frozen=True, slots=True)
class Write:
    path: str
    document: dict[str, Any]
    create: bool  # create fails if the document appeared meanwhile; set replaces the lifecycle


@dataclass(frozen=True, slots=True)
class Decision:
    output: Any
    writes: tuple[Write, ...] = ()


def decide(request: Request, registration: Registration | None, lifecycle: Lifecycle | None) -> Decision:
    """`registration` None means the root pair is absent (and, checked by the caller, no lifecycle exists)."""
    command = request.command
    if registration is None:
        if request.operation != REGISTER:
            raise CommandJournalError("command_not_registered")
        return _register_new(command, request.now)
    if (registration.command_type, registration.endpoint_schema_version, registration.payload_fingerprint) != (
        command.command_type,
        command.endpoint_schema_version,
        command.payload_fingerprint,
    ):
        raise CommandJournalError("command_conflict")
    if request.operation == REGISTER:
        return Decision(RegistrationResult("registered_existing"))
    if request.operation == ACQUIRE:
        return _acquire(request, registration, lifecycle)
    return _finish(request, registration, lifecycle)


def _register_new(command: PreparedCommand, now: datetime) -> Decision:
    key = command.command_key_hash
    return Decision(
        RegistrationResult("registered_new"),
        (
            Write(identity.root_path(key), root_document(command, now), create=True),
            Write(identity.audit_path(key, 1), registration_audit_document(command, now), create=True),
        ),
    )


def _lease_output(lifecycle: Lifecycle) -> LeaseAcquired:
    return LeaseAcquired(lifecycle.fence_epoch, LeaseTimestamp.of(lifecycle.expires_at))


def _mutation(command: PreparedCommand, after: Lifecycle, event_type: str, from_state: str, output: Any) -> Decision:
    key = command.command_key_hash
    return Decision(
        output,
        (
            Write(identity.lifecycle_path(key), lifecycle_document(command, after), create=from_state == "registered"),
            Write(
                identity.audit_path(key, after.revision),
                transition_audit_document(command, after, event_type, from_state),
                create=True,
            ),
        ),
    )


def _acquire(request: Request, registration: Registration, lifecycle: Lifecycle | None) -> Decision:
    now, owner = request.now, request.owner_fingerprint
    assert owner is not None
    if lifecycle is None:
        if now < registration.created_at:
            raise CommandJournalError("journal_unavailable")
        first = Lifecycle(LEASED, 2, 1, owner, now, now + LEASE_DURATION, now, now, None)
        return _mutation(request.command, first, "command_lease_acquired", "registered", _lease_output(first))
    if lifecycle.is_terminal:
        return Decision(TERMINAL_OBSERVATIONS[lifecycle.state])
    if now < lifecycle.expires_at:
        return Decision(_lease_output(lifecycle) if lifecycle.owner_fingerprint == owner else LEASE_BUSY)
    if lifecycle.revision >= MAX_REVISION or lifecycle.fence_epoch >= MAX_FENCE_EPOCH:
        raise unrecognized()  # the next revision or fence would not fit: never wrap
    taken = replace(
        lifecycle,
        revision=lifecycle.revision + 1,
        fence_epoch=lifecycle.fence_epoch + 1,
        owner_fingerprint=owner,
        acquired_at=now,
        expires_at=now + LEASE_DURATION,
        updated_at=now,
    )
    return _mutation(request.command, taken, "command_lease_taken_over", LEASED, _lease_output(taken))


def _finish(request: Request, registration: Registration, lifecycle: Lifecycle | None) -> Decision:
    target = SUCCEEDED if request.operation == COMPLETE else FAILED_FINAL
    exact_terminal_retry = (
        lifecycle is not None
        and lifecycle.state == target
        and lifecycle.owner_fingerprint == request.owner_fingerprint
        and lifecycle.fence_epoch == request.expected_fence_epoch
        and lifecycle.commitment_hash == request.commitment_hash
    )
    if exact_terminal_retry:
        return Decision(TERMINAL_OBSERVATIONS[target])
    built_on = lifecycle.updated_at if lifecycle is not None else registration.created_at
    if request.now < built_on:
        raise CommandJournalError("journal_unavailable")  # an earlier reading may observe, never decide
    if lifecycle is None:
        raise CommandJournalError("lease_rejected")
    if lifecycle.is_terminal:
        raise CommandJournalError("terminal_conflict")
    if (
        lifecycle.owner_fingerprint != request.owner_fingerprint
        or lifecycle.fence_epoch != request.expected_fence_epoch
        or request.now >= lifecycle.expires_at
    ):
        raise CommandJournalError("lease_rejected")
    if lifecycle.revision >= MAX_REVISION:
        raise unrecognized()
    finished = replace(
        lifecycle,
        state=target,
        revision=lifecycle.revision + 1,
        updated_at=request.now,
        commitment_hash=request.commitment_hash,
    )
    return _mutation(request.command, finished, TERMINAL_EVENTS[target], LEASED, TERMINAL_OBSERVATIONS[target])
