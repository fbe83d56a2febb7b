"""Contest runner: race named callers of any system (a `SystemPlugin`) against one implementation on Firestore,
record the history and judge it with the linearizability checker.

A `Contest` is data: sequential `setup` operations, `racers`, each one operation that carries its own clock
reading, and optional `followers`, called one at a time after the race (what a caller does next, e.g. light
again once the race is over: a race alone may never produce that order). `run_contest` executes it on a
project nobody else writes to:

1. setup: every operation goes through `fencecheck.runners.lockstep.Lockstep` (model and the plug-in's reference in
   lockstep, answers and stored documents compared), then the whole project is read back once more. The
   lockstep's model state is the checker's initial state, so a contest never starts from an unverified state.
   The setup is the reference's whatever implementation races: the contract lets any call answer
   unavailable, so an implementation's setup answer could only accuse it of what the race never showed.
2. race: every racer is released at once (`release_together`); each makes its call through
   `plugin.invoke` with a clock that reads the op's own clock reading, and a fresh attempt log. A racer whose
   answer is indefinite (the system's unavailable code, any exception that is not the system's error, no
   answer) retries the WHOLE call with the same op, at most `max_retries` more times, as a real caller with
   a lost answer would. A racer with a `first_op` makes its first attempt with that op instead (the same
   call whose commit the server rejects, `plugin.commit_fails`): it runs on that racer's rejecting wire lane,
   a fault proxy of its own whose plan rejects every Commit before it reaches the emulator
   (`fencecheck.wire.lanes`; any implementation, one in another process included, is pointed at the proxy),
   and the proxy's log must show every commit sent there rejected. Then it waits at a second barrier until
   every racer's first attempt has ended (a racer without a `first_op` waits there before its call), so the
   main calls start together: a fair start, not rejected callers re-entering others' lock waits. With a fault
   mix (`wire_mix`, `fencecheck.wire.mix`) every call of a racer goes through its own mixed lane. Every call
   is recorded by a `fencecheck.checker.history.Recorder`, with the wire faults that hit it (`Call.wire_faults`).
   Then each follower makes its call (retried the same way), recorded in the same history.
3. the final stored documents: the whole project, split into the plug-in's partitions (every partition of
   the setup's state and every called one, so a write to an uncalled partition is judged too).
4. judge: `fencecheck.checker.linearizability.check` from the setup's model state against those documents; and the
   plug-in's `contest_problems(initial state, project after the setup, project at the end, contest)`: what
   must hold of the stored documents whatever the order (the journal's audit chain, update times, the
   contest's expected terminal events, `Contest.facts`).

The runner knows no system: a scenario's promise is the caller's (it arrives at
`fencecheck.runners.contest_results.contest_result` as a list of problems). `race_callers` is step 2 alone, for tests
that want raw answers.

Model-only runs of a contest (no Firestore; histories for unit tests) are in `fencecheck.runners.contest_simulation`. A
run's result record, its files and the whole contest end to end (`execute_contest`) are in
`fencecheck.runners.contest_results`.
"""

from __future__ import annotations

import functools
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from fencecheck.checker.history import (
    Call,
    Definite,
    History,
    Indefinite,
    Outcome,
    Recorder,
    classifier,
    observed_of,
)
from fencecheck.checker.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.emulator.firestore_io import read_project
from fencecheck.plugin.records import SystemPlugin
from fencecheck.problems import Problem, ProblemKind, as_problems, contract, hang, harness, kind_of_exception
from fencecheck.runners.lockstep import Lockstep, OnceClock
from fencecheck.wire.lanes import Lane, WireLanes
from fencecheck.wire.mix import FaultMix

MAX_WHOLE_CALL_RETRIES = 2
# How long the racers' main calls wait for every first attempt to end (`race_callers`, the fair start).
MAIN_START_TIMEOUT_SECONDS = 120.0

Documents = dict[str, dict[str, Any]]


# --- what a contest is --------------------------------------------------------------------------------------


