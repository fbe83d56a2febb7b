"""The transaction runner of the ordinary fakes: google-cloud-firestore's own `transactional`, run as code
written the usual way runs it.

One `firestore.transactional(callback)(db.transaction())` per transaction, with the client's default attempts
(`MAX_ATTEMPTS`, 5): the SDK retries an aborted commit at once, with no pause, and nothing else. No wall-clock
rounds, no read-only looks (reference/journal/runner.py has both; this runner is what an implementation
without them does, see docs/contention.md). What it keeps of the reference runner's contract:

- a contract error raised by the callback (`contract_error`) rolls the attempt back and is the answer;
- any Firestore, auth or transport failure, an `Aborted` read included, and attempts exhausted on aborted
  commits, is the system's unavailable answer (`unavailable()`), with nothing of the original chained;
- anything else is a bug and propagates;
- `log` (the harness's attempt log, `fencecheck.runners.contest.CallCounts` or the reference's `AttemptLog`) counts
  read-write attempts and aborted ones; `looks` is never touched, as no look is ever taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import firestore
from google.cloud.firestore_v1.base_transaction import MAX_ATTEMPTS

T = TypeVar("T")

__all__ = ["MAX_ATTEMPTS", "run_sdk_transaction"]

_FAILURES = (api_exceptions.GoogleAPIError, auth_exceptions.GoogleAuthError, grpc.RpcError, ConnectionError)


def _is_failure(error: BaseException) -> bool:
    # `transactional` reports exhausted attempts as ValueError("Failed to commit ...") caused by the Aborted.
    return isinstance(error, _FAILURES) or (isinstance(error, ValueError) and isinstance(error.__cause__, _FAILURES))


def _is_abort(error: BaseException) -> bool:
    return isinstance(error, api_exceptions.Aborted) or isinstance(error.__cause__, api_exceptions.Aborted)


def run_sdk_transaction(
    db: Any,
    callback: Callable[[Any], T],
    *,
    contract_error: type[Exception],
    unavailable: Callable[[], Exception],
    log: Any = None,
) -> T:
    """Run `callback` in a read-write transaction through the SDK's `transactional` (see the module doc)."""
    attempts = 0

    def counted(transaction: Any) -> T:
        nonlocal attempts
        attempts += 1  # the SDK calls the callback once per attempt; every attempt but the last was aborted
        return callback(transaction)

    last_aborted = False
    try:
        return firestore.transactional(counted)(db.transaction())
    except contract_error:
        raise
    except Exception as error:
        if not _is_failure(error):
            raise
        last_aborted = _is_abort(error)
        raise unavailable() from None
    finally:
        if log is not None:
            log.attempts += attempts
            log.aborts += max(0, attempts - 1) + (1 if last_aborted and attempts else 0)
