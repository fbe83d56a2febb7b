"""The transaction runner: at most 10 attempts, retried in wall-clock rounds, watched by lock-free looks.

Why not the client's own `transactional` retry: it retries an aborted commit at once. The emulator breaks
read-then-upgrade lock conflicts only by a fixed ~2 s lock timeout, so immediate retries meet the same
conflict again, and at 8- to 24-way contention every caller but one exhausts its attempts (see
docs/journal-decisions.md). Measured at 2- and 24-way (benchmarks/contention.py, benchmarks/races.py):
- a lock-free look (the same decision in a read-only transaction) right after an abort and every 0.5 s
  while pausing: once any caller has won, the others answer from the snapshot and stop taking the locks
  the winner's commit needs. Most contests end in one ~2 s lock timeout plus at most one look interval;
- retries go in rounds: after an abort, pause until the next multiple of 3 s on the wall clock, plus
  U(0, 0.5 s). Callers that pile onto one document together resolve their pile in one lock timeout: the
  last to arrive outlasts the others' timeouts and commits. Retries spread over seconds instead keep
  arriving while a pile waits, each extending it (random exponential backoff showed 30-55 s convoys).
  A round is over before the next starts (0.5 s of jitter + 2 s timeout < 3 s). Clocks that disagree
  between callers only blur the rounds; correctness never depends on them.
- the watched pause ends with a look, so every read-write retry is preceded by one.

Outcome classes:
- `Aborted`, from a read or from the commit, is definite: that attempt applied nothing. Retry.
- `unrecognized_record` from a read-write attempt (when a look is given) is not yet an answer: one 24-way
  race under heavy load answered it from two batches of reads of two states (the next audit present beside
  the older lifecycle; docs/journal-decisions.md, "Two-batch reads"; not reproduced since). It is handled as
  an abort, and the look that follows at once, one consistent snapshot, confirms it (and answers it) or shows
  what the state is.
- any other Firestore error, in an attempt or in a look, is `journal_unavailable` at once; from a commit
  it is indefinite (it may have applied). An exact retry of the whole call is idempotent, so the caller's
  retry observes instead of applying twice.
- a `CommandJournalError` raised by the decision rolls the attempt back and is the answer.

Randomness and sleeping live here, between attempts; the callback itself has neither.
"""

from __future__ import annotations

import math
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
RETRY_ROUND_SECONDS = 3.0
ROUND_JITTER_SECONDS = 0.5
LOOK_INTERVAL_SECONDS = 0.5
# The answer a read-write attempt can reach from an inconsistent pair of reads: a look must confirm it.
UNCONFIRMED = "unrecognized_record"

T = TypeVar("T")


def pause_before_retry(now: float, jitter: float) -> float:
    """Seconds from wall-clock time `now` to the next retry round (a multiple of RETRY_ROUND_SECONDS), plus
    `jitter` (drawn from U(0, ROUND_JITTER_SECONDS)) so that one caller of the pile arrives last."""
    return math.ceil(now / RETRY_ROUND_SECONDS) * RETRY_ROUND_SECONDS - now + jitter


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
    wall: Callable[[], float] = time.time,
) -> T:
    """Run `callback` in a read-write transaction, at most MAX_ATTEMPTS times.

    After an aborted attempt the next one waits for the next retry round (`pause_before_retry`, with
    `wall` the wall clock). Meanwhile `look` (the same decision in a read-only transaction) runs if given,
    at once and every LOOK_INTERVAL_SECONDS: when the snapshot already decides without writing (another
    caller won, or the answer is a rejection), that answer is returned and no lock is taken. Losers of a
    contest thereby stop competing for the locks the winner needs.
    """
    log = log if log is not None else AttemptLog()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        log.attempts += 1
        try:
            return firestore.transactional(callback)(db.transaction(max_attempts=1))
        except CommandJournalError as error:
            if error.code != UNCONFIRMED or look is None:
                raise
            outcome = "unconfirmed"  # rolled back, nothing applied: the look below confirms or decides
        except Exception as error:  # classified here; the original is never chained into our error
            outcome = _classify(error)
        if outcome == "failure":
            break
        log.aborts += 1
        if attempt < MAX_ATTEMPTS:
            pause = pause_before_retry(wall(), uniform(0.0, ROUND_JITTER_SECONDS))
            if look is None:
                sleep(pause)
                continue
            answer = _pause_watching(db, look, log, pause, sleep)
            if answer is not NEEDS_WRITE:
                return answer
        elif outcome == "unconfirmed":
            answer = _look(db, look, log)  # the last attempt's finding, still confirmed before it is answered
            if answer is not NEEDS_WRITE:
                return answer
    raise CommandJournalError("journal_unavailable")
