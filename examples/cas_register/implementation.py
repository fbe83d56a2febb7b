"""A compare-and-set register on Firestore: each key is one document, `casRegisters/{key}` = `{"value": v}`.

The implementation the plug-in resolves by default (`cas_register:examples.cas_register.implementation` names it
explicitly). Every function takes keyword arguments only (`db=` a Firestore client, `attempt_log=` an object with
`attempts`, `aborts` and `looks` counters, or None) and answers the JSON the model predicts (`model.step`), or
raises `CasUnavailable` (its `code` is the contract's "may or may not have applied", `cas_unavailable`) when
Firestore failed, so the caller may retry the whole call.

A compare-and-set is a read-write transaction, run here and not by the SDK's own `transactional` retry: that
retries an aborted commit at once, and on the emulator, whose lock waits end only by a fixed ~2 s timeout, N
callers of one register then abort one another until they give up (docs/contention.md). So, as the references
do (docs/contention.md, "The pattern that gets through"):

- one attempt per transaction (`max_attempts=1`); after an abort, wait for the next 3 s round on the wall clock
  plus a jitter of up to 0.5 s, so the callers one pile of lock waits aborted come back together and the last
  to arrive commits;
- while waiting, look every 0.5 s: the same read in a read-only transaction, which takes no lock. A register
  that no longer holds `expected` answers `mismatch` from the look; only a register that still holds it is
  worth another read-write attempt.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

import grpc
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import firestore

COLLECTION = "casRegisters"
UNAVAILABLE = "cas_unavailable"  # the contract's answer "may or may not have applied" (model.UNAVAILABLE)
MAX_ATTEMPTS = 10
ROUND_SECONDS = 3.0  # longer than the jitter plus the emulator's lock timeout: one round is over before the next
JITTER_SECONDS = 0.5
LOOK_SECONDS = 0.5

# Firestore, auth and transport failures: whether the call applied is unknown, so the answer is UNAVAILABLE.
_FAILURES = (api_exceptions.GoogleAPIError, auth_exceptions.GoogleAuthError, grpc.RpcError, ConnectionError)


class CasUnavailable(Exception):
    """Firestore failed (or every attempt aborted): the call may or may not have applied."""

    code = UNAVAILABLE

    def __init__(self) -> None:
        super().__init__(UNAVAILABLE)


def _ref(db: Any, key: str) -> Any:
    return db.collection(COLLECTION).document(key)


def _value(snapshot: Any) -> int | None:
    return snapshot.to_dict()["value"] if snapshot.exists else None


def _caused_by(error: BaseException, kinds: Any) -> bool:
    # `transactional` reports a failed commit as ValueError("Failed to commit ...") caused by the real error.
    return isinstance(error, kinds) or (isinstance(error, ValueError) and isinstance(error.__cause__, kinds))


def _count(log: Any, counter: str) -> None:
    if log is not None:
        setattr(log, counter, getattr(log, counter) + 1)


def _firestore(call: Callable[[], Any]) -> Any:
    """`call()`, with a Firestore failure answered as UNAVAILABLE (anything else is a bug, and stays loud)."""
    try:
        return call()
    except Exception as error:
        if _caused_by(error, _FAILURES):
            raise CasUnavailable() from None
        raise


def read_register(*, db: Any, key: str, attempt_log: Any = None) -> dict[str, Any]:
    return {"outcome": "read", "value": _value(_firestore(_ref(db, key).get))}


def write_register(*, db: Any, key: str, value: int, attempt_log: Any = None) -> dict[str, Any]:
    _firestore(lambda: _ref(db, key).set({"value": value}))
    return {"outcome": "written", "value": value}


def compare_and_set(*, db: Any, key: str, expected: int | None, new: int, attempt_log: Any = None) -> dict[str, Any]:
    ref = _ref(db, key)

    def decide(transaction: Any, write: bool) -> dict[str, Any] | None:
        current = _value(ref.get(transaction=transaction))
        if current != expected:
            return {"outcome": "mismatch", "value": current}
        if not write:
            return None  # a look found `expected`: only a read-write attempt may swap
        transaction.set(ref, {"value": new})
        return {"outcome": "swapped", "value": new}

    for attempt in range(1, MAX_ATTEMPTS + 1):
        _count(attempt_log, "attempts")
        try:
            return firestore.transactional(lambda t: decide(t, True))(db.transaction(max_attempts=1))
        except Exception as error:
            if not _caused_by(error, api_exceptions.Aborted):  # aborted: nothing applied, try again
                if _caused_by(error, _FAILURES):
                    raise CasUnavailable() from None
                raise
        _count(attempt_log, "aborts")
        if attempt < MAX_ATTEMPTS:
            now = time.time()
            pause = math.ceil(now / ROUND_SECONDS) * ROUND_SECONDS - now + random.uniform(0.0, JITTER_SECONDS)
            answer = _look_while_pausing(db, lambda t: decide(t, False), pause, attempt_log)
            if answer is not None:
                return answer
    raise CasUnavailable()


def _look_while_pausing(db: Any, look: Callable[[Any], Any], pause: float, log: Any) -> dict[str, Any] | None:
    """Look at once and every LOOK_SECONDS until `pause` is over (the last look ends it); a look's answer, or
    None when the register still holds the expected value (or a look aborted: no information)."""
    while True:
        _count(log, "looks")
        try:
            answer = firestore.transactional(look)(db.transaction(read_only=True))
        except Exception as error:
            if not _caused_by(error, api_exceptions.Aborted):
                if _caused_by(error, _FAILURES):  # the attempts so far aborted: nothing applied
                    raise CasUnavailable() from None
                raise
            answer = None
        if answer is not None or pause <= 0:
            return answer
        step = min(LOOK_SECONDS, pause)
        time.sleep(step)
        pause -= step