class Ids:
    """Fresh canonical UUID v4 strings for a contest's ids; deterministic for a given seed."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._rng = random.Random(seed)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))


@attrs.frozen
class Racer:
    """One concurrent caller: a name unique in its contest and the one operation it calls (clock included).
    `first_op`: what its first attempt calls instead, when that differs (the same call on a client whose
    commit the server rejects, `plugin.commit_fails`); every whole-call retry calls `op`."""

    name: str
    op: Any
    first_op: Any = attrs.field(default=None, kw_only=True)

    def op_of(self, attempt: int) -> Any:
        """The operation of whole-call attempt 0, 1, ..."""
        return self.first_op if attempt == 0 and self.first_op is not None else self.op


@attrs.frozen
class Contest:
    scenario: str
    setup: tuple[Any, ...] = attrs.field(converter=tuple)
    racers: tuple[Racer, ...] = attrs.field(converter=tuple)
    followers: tuple[Racer, ...] = attrs.field(default=(), converter=tuple, kw_only=True)
    epoch: datetime | None = None  # times in descriptions are shown relative to it
    # What the plug-in's `contest_problems` expects of this contest beyond the history (the journal's
    # "terminalEvents": the number of terminal audit events stored at the end); plain JSON, saved with the run.
    facts: Mapping[str, Any] = attrs.field(factory=dict, kw_only=True, hash=False)

    def __attrs_post_init__(self) -> None:
        if not self.racers:
            raise ValueError(f"{self.scenario}: a contest needs racers")
        names = [racer.name for racer in (*self.racers, *self.followers)]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.scenario}: racer and follower names must be unique")

    @property
    def callers(self) -> tuple[Racer, ...]:
        """The racers, then the followers."""
        return (*self.racers, *self.followers)

    @property
    def width(self) -> int:
        return len(self.racers)

    def narrowed(self, width: int) -> Contest:
        """The same contest with its first `width` racers (its setup, followers and facts unchanged): a lower
        degree of the same race, for a run too contended to judge at its own (`fencecheck.runners.contest_results`)."""
        if not 0 < width <= self.width:
            raise ValueError(f"{self.scenario}: cannot narrow {self.width} racers to {width}")
        return attrs.evolve(self, racers=self.racers[:width])


def qualified_name(plugin: SystemPlugin, scenario: str) -> str:
    """How a contest's runs are named in files and reports: `<system>_<scenario>` (the system's name keeps them
    apart from another system's scenario of the same name)."""
    return f"{plugin.name}_{scenario}"


# --- what a run produced ------------------------------------------------------------------------------------


@attrs.frozen
class CallRecord:
    """One whole call as a racer made it: its place in the history, its outcome, and what the implementation's
    attempt log counted (zero when it never touched the log)."""

    call_id: int
    outcome: Outcome
    transaction_attempts: int = 0
    aborts: int = 0
    looks: int = 0
    clock_reads: int | None = None  # None: unknown (a call whose racer's thread never returned)
    unexpected: str | None = None  # an exception that is not the system's error
    op: Any = None  # the operation this call made (a racer's `first_op` or `op`); None: not known
    # What `unexpected` was (fencecheck.problems.kind_of_exception): a crash, or an exec: implementation's hang
    # or broken protocol; None when nothing unexpected was raised.
    unexpected_kind: ProblemKind | None = None


@attrs.frozen
class RacerRecord:
    racer: Racer
    calls: tuple[CallRecord, ...]

    @property
    def final(self) -> Outcome:
        return self.calls[-1].outcome if self.calls else Indefinite("not_started")

    @property
    def definite(self) -> bool:
        return self.final.definite

    @property
    def label(self) -> str:
        """The final answer as a short label: the output's outcome, the error code, or why it is indefinite."""
        return answer_label(self.final)

    @property
    def retries(self) -> int:
        return max(0, len(self.calls) - 1)

    @property
    def lost_an_answer(self) -> bool:
        """Some call of this racer ended indefinite: it may have applied without the racer learning of it."""
        return any(not call.outcome.definite for call in self.calls)


@attrs.frozen(eq=False)
class ContestRun:
    """Everything one run produced. `problems` are the harness's findings, each of its kind (hung racers: hang;
    foreign exceptions: crash, or an exec: implementation's hang or protocol; clock reads, documents outside
    every partition and the plug-in's `contest_problems`: contract; commits a rejecting wire lane let through:
    harness); the checker's findings are in `verdict`."""

    contest: Contest
    plugin: SystemPlugin
    implementation: Any
    initial_state: Any
    racers: tuple[RacerRecord, ...]
    history: History
    final_documents: dict[str, Documents]  # per partition
    verdict: Verdict
    checker_seconds: float
    race_seconds: float = 0.0  # the racers' first invocation to their last completion (retries included)
    total_seconds: float = 0.0
    problems: tuple[Problem, ...] = ()
    followers: tuple[RacerRecord, ...] = ()
    # What the contest expected of the stored documents and did not find (`plugin.contest_expectations`): a
    # contract finding only when the answers imply the expectation (`fencecheck.runners.contest_results`).
    expectation_problems: tuple[str, ...] = ()
    wire_faults: Mapping[str, int] = attrs.field(factory=dict)  # fault events per "kind Method", every lane
    wire_seed: str | None = None  # the fault mix's seed (None: no mix)

    @property
    def name(self) -> str:
        return qualified_name(self.plugin, self.contest.scenario)

    @property
    def documents(self) -> Documents:
        """Every stored document at the end, whichever partition holds it."""
        return {path: doc for docs in self.final_documents.values() for path, doc in docs.items()}

    def record(self, name: str) -> RacerRecord:
        for record in (*self.racers, *self.followers):
            if record.racer.name == name:
                return record
        raise KeyError(name)

    def labels(self) -> Counter[str]:
        """Final answer label -> number of racers (followers not counted)."""
        return Counter(record.label for record in self.racers)


