"""The lantern layer's transaction runner: the journal's runner, with the lantern's own unavailable answer.

reference/journal/runner.py already holds the measured retry discipline this layer needs (at most 10
read-write attempts, retried in wall-clock rounds of 3 s for the emulator's fixed 2 s lock timeout, a lock-free
look before each retry) and nothing in it is journal-specific except the error it raises when it gives up. So
this module wraps it instead of copying it:

- `Aborted` (definite, nothing applied): retried by the journal runner, in its rounds and with its looks;
- any other Firestore or transport failure, or attempts exhausted: the journal runner raises
  `CommandJournalError("journal_unavailable")`, answered here as `LanternError("lantern_unavailable")`
  (indefinite when it came from a commit: the caller retries the whole call with the same ids);
- a `LanternError` raised by a callback or a look is neither contention nor Firestore, so the journal
  runner re-raises it unchanged: it rolls the attempt back and is the answer.

Randomness and sleeping stay in the journal runner, between attempts; the callbacks have neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from reference.journal.errors import CommandJournalError
from reference.journal.runner import NEEDS_WRITE, AttemptLog, run_transaction

from .errors import LanternError

T = TypeVar("T")

__all__ = ["NEEDS_WRITE", "AttemptLog", "outside_transaction", "run_lantern_transaction"]

_FAILURES = (api_exceptions.GoogleAPIError, auth_exceptions.GoogleAuthError, grpc.RpcError, ConnectionError)


def run_lantern_transaction(
    db: Any,
    callback: Callable[[Any], T],
    *,
    look: Callable[[Any], Any] | None = None,
    log: AttemptLog | None = None,
) -> T:
    """Run `callback` in a read-write transaction with the shared retry discipline (see module doc)."""
    try:
        return run_transaction(db, callback, look=look, log=log)
    except CommandJournalError:
        raise LanternError("lantern_unavailable") from None


def outside_transaction(read: Callable[[], T]) -> T:
    """A plain read outside any transaction (the B1 venue pre-read, the active-lantern query)."""
    try:
        return read()
    except _FAILURES:
        raise LanternError("lantern_unavailable") from None
