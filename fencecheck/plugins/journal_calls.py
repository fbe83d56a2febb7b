"""The journal's calls one caller at a time, as `fencecheck.parallel.execute` makes them: each caller's call on
the journal, whole-call retries (at most `MAX_WHOLE_CALL_RETRIES`) of an indefinite answer with the same op, a
`commit_failure_first` caller's first attempt on a `CommitFailureClient`, every attempt recorded by a
`Recorder`. The race suite runs through `fencecheck.contest`, which does the same for any plug-in
(`Racer.first_op`); this module stays for the journal's parallel programs until they take a plug-in too.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs

from fencecheck.contest import MAX_WHOLE_CALL_RETRIES
from fencecheck.history import Definite, Indefinite, Outcome, Recorder, classify_exception, observed_of
from fencecheck.lockstep import OnceClock
from fencecheck.plugin import contract_error_code
from fencecheck.plugins.journal import ReferenceAPI
from model.journal import Acquire, Complete, Fail, Register
from model.journal.constants import ERROR_CODES
from reference import AttemptLog
from reference.journal.errors import CommandJournalError
from reference.journal.identity import root_path

JournalOp = Register | Acquire | Complete | Fail

__all__ = ["MAX_WHOLE_CALL_RETRIES", "Attempt", "Caller", "CallerRecord", "invoke", "nested_paths", "run_caller"]


@attrs.frozen
class Caller:
    """One concurrent caller: its name (unique in the plan) and the call it makes (with its clock reading)."""

    name: str
    op: JournalOp
    commit_failure_first: bool = False  # first attempt's commit is rejected by the emulator; retries are plain

    def attempt_op(self, attempt: int) -> JournalOp:
        """The op recorded for attempt 0, 1, ...: the commit-failing first attempt carries commit_fails=True."""
        if attempt == 0 and self.commit_failure_first:
            return attrs.evolve(self.op, commit_fails=True)
        return self.op



@attrs.frozen
class Attempt:
    """One whole call as a caller made it."""

    call_id: int
    op: JournalOp
    outcome: Outcome
    attempts: int  # transaction attempts (AttemptLog)
    aborts: int
    clock_reads: int
    unexpected: str | None = None  # an exception that is not the journal's error type


@attrs.frozen
class CallerRecord:
    caller: Caller
    attempts: tuple[Attempt, ...]

    @property
    def final(self) -> Outcome:
        return self.attempts[-1].outcome if self.attempts else Indefinite("not_started")

    @property
    def definite(self) -> bool:
        return self.final.definite

    @property
    def retries(self) -> int:
        return max(0, len(self.attempts) - 1)


def invoke(system: ReferenceAPI, db: Any, op: JournalOp, clock: Callable[[], datetime], log: Any = None) -> Any:
    """Make the journal call `op` stands for on `db` (`ReferenceAPI.call`)."""
    return system.call(db, op, clock, log)


def _observed(system: ReferenceAPI, db: Any, op: JournalOp) -> dict[str, Any] | str:
    try:
        return observed_of(invoke(system, db, op, OnceClock(op.now)))
    except Exception as error:
        code = _contract_code(system, error)
        if code is None:
            raise
        return code


def _contract_code(system: ReferenceAPI, error: BaseException) -> str | None:
    """The contract's error code `error` carries: the system's declared error class, or any exception whose
    `.code` is a contract code (an implementation may raise an error class of its own)."""
    if isinstance(error, system.error_type):
        return error.code
    return contract_error_code(error, ERROR_CODES)


def _invoke_as_reference(system: ReferenceAPI, db: Any, op: JournalOp, clock: Any, log: Any) -> Any:
    """`invoke`, with the system's own journal error re-raised as the reference's. A known-bad copy of the
    reference has its own `CommandJournalError` class, which the recorder would take for a transport failure
    (indefinite): a wrong error code would then never be held against it."""
    try:
        return invoke(system, db, op, clock, log)
    except Exception as error:
        if isinstance(error, CommandJournalError):
            raise
        code = _contract_code(system, error)
        if code is None:
            raise
        raise CommandJournalError(code) from None


def _call_once(system: ReferenceAPI, recorder: Recorder, db: Any, caller: Caller, op: JournalOp) -> Attempt:
    log = AttemptLog()
    clock = OnceClock(op.now)
    unexpected = None
    try:
        value = recorder.call(caller.name, op, lambda: _invoke_as_reference(system, db, op, clock, log))
        outcome: Outcome = Definite(observed_of(value))
    except Exception as error:  # the recorder recorded it already; classified the same way here
        outcome = classify_exception(error)
        if not isinstance(error, CommandJournalError):
            unexpected = f"{type(error).__name__}: {error}"[:500]
    return Attempt(-1, op, outcome, log.attempts, log.aborts, clock.reads, unexpected)


def run_caller(
    recorder: Recorder,
    system: ReferenceAPI,
    db: Any,
    failing_db: Any,
    caller: Caller,
    max_retries: int,
) -> CallerRecord:
    attempts: list[Attempt] = []
    for index in range(1 + max_retries):
        op = caller.attempt_op(index)
        target = failing_db if op.commit_fails else db
        attempt = _call_once(system, recorder, target, caller, op)
        attempts.append(attempt)
        if attempt.outcome.definite:
            break
    return CallerRecord(caller, tuple(attempts))


# --- running a plan ------------------------------------------------------------------------------------



def nested_paths(db: Any, key_hash: str) -> tuple[str, ...]:
    root = db.document(root_path(key_hash))
    return tuple(sorted(snap.reference.path for coll in root.collections() for snap in coll.stream()))

