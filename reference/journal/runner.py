"""The transaction runner: at most 10 attempts, jittered exponential backoff between them.

Why not the client's own `transactional` retry: it retries an aborted commit at once. The emulator breaks
read-then-upgrade lock conflicts only by a fixed ~2 s lock timeout, so immediate retries meet the same
conflict again, and at 8- to 24-way contention every caller but one exhausts its attempts (see
docs/journal-decisions.md). Three measures, measured at 2- and 24-way (benchmarks/contention.py):
- a lock-free look (the same decision in a read-only transaction) right after an abort and every 0.5 s
  while pausing: once any caller has won, the others answer from the snapshot and stop taking the locks
  the winner's commit needs. Most contests end in one ~2 s lock timeout plus at most one look interval;
- after the k-th aborted attempt, pause U(0, min(16 s, 8 s * 2^(k-1))) before the next read-write
  attempt. The pause only matters when a round ended with no winner; then retries that overlap by a few
  milliseconds collide again, and retries arriving less than 2 s apart keep a convoy of lock waits going
  (tails of 35-55 s at a 2 s base under load). A wide window keeps the second round's first writer alone,
  and because of the looks a wide window no longer delays anyone once somebody has won;
- the watched pause ends with a look, so every read-write retry is preceded by one.

Outcome classes:
- `Aborted`, from a read or from the commit, is definite: that attempt applied nothing. Retry.
- any other Firestore error, in an attempt or in a look, is `journal_unavailable` at once; from a commit it is indefinite (it may have
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
BACKOFF_BASE_SECONDS = 8.0
BACKOFF_CAP_SECONDS = 16.0
LOOK_INTERVAL_SECONDS = 0.5

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
    """Counts kept for evidence and benchmarks: read-write attempts, aborted ones, and lock-free looks."""

    __slots__ = ("attempts", "aborts", "looks")

    def __init__(self) -> None:
        self.attempts = 0
        self.aborts = 0
        self.looks = 0


class NeedsWrite:
    """What a lock-free look answers when only a read-write transaction can decide."""


NEEDS_WRITE = NeedsWrite()


def _classify(error: Exception) -> str:
    if _is_abort(error):
        return "abort"
    if _is_firestore_failure(error):
        return "failure"
    raise error  # neither Firestore nor contention: a bug, and it must be loud


def _look(db: Any, look: Callable[[Any], Any], log: AttemptLog) -> Any:
    """One read-only transaction: a consistent snapshot that takes no locks, so it cannot collide."""
    log.looks += 1
    try:
        return firestore.transactional(look)(db.transaction(read_only=True))
    except CommandJournalError:
        raise
    except Exception as error:
        if _classify(error) == "failure":
            # as in a read-write attempt: Firestore failing is journal_unavailable at once, not a reason to
            # wait out the pause (the earlier attempts aborted, so nothing was applied)
            raise CommandJournalError("journal_unavailable") from None
        return NEEDS_WRITE  # contention: no information, let the read-write attempt decide


def _pause_watching(
    db: Any, look: Callable[[Any], Any], log: AttemptLog, pause: float, sleep: Callable[[float], None]
) -> Any:
    """Pause for `pause` seconds, looking at once and then every LOOK_INTERVAL_SECONDS (the last look ends
    the pause): the winner's commit usually lands as our lock wait ends, so most losers answer at once,
    and a long pause (which keeps retries apart) no longer delays learning that someone won."""
    remaining = pause
    while True:
        answer = _look(db, look, log)
        if answer is not NEEDS_WRITE or remaining <= 0:
            return answer
        interval = min(LOOK_INTERVAL_SECONDS, remaining) if LOOK_INTERVAL_SECONDS > 0 else remaining
        sleep(interval)
        remaining -= interval


def run_transaction(
    db: Any,
    callback: Callable[[Any], T],
    *,
    look: Callable[[Any], Any] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    uniform: Callable[[float, float], float] = random.uniform,
    log: AttemptLog | None = None,
) -> T:
    """Run `callback` in a read-write transaction, at most MAX_ATTEMPTS times.

    After an aborted attempt, and before the next one, `look` (the same decision in a read-only
    transaction) runs if given: when the snapshot already decides without writing (another caller won,
    or the answer is a rejection), that answer is returned and no lock is taken. Losers of a contest
    thereby stop competing for the locks the winner needs.
    """
    log = log if log is not None else AttemptLog()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        log.attempts += 1
        try:
            return firestore.transactional(callback)(db.transaction(max_attempts=1))
        except CommandJournalError:
            raise
        except Exception as error:  # classified here; the original is never chained into our error
            outcome = _classify(error)
        if outcome == "failure":
            break
        log.aborts += 1
        if attempt < MAX_ATTEMPTS:
            pause = uniform(0.0, backoff_bound(attempt))
            if look is None:
                sleep(pause)
                continue
            answer = _pause_watching(db, look, log, pause, sleep)
            if answer is not NEEDS_WRITE:
                return answer
    raise CommandJournalError("journal_unavailable")
