"""Run one parallel program once, on one empty project, and judge it (any plug-in: the program names its system).

1. prefix: every call goes through `fencecheck.runners.lockstep.Lockstep` (the model's answer and the stored documents
   checked after each call); a disagreement ends the repetition as a `prefix` failure: a sequential bug, no
   race needed.
2. branches: one thread per branch, released together by a `threading.Barrier`
   (`fencecheck.race.release_together`); each branch makes its calls in order through `plugin.invoke`, with a
   clock that reads the op's own clock reading. A caller whose answer is indefinite (the system's unavailable
   code, a transport error, no answer) retries the whole call with the same op up to `max_retries` times; a
   `commit_failure_first` call makes its first attempt (its op marked by the spec's `CommitFailure.mark`) on
   its branch's rejecting wire lane, a fault proxy of its own that rejects every Commit before it reaches the
   emulator (`fencecheck.wire.lanes`: any implementation, one in another process included); with a fault mix
   (`wire_mix`, `fencecheck.wire.mix`) every branch call goes through its branch's mixed lane. Every attempt
   is recorded by one `Recorder`, with the wire faults that hit it.
3. read back the whole project, and judge: the linearizability checker from the model state after the prefix,
   against the called partitions' stored documents; plus clock reads, foreign exceptions, hung branches,
   documents outside every partition, and the system's own structural checks, each problem of its kind
   (fencecheck.problems: a foreign exception is a crash, or an exec: implementation's hang or protocol; a hung
   branch a hang; the rest contract findings) (`ParallelSpec.race_problems`:
   the journal's per-key invariants and whole-project read-back, the lantern's INV-1..5).

Why threads and a barrier, never sleeps: the barrier is the only synchronization; how the calls then
interleave is up to the emulator, which is the point.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import attrs

from fencecheck.checker.definite import contention_problem, excused_calls
from fencecheck.checker.history import Definite, History, Indefinite, Outcome, Recorder, classifier, observed_of
from fencecheck.checker.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.emulator.firestore_io import read_project
from fencecheck.parallel.program import BranchCall, ParallelProgram
from fencecheck.parallel.strategy import spec_of
from fencecheck.plugin.records import SystemPlugin
from fencecheck.problems import (
    Problem,
    ProblemKind,
    as_problems,
    contention,
    contract,
    hang,
    harness,
    kind_of_exception,
    verdict_problem,
)
from fencecheck.runners.contest import MAX_WHOLE_CALL_RETRIES, fresh_log, release_together
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch, OnceClock
from fencecheck.wire.lanes import Lane, WireLanes
from fencecheck.wire.mix import FaultMix

OK, ILLEGAL, UNKNOWN, PREFIX, BROKEN = "ok", "illegal", "unknown", "prefix", "broken"
CONTENTION = "contention"
REPETITION_STATUSES = (OK, ILLEGAL, UNKNOWN, PREFIX, BROKEN, CONTENTION)


@attrs.frozen
class Attempt:
    """One whole call as a branch made it: the op recorded (a commit-failing first attempt is marked), its
    outcome, what the attempt log counted and how often it read its clock."""

    op: Any
    outcome: Outcome
    attempts: int  # transaction attempts (the implementation's attempt log; 0 when it keeps none)
    aborts: int
    clock_reads: int
    unexpected: str | None = None  # an exception that is not the system's contract error
    unexpected_kind: ProblemKind | None = None  # what it was (fencecheck.problems.kind_of_exception)
    # How often the call must read its clock: once, or never for a call handed no reading (`plugin.clock_of`
    # None: a system whose calls take no time, as the contest runner's `call_problems` has it).
    clock_wanted: int = 1


@attrs.frozen
class CallerRecord:
    """One branch call and its whole-call attempts (the last one's outcome is its answer)."""

    call: BranchCall
    attempts: tuple[Attempt, ...]

    @property
    def final(self) -> Outcome:
        return self.attempts[-1].outcome if self.attempts else Indefinite("not_started")

    @property
    def definite(self) -> bool:
        return self.final.definite

    @property
    def retries(self) -> int:
        return max(0, len(self.attempts) - 1)


@attrs.frozen(eq=False)
class Repetition:
    """One run of a program. `status`: ok; illegal / unknown (the checker's verdict on the race); prefix (a
    prefix call disagreed with the model); broken (the checker said ok but a structural invariant, the
    clock-read rule, a foreign exception, a hung branch or the whole-project read-back failed); contention
    (all that held, but fewer than 90% of the branch calls got a definite answer or the model's own
    unavailable answer, `fencecheck.checker.definite`: the run shows nothing about the contract; neither a pass nor
    a failure of it). `problems` and `prefix_mismatch` are structured (fencecheck.problems): each of its kind,
    set where it was found; `findings()` is everything the repetition found, the verdict's and contention's
    included."""

    status: str
    project_id: str | None
    initial_state: Any = None  # the model state after the prefix
    branches: tuple[tuple[CallerRecord, ...], ...] = ()
    history: History | None = None
    verdict: Verdict | None = None
    problems: tuple[Problem, ...] = ()
    prefix_mismatch: Problem | None = None  # the prefix call's LockstepMismatch (contract, or a crash's kind)
    # fencecheck.checker.definite's message when the branch calls' definite share is short
    contention: str | None = None
    race_seconds: float = 0.0
    checker_seconds: float = 0.0
    seconds: float = 0.0
    wire_faults: Any = attrs.field(factory=dict)  # fault events per "kind Method" over every lane
    wire_seed: str | None = None  # the fault mix's seed (None: no mix)

    @property
    def passed(self) -> bool:
        return self.status == OK

    def findings(self) -> tuple[Problem, ...]:
        """Everything this repetition found wrong, each of its kind (empty when it passed): the prefix's
        mismatch, or the checker's verdict (illegal: contract; unknown), the problems and contention."""
        if self.prefix_mismatch is not None:
            return (self.prefix_mismatch,)
        verdict = None if self.verdict is None else verdict_problem(self.verdict.status, self.verdict.explain())
        found = (*([verdict] if verdict is not None else []), *self.problems)
        return (*found, *([contention(self.contention)] if self.contention is not None else []))

    def explain(self) -> str:
        """Why the repetition failed (empty when it passed)."""
        if self.status == PREFIX:
            return self.prefix_mismatch.text if self.prefix_mismatch is not None else ""
        if self.status == CONTENTION:
            return self.contention or ""
        parts = []
        if self.verdict is not None and not self.verdict.ok:
            parts.append(self.verdict.explain())
        parts += [p.text for p in self.problems]
        return "\n".join(parts)


def _call_once(plugin: SystemPlugin, implementation: Any, db: Any, recorder: Recorder, lane: str, op: Any,
               wire: Lane | None = None) -> Attempt:
    log = fresh_log(0, 0)
    clock = OnceClock(plugin.clock_of(op))
    unexpected, unexpected_kind = None, None

    def invoke(client: Any) -> Any:
        return plugin.invoke(implementation, client, op, clock, log)

    run, faults = (lambda: invoke(db)), None
    if wire is not None:
        run, faults = WireLanes.call(wire, invoke)
    try:
        value = recorder.call(lane, op, run, wire_faults=faults)
        outcome: Outcome = Definite(observed_of(value))
    except Exception as error:  # recorded already; classified the same way here to decide on a retry
        outcome = classifier(plugin, implementation)(error)
        if plugin.error_code(implementation, error) is None:
            unexpected = f"{type(error).__name__}: {error}"[:500]
            unexpected_kind = kind_of_exception(error)
    return Attempt(op, outcome, log.attempts, log.aborts, clock.reads, unexpected, unexpected_kind,
                   clock_wanted=0 if plugin.clock_of(op) is None else 1)


def _run_branch(plugin: SystemPlugin, implementation: Any, db: Any, lanes: WireLanes | None, recorder: Recorder,
                lane: str, calls: tuple[BranchCall, ...], max_retries: int) -> tuple[CallerRecord, ...]:
    commit_failure = spec_of(plugin).commit_failure
    records = []
    for call in calls:
        attempts: list[Attempt] = []
        for number in range(1 + max_retries):
            first_fails = number == 0 and call.commit_failure_first and commit_failure is not None
            op = commit_failure.mark(call.op) if first_fails else call.op
            wire = None
            if lanes is not None:
                wire = lanes.rejecting(lane) if first_fails else lanes.mixed(lane) if lanes.mix is not None else None
            attempt = _call_once(plugin, implementation, db, recorder, lane, op, wire)
            attempts.append(attempt)
            if attempt.outcome.definite:
                break
        records.append(CallerRecord(call, tuple(attempts)))
    return tuple(records)


def _harness_problems(branches: tuple[tuple[CallerRecord, ...], ...], lanes: tuple[str, ...]) -> list[Problem]:
    """A foreign exception (a crash, or an exec: implementation's hang or broken protocol) and a clock read other
    than the call's (once, or never for a call handed no reading: a contract finding), per attempt."""
    problems = []
    for lane, records in zip(lanes, branches, strict=True):
        for record in records:
            for attempt in record.attempts:
                if attempt.unexpected is not None:
                    said = f"{lane}: raised {attempt.unexpected} (only the system's error may escape)"
                    problems.append(Problem(attempt.unexpected_kind or ProblemKind.CRASH, said))
                if attempt.attempts and attempt.clock_reads != attempt.clock_wanted:
                    wanted = "once per call" if attempt.clock_wanted else "never: the call is handed no reading"
                    problems.append(contract(f"{lane}: the clock was read {attempt.clock_reads} times ({wanted})"))
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
    system: Any = None,
    project_id: str | None = None,
    max_retries: int = MAX_WHOLE_CALL_RETRIES,
    budget: int = DEFAULT_BUDGET,
    barrier_timeout: float = 120.0,
    join_timeout: float = 600.0,
    wire_mix: FaultMix | None = None,
) -> Repetition:
    """Run `program` once on `db`, a client for an empty project that nobody else writes to, against `system`
    (an implementation of the program's system; its plug-in's reference when None). `wire_mix`: the branch
    calls go through their lanes under this fault mix (the prefix and the read-back never do). The wire lanes
    live as long as the repetition."""
    started = time.perf_counter()
    plugin = program.plugin
    spec = spec_of(plugin)
    implementation = plugin.reference if system is None else system
    lockstep = Lockstep(db, plugin=plugin, system=implementation, epoch=program.epoch)
    try:
        lockstep.check_documents()
        for op in program.prefix:
            lockstep.run(op)
    except LockstepMismatch as mismatch:
        return Repetition(PREFIX, project_id, prefix_mismatch=mismatch.problem, seconds=time.perf_counter() - started)
    initial = lockstep.state
    keys = program.keys()
    before = spec.before_race(db, keys)
    rejects = spec.commit_failure is not None and any(c.commit_failure_first for b in program.branches for c in b)
    wire = WireLanes(db, mix=wire_mix) if rejects or wire_mix is not None else None
    recorder = Recorder(classify=classifier(plugin, implementation), system=plugin.name)
    lanes = program.lanes
    try:
        records, hung_indices = release_together(
            [
                functools.partial(_run_branch, plugin, implementation, db, wire, recorder, lane, branch, max_retries)
                for lane, branch in zip(lanes, program.branches, strict=True)
            ],
            [f"parallel-{lane}" for lane in lanes],
            barrier_timeout=barrier_timeout,
            join_timeout=join_timeout,
            label="parallel",
        )
    finally:
        if wire is not None:
            wire.close()
    hung = [lanes[i] for i in hung_indices]

    project = read_project(db)
    final: dict[str, dict[str, Any]] = {key: {} for key in keys}
    strays = []
    for path, item in sorted(project.items()):
        key = plugin.partition_of_path(path)
        if key is None:
            strays.append(path)
        elif key in final:
            final[key][path] = item.data
    history = recorder.history(final)
    calls = history.calls
    finished = [c.completed_at for c in calls if c.completed_at is not None]
    race_seconds = (max(finished) - min(c.invoked_at for c in calls)) / 1e9 if finished else 0.0

    checking = time.perf_counter()
    verdict = check(history, plugin=plugin, initial_state=initial, final_documents=final, budget=budget)
    checker_seconds = time.perf_counter() - checking

    branches = tuple(records[i] or () for i in range(len(lanes)))
    problems = [hang(f"{lane}: still running when the harness gave up") for lane in hung]
    problems += _harness_problems(branches, lanes)
    if not spec.reports_strays:
        problems += [contract(f"{path}: stored outside every {plugin.partition_noun}") for path in strays]
    problems += as_problems(spec.race_problems(db, initial, keys, before, project))
    if wire is not None:  # the harness's own fault injection did not hold: no evidence either way
        problems += [harness(text) for text in wire.rejection_problems()]
    made = [record for lane in branches for record in lane]  # one record per branch call, retries inside
    last_ids = _last_call_ids(history, lanes, branches)

    def answered(excused: frozenset[int]) -> int:
        return sum(1 for r in made if r.definite or last_ids.get(id(r)) in excused)

    excused = excused_calls(history, verdict, initial, answered=answered, callers=len(made), budget=budget)
    contention = contention_problem(answered(excused), len(made))
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
        dict(sorted(wire.kinds().items())) if wire is not None else {},
        None if wire_mix is None else wire_mix.seed,
    )
