"""The lockstep runner's faults on the wire: a commit rejected by the proxy, a commit applied whose answer is lost.

`Lockstep(db, plugin=..., wire=session)` (a `fencecheck.wire.session.WireSession`) runs its commit-failure and
lost-response steps on the session's client, with these faults:

- a commit-failure step (`plugin.commit_fails(op)`, the journal's `commit_fails=True`): every Commit of the
  call is rejected by the proxy with ALREADY_EXISTS before it reaches the emulator (`commits_rejected`). That is
  definite: nothing applied, and the model says what the caller is told. ALREADY_EXISTS is what the emulator
  answers the client-side path (`fencecheck.emulator.firestore_io.CommitFailureClient`), and no layer of the Python
  client retries it, so the implementation meets the same refusal either way;
- a lost-response step (`plugin.response_lost(op)`, the journal's `response_lost=True`): the call's first
  Commit is forwarded and its answer replaced by UNAVAILABLE (`COMMIT_RESPONSE_LOST`). How the runner judges
  such a step (against both outcomes, applied and not applied) is the runner's: `Lockstep.run` in
  fencecheck/runners/lockstep.py.

This module knows the proxy, not the runner: the runner imports it, never the other way round
(tests/unit/test_core_imports_no_system.py: no import cycles, no upward imports).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import grpc

from fencecheck.wire.faults import fail_response, on, reject
from fencecheck.wire.session import WireSession

COMMIT_REJECTED = reject(grpc.StatusCode.ALREADY_EXISTS, "commit rejected by the fault proxy")
COMMIT_RESPONSE_LOST = fail_response(grpc.StatusCode.UNAVAILABLE, "commit applied, its answer lost by the fault proxy")


@contextlib.contextmanager
def commits_rejected(wire: WireSession) -> Iterator[Any]:
    """The session's client while the proxy rejects every Commit (definite: nothing reaches the emulator)."""
    with wire.proxy.faults(on("Commit", COMMIT_REJECTED, times=None)):
        yield wire.db
