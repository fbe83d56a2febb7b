"""The gateway's transaction runner: the command journal's (reference/journal/runner.py: at most 10
read-write attempts in wall-clock retry rounds, lock-free looks while pausing; decision G30), with the
gateway's own unavailable answer. As reference/lantern/runner.py does, it wraps that runner instead of
copying it: only the error raised on giving up is journal-specific.

- `Aborted` (definite, nothing applied): retried by the journal runner;
- any other Firestore or transport failure, or attempts exhausted: `CommandJournalError("journal_unavailable")`
  there, `GatewayError("gateway_unavailable")` here (indefinite after a commit: retry the whole call);
- a `GatewayError` raised by a decision is neither contention nor Firestore: re-raised unchanged, it rolls
  the attempt back and is the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import firestore

from reference.journal.errors import CommandJournalError
from reference.journal.runner import NEEDS_WRITE, AttemptLog, run_transaction

from .errors import GatewayError

T = TypeVar("T")

__all__ = ["NEEDS_WRITE", "AttemptLog", "run_gateway_transaction", "run_read_only"]

_FAILURES = (api_exceptions.GoogleAPIError, auth_exceptions.GoogleAuthError, grpc.RpcError, ConnectionError)


def run_gateway_transaction(
    db: Any, callback: Callable[[Any], T], *, look: Callable[[Any], Any] | None = None, log: AttemptLog | None = None
) -> T:
    try:
        return run_transaction(db, callback, look=look, log=log)
    except CommandJournalError:
        raise GatewayError("gateway_unavailable") from None


def run_read_only(db: Any, callback: Callable[[Any], T]) -> T:
    """`get`: one read-only transaction (a consistent snapshot, no locks, nothing to retry on contention)."""
    try:
        return firestore.transactional(callback)(db.transaction(read_only=True))
    except GatewayError:
        raise
    except Exception as error:
        cause = error.__cause__
        if isinstance(error, _FAILURES) or (isinstance(error, ValueError) and isinstance(cause, _FAILURES)):
            raise GatewayError("gateway_unavailable") from None
        raise  # neither a decision nor Firestore: a bug, and it must be loud
