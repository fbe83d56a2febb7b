"""The transaction runner: at most 10 attempts, jittered exponential backoff between them.

Why not the client's own `transactional` retry: it retries an aborted commit at once. The emulator breaks
read-then-upgrade lock conflicts only by a fixed ~2 s lock timeout, so immediate retries meet the same
conflict again, and at 8- to 24-way contention every caller but one exhausts its attempts (see
docs/journal-decisions.md). Waiting U(0, min(16 s, 1 s * 2^(k-1))) after the k-th aborted attempt spreads
the contenders out past the lock timeout.

Outcome classes:
- `Aborted`, from a read or from the commit, is definite: that attempt applied nothing. Retry.
- any other Firestore error is `journal_unavailable` at once; from a commit it is indefinite (it may have
  applied). An exact retry of the whole call is idempotent, so the caller's retry observes instead of
  applying twice.
- a `CommandJournalError` raised by the decision rolls the attempt back and is the answer.

Randomness and sleeping live here, between attempts; the callback itself has neither.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import firestore

from .errors import CommandJournalError

MAX_ATTEMPTS = 10
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_CAP_SECONDS = 16.0

T = TypeVar("T")


def backoff_bound(failed_attempts: int) -> float:
    """Upper bound of the pause after `failed_attempts` aborted attempts (1-based)."""
    return min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (failed_attempts - 1))


def _is_abort(error: BaseException) -> bool:
    # `transactional` reports an aborted commit as ValueError("Failed to commit ...") caused by Aborted.
    return isinstance(error, api_exceptions.Aborted) or (
        isinstance(error, ValueError) and isinstance(error.__cause__, api_exceptions.Aborted)
    )


# Firestore, auth and transport failures: the operation's fate is unknown to us, never a reason to guess.
_TRANSPORT_FAILURES = (api_exceptions.GoogleAPIError, auth_exceptions.GoogleAuthError, grpc.RpcError, ConnectionError)


def _is_firestore_failure(error: BaseException) -> bool:
    return isinstance(error, _TRANSPORT_FAILURES) or (
        isinstance(error, ValueError) and isinstance(error.__cause__, _TRANSPORT_FAILURES)
    )


class AttemptLog:
    """Counts kept for evidence and benchmarks: attempts made and attempts aborted by contention."""

    __slots__ = ("attempts", "aborts")

    def __init__(self) -> None:
        self.attempts = 0
        self.aborts = 0


def run_transaction(
    db: Any,
    callback: Callable[[Any], T],
    *,
    sleep: Callable[[float], None] = time.sleep,
    uniform: Callable[[float, float], float] = random.uniform,
    log: AttemptLog | None = None,
) -> T:
    log = log if log is not None else AttemptLog()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        log.attempts += 1
        failed = False
        try:
            return firestore.transactional(callback)(db.transaction(max_attempts=1))
        except CommandJournalError:
            raise
        except Exception as error:  # classified below; the original is never chained into our error
            if not _is_abort(error):
                if _is_firestore_failure(error):
                    failed = True
                else:
                    raise
        if failed:
            break
        log.aborts += 1
        if attempt < MAX_ATTEMPTS:
            sleep(uniform(0.0, backoff_bound(attempt)))
    raise CommandJournalError("journal_unavailable")
