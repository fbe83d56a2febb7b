"""The four public operations: validate, read the clock once, run one transaction, return a frozen output."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from reference.clock import (  # absolute: known-bad copies of this package share it
    Clock,
    read_trusted_clock,
    system_clock,
)

from . import identity
from .decide import ACQUIRE, COMPLETE, FAIL, REGISTER, Request, decide
from .errors import CommandJournalError
from .inputs import PreparedCommand, prepare_command, prepare_commitment, prepare_fence, prepare_lease_owner
from .outputs import LeaseAcquired, LifecycleObservation, RegistrationResult
from .records import check_current_audit, parse_lifecycle, parse_registration, unrecognized
from .runner import NEEDS_WRITE, AttemptLog, run_transaction


def _read_clock(clock: Clock) -> datetime:
    return read_trusted_clock(clock, lambda: CommandJournalError("journal_unavailable"))


def _read(transaction: Any, db: Any, paths: Iterable[str]) -> dict[str, Mapping[str, Any] | None]:
    found: dict[str, Mapping[str, Any] | None] = dict.fromkeys(paths)
    for snapshot in transaction.get_all([db.document(path) for path in found]):
        if snapshot.exists:
            found[snapshot.reference.path] = snapshot.to_dict()
    return found


def _transaction_body(db: Any, request: Request, *, read_only: bool = False) -> Callable[[Any], Any]:
    command = request.command
    key = command.command_key_hash

    def body(transaction: Any) -> Any:
        first = _read(
            transaction, db, (identity.root_path(key), identity.audit_path(key, 1), identity.lifecycle_path(key))
        )
        root, registration_audit, stored_lifecycle = first.values()
        registration = lifecycle = None
        if root is None and registration_audit is None:
            if stored_lifecycle is not None:
                raise unrecognized()  # orphan lifecycle
        else:
            registration = parse_registration(root, registration_audit, command)
            if stored_lifecycle is None:
                (next_audit,) = _read(transaction, db, (identity.audit_path(key, 2),)).values()
            else:
                lifecycle = parse_lifecycle(stored_lifecycle, command, registration)
                partner, next_audit = _read(
                    transaction,
                    db,
                    (identity.audit_path(key, lifecycle.revision), identity.audit_path(key, lifecycle.revision + 1)),
                ).values()
                check_current_audit(partner, command, registration, lifecycle)
            if next_audit is not None:
                raise unrecognized()  # a preseeded next audit would be overwritten or orphaned
        decision = decide(request, registration, lifecycle)
        if read_only and decision.writes:
            return NEEDS_WRITE
        for write in decision.writes:
            reference = db.document(write.path)
            if write.create:
                transaction.create(reference, write.document)
            else:
                transaction.set(reference, write.document)
        return decision.output

    return body


def _run(db: Any, request: Request, attempt_log: AttemptLog | None) -> Any:
    return run_transaction(
        db,
        _transaction_body(db, request),
        look=_transaction_body(db, request, read_only=True),
        log=attempt_log,
    )


def _command(kwargs: dict[str, Any]) -> PreparedCommand:
    return prepare_command(
        environment=kwargs["environment"],
        caller_scope=kwargs["caller_scope"],
        command_id=kwargs["command_id"],
        command_type=kwargs["command_type"],
        endpoint_schema_version=kwargs["endpoint_schema_version"],
        payload=kwargs["payload"],
    )


def register_commerce_command(
    *,
    db: Any,
    environment: Any,
    caller_scope: Any,
    command_id: Any,
    command_type: Any,
    endpoint_schema_version: Any,
    payload: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> RegistrationResult:
    command = _command(locals())
    return _run(db, Request(REGISTER, command, _read_clock(clock)), attempt_log)


def acquire_commerce_command_lease(
    *,
    db: Any,
    environment: Any,
    caller_scope: Any,
    command_id: Any,
    command_type: Any,
    endpoint_schema_version: Any,
    payload: Any,
    lease_id: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> LeaseAcquired | LifecycleObservation:
    command = _command(locals())
    owner = prepare_lease_owner(command, command_id=command_id, lease_id=lease_id)
    return _run(db, Request(ACQUIRE, command, _read_clock(clock), owner), attempt_log)


def complete_commerce_command(
    *,
    db: Any,
    environment: Any,
    caller_scope: Any,
    command_id: Any,
    command_type: Any,
    endpoint_schema_version: Any,
    payload: Any,
    lease_id: Any,
    expected_fence_epoch: Any,
    terminal_reference_fingerprint: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> LifecycleObservation:
    command = _command(locals())
    owner = prepare_lease_owner(command, command_id=command_id, lease_id=lease_id)
    fence = prepare_fence(expected_fence_epoch)
    commitment = prepare_commitment(command, terminal_reference_fingerprint)
    return _run(db, Request(COMPLETE, command, _read_clock(clock), owner, fence, commitment), attempt_log)


def fail_commerce_command(
    *,
    db: Any,
    environment: Any,
    caller_scope: Any,
    command_id: Any,
    command_type: Any,
    endpoint_schema_version: Any,
    payload: Any,
    lease_id: Any,
    expected_fence_epoch: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> LifecycleObservation:
    command = _command(locals())
    owner = prepare_lease_owner(command, command_id=command_id, lease_id=lease_id)
    fence = prepare_fence(expected_fence_epoch)
    return _run(db, Request(FAIL, command, _read_clock(clock), owner, fence), attempt_log)
