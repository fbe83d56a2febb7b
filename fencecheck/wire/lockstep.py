"""The lockstep runner's steps on the wire: a commit rejected by the proxy, a commit applied whose answer is lost.

`Lockstep(db, wire=session)` (a `fencecheck.wire.session.WireSession`) runs these on the session's client:

- a commit-failure step (`plugin.commit_fails(op)`, the journal's `commit_fails=True`): every Commit of the
  call is rejected by the proxy with ALREADY_EXISTS before it reaches the emulator (`commits_rejected`). That is
  definite: nothing applied, and the model says what the caller is told. ALREADY_EXISTS is what the emulator
  answers the client-side path (`fencecheck.firestore_io.CommitFailureClient`), and no layer of the Python
  client retries it, so the implementation meets the same refusal either way;
- a lost-response step (`plugin.response_lost(op)`, the journal's `response_lost=True`): the call's first
  Commit is forwarded and its answer replaced by UNAVAILABLE (`fail_response`). The client's own retry
  logic runs (google-cloud-firestore's gapic layer resends the Commit; the emulator refuses the closed
  transaction), no harness retry. The step then has two possible outcomes, and the stored documents say
  which happened: applied (the model's state after the step) or not applied (the state before it). The
  model follows that one. The answer must be the unavailable code (the caller cannot know) or, when it
  applied, the model's own answer; anything else, or documents that are neither, is a mismatch.
  A call that sent no Commit (an answer decided before committing) is checked as an ordinary step.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import grpc

from fencecheck.errors import UsageError
from fencecheck.lockstep import Lockstep, LockstepMismatch
from fencecheck.wire.faults import FaultEvent, fail_response, on, reject
from fencecheck.wire.session import WireSession

COMMIT_REJECTED = reject(grpc.StatusCode.ALREADY_EXISTS, "commit rejected by the fault proxy")
COMMIT_RESPONSE_LOST = fail_response(grpc.StatusCode.UNAVAILABLE, "commit applied, its answer lost by the fault proxy")


@contextlib.contextmanager
def commits_rejected(wire: WireSession) -> Iterator[Any]:
    """The session's client while the proxy rejects every Commit (definite: nothing reaches the emulator)."""
    with wire.proxy.faults(on("Commit", COMMIT_REJECTED, times=None)):
        yield wire.db


def _events_during(wire: WireSession, seen: int) -> tuple[FaultEvent, ...]:
    return wire.proxy.log.events()[seen:]


def _problem_lines(error: LockstepMismatch, limit: int = 6) -> list[str]:
    # the mismatch's own text: its head line, then its problems, up to the model state it appends
    lines = str(error).splitlines()[1:]
    problems = [line for line in lines[: next((i for i, line in enumerate(lines) if not line.startswith("  ")),
                                              len(lines))]]
    return [f"  {line}" for line in problems[:limit]]


def run_response_lost(lockstep: Lockstep, op: Any) -> Any:
    """Run a lost-response step (see the module docstring); the model's result, or None when it did not apply."""
    wire, plugin = lockstep.wire, lockstep.plugin
    if wire is None:
        raise UsageError("a lost-response step runs on the wire: give the Lockstep a WireSession (wire=...)")
    before = lockstep.state
    seen = len(wire.proxy.log.events())
    with wire.proxy.faults(on("Commit", COMMIT_RESPONSE_LOST)):
        result, observed = lockstep.apply(op, db=wire.db)
    hits = _events_during(wire, seen)
    if not hits:  # no Commit was sent: nothing was lost, an ordinary step
        lockstep.check_answer(op, result, observed)
        lockstep.check_documents()
        return result
    lost = ", ".join(event.label for event in hits)
    applied = True
    try:
        lockstep.check_documents()
    except LockstepMismatch as as_applied:
        lockstep.state, lockstep.mismatched = before, False  # the other outcome: nothing applied
        try:
            lockstep.check_documents()
        except LockstepMismatch as as_not_applied:
            raise lockstep._mismatch(op, [
                f"the wire lost the commit's answer ({lost}); the stored documents are neither the model's "
                "with the step applied nor without it",
                "against the step applied:", *_problem_lines(as_applied),
                "against the step not applied:", *_problem_lines(as_not_applied),
            ]) from None
        applied = False
        lockstep.transitions -= Counter({result.transition: 1})
        if lockstep._coverage is not None:
            lockstep._coverage -= Counter({result.transition: 1})
    unavailable = plugin.unavailable_code
    if observed != unavailable and not (applied and plugin.answer_matches(result, observed)):
        model = result.output if result.ok else result.code
        allowed = f"{model!r} or {unavailable!r}" if applied else f"{unavailable!r} (nothing was applied)"
        raise lockstep._mismatch(op, [
            f"the wire lost the commit's answer ({lost}); the stored documents show the step "
            f"{'applied' if applied else 'not applied'} (transition {result.transition})",
            f"model allows {allowed}",
            f"implementation answered {observed!r}",
        ])
    lockstep.check_clock(op)
    return result if applied else None