def answer_label(outcome: Outcome) -> str:
    """`lease_acquired@fence`, another output's outcome, a definite error code, or the indefinite reason."""
    if not outcome.definite:
        return outcome.reason
    observed = outcome.observed
    if isinstance(observed, str):
        return observed
    label = str(observed.get("outcome"))
    if "fenceEpoch" in observed:
        label += f"@{observed['fenceEpoch']}"
    return label


# --- racing -------------------------------------------------------------------------------------------------


class CallCounts:
    """The attempt log handed to each call: what the implementation counts (read-write attempts, aborted ones,
    lock-free looks), for evidence. Any object with these attributes will do."""

    __slots__ = ("attempts", "aborts", "looks")

    def __init__(self) -> None:
        self.attempts = 0
        self.aborts = 0
        self.looks = 0


def release_together(
    tasks: Sequence[Callable[[], Any]],
    names: Sequence[str],
    *,
    barrier_timeout: float,
    join_timeout: float,
    label: str,
) -> tuple[list[Any], tuple[int, ...]]:
    """Run each task on its own thread, all released at once by one barrier; wait up to `join_timeout` in
    all. Returns each task's result (None while still running) and the indices of the threads still
    running. A broken barrier or a task that raised is a harness failure (RuntimeError), never a verdict."""
    results: list[Any] = [None] * len(tasks)
    barrier = threading.Barrier(len(tasks))
    errors: dict[str, str] = {}

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=barrier_timeout)
        except threading.BrokenBarrierError:
            errors[names[index]] = "the start barrier broke"
            return
        try:
            results[index] = tasks[index]()
        except BaseException as error:  # a harness failure must not pass silently
            errors[names[index]] = f"{type(error).__name__}: {error}"

    threads = [threading.Thread(target=worker, args=(i,), name=name, daemon=True) for i, name in enumerate(names)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + join_timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    if errors:
        raise RuntimeError(f"{label} harness failure: {sorted(errors.items())[:3]}")
    return results, tuple(i for i, thread in enumerate(threads) if thread.is_alive())


def _call_once(
    plugin: SystemPlugin, implementation: Any, db: Any, recorder: Recorder, name: str, op: Any, log: Any,
    lane: Lane | None = None,
) -> CallRecord:
    clock = OnceClock(plugin.clock_of(op))
    classify = classifier(plugin, implementation)
    unexpected, unexpected_kind = None, None

    def invoke(client: Any) -> Any:
        return plugin.invoke(implementation, client, op, clock, log)

    run, faults = (lambda: invoke(db)), None
    if lane is not None:
        run, faults = WireLanes.call(lane, invoke)
    try:
        value = recorder.call(name, op, run, wire_faults=faults)
        outcome: Outcome = Definite(observed_of(value))
    except Exception as error:  # recorded already; classified the same way here to decide on a retry
        outcome = classify(error)
        if plugin.error_code(implementation, error) is None:
            unexpected = f"{type(error).__name__}: {error}"[:500]
            unexpected_kind = kind_of_exception(error)
    return CallRecord(
        -1,  # the history's id is known once every call is in (`_with_history`)
        outcome,
        getattr(log, "attempts", 0),
        getattr(log, "aborts", 0),
        getattr(log, "looks", 0),
        clock.reads,
        unexpected,
        op,
        unexpected_kind,
    )


def _race_one(
    plugin: SystemPlugin,
    implementation: Any,
    db: Any,
    recorder: Recorder,
    index: int,
    racer: Racer,
    max_retries: int,
    new_log: Callable[[int, int], Any],
    failing_db: Any = None,
    lanes: WireLanes | None = None,
    main_start: threading.Barrier | None = None,
) -> RacerRecord:
    calls: list[CallRecord] = []
    held = main_start is None
    for attempt in range(1 + max_retries):
        op = racer.op_of(attempt)
        if not held and (attempt > 0 or racer.first_op is None):  # the main call, not a rejected first one
            held = _hold(main_start)
        target, lane = db, None
        if plugin.commit_fails(op):
            if failing_db is not None:  # a caller's own commit-failing client (the client-side path)
                target = failing_db
            elif lanes is not None:
                lane = lanes.rejecting(racer.name)
            else:
                raise RuntimeError(f"{racer.name}: a commit-failing call needs wire lanes (or a failing client)")
        elif lanes is not None and lanes.mix is not None:
            lane = lanes.mixed(racer.name)
        call = _call_once(plugin, implementation, target, recorder, racer.name, op, new_log(index, attempt), lane)
        calls.append(call)
        if call.outcome.definite:
            break
    if not held:  # a first attempt answered definitely: the others still wait for this racer at the barrier
        _hold(main_start)
    return RacerRecord(racer, tuple(calls))


def _hold(main_start: threading.Barrier) -> bool:
    """Wait at the main calls' barrier (`race_callers`). A barrier broken by a racer whose first attempt
    never ended releases the rest: that racer is reported as hung, the others' calls still count."""
    try:
        main_start.wait(timeout=MAIN_START_TIMEOUT_SECONDS)
    except threading.BrokenBarrierError:
        pass
    return True


def _with_history(record: RacerRecord, history: History) -> RacerRecord:
    """A racer's calls are sequential, so its n-th call in the history (by id) is its n-th call; the outcome is
    taken from the history, which is what the checker judged."""
    recorded = sorted((c for c in history.calls if c.caller == record.racer.name), key=lambda c: c.id)
    if len(recorded) != len(record.calls):
        raise RuntimeError(f"{record.racer.name}: {len(record.calls)} calls made, {len(recorded)} recorded")
    pairs = zip(record.calls, recorded, strict=True)
    return RacerRecord(record.racer, tuple(attrs.evolve(mine, call_id=c.id, outcome=c.outcome) for mine, c in pairs))


def _never_returned(racer: Racer, history: History) -> RacerRecord:
    """A racer whose thread was still running when the harness gave up: its calls as the recorder saw them."""
    return RacerRecord(racer, tuple(CallRecord(c.id, c.outcome, op=c.op) for c in history.calls
                                    if c.caller == racer.name))


def fresh_log(_index: int, _attempt: int) -> CallCounts:
    """The default `new_log(racer index, whole-call attempt)`: every call gets its own attempt counts."""
    return CallCounts()


def needs_failing_client(plugin: SystemPlugin, racers: Iterable[Racer]) -> bool:
    return any(plugin.commit_fails(racer.op_of(0)) for racer in racers)


def needs_lanes(plugin: SystemPlugin, racers: Iterable[Racer], wire_mix: FaultMix | None) -> bool:
    """A contest needs wire lanes for a fault mix, or for a commit-failing first attempt."""
    return wire_mix is not None or needs_failing_client(plugin, racers)


def race_callers(
    plugin: SystemPlugin,
    implementation: Any,
    db: Any,
    racers: Sequence[Racer],
    *,
    recorder: Recorder | None = None,
    max_retries: int = MAX_WHOLE_CALL_RETRIES,
    new_log: Callable[[int, int], Any] = fresh_log,
    barrier_timeout: float = 120.0,
    join_timeout: float = 600.0,
    label: str = "contest",
    failing_db: Any = None,
    lanes: WireLanes | None = None,
) -> tuple[tuple[RacerRecord, ...], History, tuple[str, ...]]:
    """Release every racer at once and wait for them (step 2 of `run_contest`, nothing else).

    `new_log(racer index, attempt number)` gives the attempt log handed to that call (default: a fresh
    `CallCounts`; a test may hand its own to watch it live). Returns the racers' records (call ids and
    outcomes as in the history), the history without final documents, and the names of racers still running
    at `join_timeout` (their unfinished calls are in the history as calls that never returned). `lanes`: the
    wire lanes of commit-failing first attempts and of a fault mix (default: lanes of `db`'s emulator made
    when a racer needs one, stopped before this returns); `failing_db`: a client for commit-failing first
    attempts instead (the client-side path, `fencecheck.emulator.firestore_io.CommitFailureClient`)."""
    if lanes is None and failing_db is None and needs_failing_client(plugin, racers):
        with WireLanes(db) as own:
            return race_callers(plugin, implementation, db, racers, recorder=recorder, max_retries=max_retries,
                                new_log=new_log, barrier_timeout=barrier_timeout, join_timeout=join_timeout,
                                label=label, lanes=own)
    if recorder is None:
        recorder = Recorder(classify=classifier(plugin, implementation), system=plugin.name)
    # A fair start: a rejected first attempt returns at once, and re-entering then would land in the middle
    # of the others' lock waits (a convoy no caller policy causes). Every main call waits until every first
    # attempt has ended, so the main calls start together, as the first ones did.
    main_start = threading.Barrier(len(racers)) if any(r.first_op is not None for r in racers) else None
    tasks = [
        functools.partial(_race_one, plugin, implementation, db, recorder, i, racer, max_retries, new_log,
                          failing_db, lanes, main_start)
        for i, racer in enumerate(racers)
    ]
    results, hung_indices = release_together(
        tasks,
        [f"{label}-{racer.name}" for racer in racers],
        barrier_timeout=barrier_timeout,
        join_timeout=join_timeout,
        label=label,
    )
    history = recorder.history()
    records = tuple(
        _never_returned(racer, history) if record is None else _with_history(record, history)
        for racer, record in zip(racers, results, strict=True)
    )
    return records, history, tuple(racers[i].name for i in hung_indices)


# --- a whole contest ----------------------------------------------------------------------------------------


def run_setup(db: Any, contest: Contest, *, plugin: SystemPlugin, implementation: Any) -> Any:
    """Apply the setup to the model and the implementation in lockstep (a disagreement raises
    `LockstepMismatch`); then read back the whole project. Returns the model state after the setup."""
    return _setup(db, contest, plugin=plugin, implementation=implementation)[0]


def _setup(db: Any, contest: Contest, *, plugin: SystemPlugin, implementation: Any) -> tuple[Any, dict[str, Any]]:
    """`run_setup`, and the whole project as it read it back (every document with its update time)."""
    lockstep = Lockstep(db, plugin=plugin, system=implementation, epoch=contest.epoch, full_check_every=None)
    for op in contest.setup:
        lockstep.run(op)
    lockstep.check_project()  # an empty setup included: the project must then be empty
    return lockstep.state, lockstep.stored_project()


def split_documents(
    plugin: SystemPlugin, stored: Mapping[str, Any], partitions: Iterable[str]
) -> tuple[dict[str, Documents], list[str]]:
    """Stored documents ({path: data}) by partition, every partition in `partitions` present ({} when empty);
    and the paths that belong to no partition (a stray write)."""
    found: dict[str, Documents] = {key: {} for key in partitions}
    strays = []
    for path, data in sorted(stored.items()):
        key = plugin.partition_of_path(path)
        if key is None:
            strays.append(path)
        else:
            found.setdefault(key, {})[path] = data
    return found, strays


def call_problems(records: Iterable[RacerRecord], plugin: SystemPlugin) -> list[Problem]:
    """What no system may do whatever the order: raise anything but its own error (of the exception's kind: a
    crash, or an exec: implementation's hang or broken protocol), read a call's clock other than once (never,
    for a call handed none: a contract finding)."""
    problems = []
    for record in records:
        wanted = 0 if plugin.clock_of(record.racer.op) is None else 1
        for number, call in enumerate(record.calls, 1):
            where = f"{record.racer.name} (call {number})"
            if call.unexpected is not None:
                problems.append(Problem(call.unexpected_kind or ProblemKind.CRASH,
                                        f"{where}: raised {call.unexpected} (only the system's error may escape)"))
            if call.clock_reads is not None and call.clock_reads != wanted:
                problems.append(contract(f"{where}: read the clock {call.clock_reads} times ({wanted} required)"))
    return problems


def judge(
    plugin: SystemPlugin,
    history: History,
    initial_state: Any,
    final_documents: Mapping[str, Documents],
    *,
    budget: int = DEFAULT_BUDGET,
) -> tuple[Verdict, float]:
    """The checker's verdict on the history from `initial_state` against the stored documents; and its seconds."""
    started = time.perf_counter()
    verdict = check(
        history, plugin=plugin, initial_state=initial_state, final_documents=final_documents, budget=budget
    )
    return verdict, time.perf_counter() - started


def run_contest(
    db: Any,
    contest: Contest,
    *,
    plugin: SystemPlugin,
    implementation: Any = None,
    max_retries: int = MAX_WHOLE_CALL_RETRIES,
    budget: int = DEFAULT_BUDGET,
    new_log: Callable[[int, int], Any] = fresh_log,
    join_timeout: float = 600.0,
    wire_mix: FaultMix | None = None,
) -> ContestRun:
    """Set up, race, read back and judge one contest on `db` (see the module doc). `implementation`: the
    plug-in's reference when None; `wire_mix`: the racers' and followers' calls go through their wire lanes
    under this fault mix (the setup and the read-backs never do). The lanes live as long as the run."""
    implementation = plugin.reference if implementation is None else implementation
    started = time.perf_counter()
    # The setup is the reference's: the race judges the implementation, and an implementation that answers
    # unavailable (which the contract allows at any time) must not be accused by a setup step it was never
    # raced on; the lockstep machines judge its sequential answers.
    initial, before = _setup(db, contest, plugin=plugin, implementation=plugin.reference)
    if not needs_lanes(plugin, contest.callers, wire_mix):
        return _run_contest(db, contest, plugin, implementation, initial, before, started, max_retries, budget,
                            new_log, join_timeout, None)
    with WireLanes(db, mix=wire_mix) as lanes:
        return _run_contest(db, contest, plugin, implementation, initial, before, started, max_retries, budget,
                            new_log, join_timeout, lanes)


def _run_contest(db: Any, contest: Contest, plugin: SystemPlugin, implementation: Any, initial: Any,
                 before: Mapping[str, Any], started: float, max_retries: int, budget: int,
                 new_log: Callable[[int, int], Any], join_timeout: float, lanes: WireLanes | None) -> ContestRun:
    recorder = Recorder(classify=classifier(plugin, implementation), system=plugin.name)
    records, race_history, hung = race_callers(
        plugin,
        implementation,
        db,
        contest.racers,
        recorder=recorder,
        max_retries=max_retries,
        new_log=new_log,
        join_timeout=join_timeout,
        label=contest.scenario,
        lanes=lanes,
    )
    first = len(contest.racers)  # followers' logs are numbered after the racers'
    followers = [
        _race_one(plugin, implementation, db, recorder, first + i, follower, max_retries, new_log, None, lanes)
        for i, follower in enumerate(contest.followers)
    ]
    partitions = {*plugin.partitions_of_state(initial), *(plugin.partition_of(r.op) for r in contest.callers)}
    after = read_project(db)
    stored = {path: item.data for path, item in after.items()}
    final_documents, strays = split_documents(plugin, stored, partitions)
    history = recorder.history(final_documents)
    followers = [_with_history(record, history) for record in followers]
    verdict, checker_seconds = judge(plugin, history, initial, final_documents, budget=budget)
    problems = [hang(f"{name}: still running when the harness gave up") for name in hung]
    problems += call_problems((*records, *followers), plugin)
    problems += [contract(f"{path}: stored outside every {plugin.partition_noun}") for path in strays]
    problems += as_problems(plugin.contest_problems(initial, before, after, contest))
    expectations = plugin.contest_expectations(initial, before, after, contest)
    if lanes is not None:  # the harness's own fault injection did not hold: no evidence either way
        problems += [harness(text) for text in lanes.rejection_problems()]
    return ContestRun(
        contest,
        plugin,
        implementation,
        initial,
        records,
        history,
        final_documents,
        verdict,
        checker_seconds,
        race_seconds=_race_seconds(race_history.calls),
        total_seconds=time.perf_counter() - started,
        problems=tuple(problems),
        followers=tuple(followers),
        expectation_problems=tuple(expectations),
        wire_faults=dict(sorted(lanes.kinds().items())) if lanes is not None else {},
        wire_seed=lanes.mix.seed if lanes is not None and lanes.mix is not None else None,
    )


def _race_seconds(calls: Sequence[Call]) -> float:
    """From the first invocation to the last completion among `calls` (the race's, retries included)."""
    finished = [call.completed_at for call in calls if call.completed_at is not None]
    if not finished:
        return 0.0
    return (max(finished) - min(call.invoked_at for call in calls)) / 1e9


__all__ = [
    "MAX_WHOLE_CALL_RETRIES",
    "CallCounts",
    "CallRecord",
    "Contest",
    "ContestRun",
    "Ids",
    "Racer",
    "RacerRecord",
    "answer_label",
    "call_problems",
    "fresh_log",
    "judge",
    "qualified_name",
    "race_callers",
    "release_together",
    "run_contest",
    "run_setup",
    "split_documents",
]
