"""A correct command journal written the ordinary way, for tests: the reference with its transaction runner
replaced by google-cloud-firestore's own `transactional` and its default attempts (`tests.fakes.sdk_runner`).

Everything else is the reference's, imported, not copied: input validation, the one clock reading per call,
the transaction body (its reads, checks and decision: `reference.journal.decide`, `records`, `inputs`,
`outputs`), `CommandJournalError` and the output classes. So it answers what the reference answers whenever
its transactions get through; it differs only in how it retries an abort: at once, inside the call, at most
5 attempts, with no round-aligned pause and no read-only look (docs/contention.md shows what that does at
8- and 24-way contention on the emulator). Every failure to get through is `journal_unavailable`, which the
contract allows (the caller retries the whole call).

One rule of the reference's runner it does not have: a read-write attempt's `unrecognized_record` is answered
as found, not first confirmed by a look (docs/journal-decisions.md, "Two-batch reads": seen once under heavy
load, never reproduced). An ordinary implementation has no look to confirm it with.

Spelled `tests.fakes.ordinary_journal` wherever a system spec goes ($FENCECHECK_SYSTEM, `resolve_system`):
the journal plug-in takes any importable module with the four functions.
"""

from __future__ import annotations

from typing import Any

from reference.clock import Clock, system_clock

# The reference's validation, clock reading and transaction body, unchanged: only the runner is this module's.
from reference.journal.api import _command, _read_clock, _transaction_body
from reference.journal.decide import ACQUIRE, COMPLETE, FAIL, REGISTER, Request
from reference.journal.errors import CommandJournalError
from reference.journal.inputs import prepare_commitment, prepare_fence, prepare_lease_owner
from reference.journal.outputs import LeaseAcquired, LifecycleObservation, RegistrationResult
from reference.journal.runner import AttemptLog
from tests.fakes.sdk_runner import run_sdk_transaction

__all__ = [
    "CommandJournalError",
    "acquire_commerce_command_lease",
    "complete_commerce_command",
    "fail_commerce_command",
    "register_commerce_command",
]


def _unavailable() -> CommandJournalError:
    return CommandJournalError("journal_unavailable")


def _run(db: Any, request: Request, attempt_log: AttemptLog | None) -> Any:
    return run_sdk_transaction(db, _transaction_body(db, request), contract_error=CommandJournalError,
                               unavailable=_unavailable, log=attempt_log)


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
