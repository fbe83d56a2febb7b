"""Run one parallel program once, on one empty project, and judge it.

1. prefix: every call goes through `fencecheck.lockstep.Lockstep` (the model's answer, the stored documents,
   update times and audit chain checked after each call); a disagreement ends the repetition as a
   `prefix` failure: a sequential bug, no race needed.
2. branches: one thread per branch, released together by a `threading.Barrier`; each branch makes its calls
   in order. A call is made the way the race harness makes it (`fencecheck.race`): a caller whose answer is
   indefinite (`journal_unavailable`, a transport error, no answer) retries the whole call with the same op
   up to `max_retries` times, a `commit_failure_first` call makes its first attempt on a
   `CommitFailureClient`, and every attempt is recorded by one `Recorder`.
3. read back each called key's documents, then the whole project, and judge: the linearizability checker
   from the model state after the prefix, against the stored documents; plus the race harness's
   structural invariants per key (`fencecheck.race.structural_problems`), clock reads, foreign exceptions,
   hung branches and any document outside the called keys' (`fencecheck.race.project_problems`: a stray
   write, or a prefix-only key's documents that are no longer the model's).

Why threads and a barrier, never sleeps: the barrier is the only synchronization; how the calls then
interleave is up to the emulator, which is the point.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import Any

import attrs

from fencecheck.contest import MAX_WHOLE_CALL_RETRIES, release_together
from fencecheck.definite import contention_problem, contract_unavailable
from fencecheck.firestore_io import CommitFailureClient, Stored, read_project
from fencecheck.history import History, Recorder
from fencecheck.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.lockstep import REFERENCE, Lockstep, LockstepMismatch, ReferenceAPI
from fencecheck.plugins.journal_calls import Caller, CallerRecord, nested_paths, run_caller
from fencecheck.plugins.journal_store import read_key
from fencecheck.plugins.journal_structure import project_problems, structural_problems
from model.journal import JournalState

from .program import ParallelProgram

OK, ILLEGAL, UNKNOWN, PREFIX, BROKEN = "ok", "illegal", "unknown", "prefix", "broken"
CONTENTION = "contention"
REPETITION_STATUSES = (OK, ILLEGAL, UNKNOWN, PREFIX, BROKEN, CONTENTION)


@attrs.frozen(eq=False)
class Repetition:
    """One run of a program. `status`: ok; illegal / unknown (the checker's verdict on the race); prefix (a
    prefix call disagreed with the model); broken (the checker said ok but a structural invariant, the
    clock-read rule, a foreign exception, a hung branch or the whole-project read-back failed); contention
    (all that held, but fewer than 90% of the branch calls got a definite answer or the model's own
    unavailable answer, `fencecheck.definite`: the run shows nothing about the contract; neither a pass nor
    a failure of it)."""

    status: str
    project_id: str | None
    initial_state: JournalState | None = None  # the model state after the prefix
    branches: tuple[tuple[CallerRecord, ...], ...] = ()
    history: History | None = None
    verdict: Verdict | None = None
    problems: tuple[str, ...] = ()
    prefix_mismatch: str | None = None
    contention: str | None = None  # fencecheck.definite's message when the branch calls' definite share is short
    race_seconds: float = 0.0
    checker_seconds: float = 0.0
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == OK

    def explain(self) -> str:
        """Why the repetition failed (empty when it passed)."""
        if self.status == PREFIX:
            return self.prefix_mismatch or ""
        if self.status == CONTENTION:
            return self.contention or ""
        parts = []
        if self.verdict is not None and not self.verdict.ok:
            parts.append(self.verdict.explain())
        parts += self.problems
        return "\n".join(parts)


def _run_branch(
    recorder: Recorder,
    system: ReferenceAPI,
    db: Any,
    failing: Any,
    lane: str,
    calls: tuple,
    max_retries: int,
) -> tuple[CallerRecord, ...]:
    records = []
    for call in calls:
        caller = Caller(lane, call.op, call.commit_failure_first)
        records.append(run_caller(recorder, system, db, failing, caller, max_retries))
    return tuple(records)


def _key_problems(
    key_hash: str, state: JournalState, before: Mapping[str, Stored], after: Mapping[str, Stored], nested
) -> list[str]:
    record = state.get(key_hash)
    corrupt = record is not None and record.corrupt
    return structural_problems(key_hash, before, after, nested_paths=nested, corrupt=corrupt)


def _harness_problems(branches: tuple[tuple[CallerRecord, ...], ...], lanes: tuple[str, ...]) -> list[str]:
    problems = []
    for lane, records in zip(lanes, branches, strict=True):
        for record in records:
            for attempt in record.attempts:
                if attempt.unexpected is not None:
                    problems.append(f"{lane}: raised {attempt.unexpected} (only the journal error type may escape)")
                if attempt.attempts and attempt.clock_reads != 1:
                    problems.append(f"{lane}: the clock was read {attempt.clock_reads} times (once per call)")
    return problems


def _last_call_ids(
    history: History, lanes: tuple[str, ...], branches: tuple[tuple[CallerRecord, ...], ...]
) -> dict[int, int]:
    """id(record) -> the history id of its last attempt. A lane's calls are sequential, so its n-th recorded
    call (by id) is its n-th attempt."""
    found = {}
    for lane, records in zip(lanes, branches, strict=True):
        ids = iter(sorted(call.id for call in history.calls if call.caller == lane))
        for record in records:
            taken = [next(ids, None) for _ in record.attempts]
            if taken:
                found[id(record)] = taken[-1]
    return found


def run_once(
    db: Any,
    program: ParallelProgram,
    *,
    system: ReferenceAPI = REFERENCE,
    project_id: str | None = None,
    max_retries: int = MAX_WHOLE_CALL_RETRIES,
    budget: int = DEFAULT_BUDGET,
    barrier_timeout: float = 120.0,
    join_timeout: float = 600.0,
) -> Repetition:
    """Run `program` once on `db`, a client for an empty project that nobody else writes to."""
    started = time.perf_counter()
    lockstep = Lockstep(db, system=system, epoch=program.epoch)
    try:
        lockstep.check_documents()
        for op in program.prefix:
            lockstep.run(op)
    except LockstepMismatch as mismatch:
        return Repetition(PREFIX, project_id, prefix_mismatch=str(mismatch), seconds=time.perf_counter() - started)
    initial = lockstep.state
    keys = program.keys()
    before = {h: read_key(db, h) for h in keys}
    failing = None
    if any(call.commit_failure_first for branch in program.branches for call in branch):
        failing = CommitFailureClient(db)

    recorder = Recorder()
    lanes = program.lanes
    records, hung_indices = release_together(
        [
            functools.partial(_run_branch, recorder, system, db, failing, lane, branch, max_retries)
            for lane, branch in zip(lanes, program.branches, strict=True)
        ],
        [f"parallel-{lane}" for lane in lanes],
        barrier_timeout=barrier_timeout,
        join_timeout=join_timeout,
        label="parallel",
    )
    hung = [lanes[i] for i in hung_indices]

    after = {h: read_key(db, h) for h in keys}
    nested = {h: nested_paths(db, h) for h in keys}
    project = read_project(db)
    final = {h: {path: item.data for path, item in stored.items()} for h, stored in after.items()}
    history = recorder.history(final)
    calls = history.calls
    finished = [c.completed_at for c in calls if c.completed_at is not None]
    race_seconds = (max(finished) - min(c.invoked_at for c in calls)) / 1e9 if finished else 0.0

    checking = time.perf_counter()
    verdict = check(history, initial_state=initial, budget=budget)
    checker_seconds = time.perf_counter() - checking

    branches = tuple(records[i] or () for i in range(len(lanes)))
    problems = [f"{lane}: still running when the harness gave up" for lane in hung]
    problems += _harness_problems(branches, lanes)
    for h in keys:
        problems += _key_problems(h, initial, before[h], after[h], nested[h])
    problems += project_problems(project, {h: {*after[h], *nested[h]} for h in keys}, initial)
    made = [record for lane in branches for record in lane]  # one record per branch call, retries inside
    excused = contract_unavailable(verdict, initial)
    last_ids = _last_call_ids(history, lanes, branches)
    answered = sum(1 for r in made if r.definite or last_ids.get(id(r)) in excused)
    contention = contention_problem(answered, len(made))
    if verdict.ok:
        status = BROKEN if problems else (OK if contention is None else CONTENTION)
    else:
        status = ILLEGAL if verdict.status == "illegal" else UNKNOWN
    return Repetition(
        status,
        project_id,
        initial,
        branches,
        history,
        verdict,
        tuple(problems),
        None,
        contention,
        race_seconds,
        checker_seconds,
        time.perf_counter() - started,
    )
