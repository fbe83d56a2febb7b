"""Contest runner: race named callers of any system (a `SystemPlugin`) against one implementation on Firestore,
record the history and judge it with the linearizability checker.

A `Contest` is data: sequential `setup` operations, `racers`, each one operation that carries its own clock
reading, and optional `followers`, called one at a time after the race (what a caller does next, e.g. light
again once the race is over: a race alone may never produce that order). `run_contest` executes it on a
project nobody else writes to:

1. setup: every operation goes through `fencecheck.lockstep.Lockstep` (model and implementation in lockstep,
   answers and stored documents compared), then the whole project is read back once more. The lockstep's
   model state is the checker's initial state, so a contest never starts from an unverified state.
2. race: every racer is released at once (`fencecheck.race.release_together`); each makes its call through
   `plugin.invoke` with a clock that reads the op's own clock reading, and a fresh attempt log. A racer whose
   answer is indefinite (the system's unavailable code, any exception that is not the system's error, no
   answer) retries the WHOLE call with the same op, at most `max_retries` more times, as a real caller with
   a lost answer would. Every call is recorded by a `fencecheck.history.Recorder`.
   Then each follower makes its call (retried the same way), recorded in the same history.
3. the final stored documents: the whole project, split into the plug-in's partitions.
4. judge: `fencecheck.linearizability.check` from the setup's model state against those documents.

The runner knows no system: structural invariants and a scenario's promise are the caller's (they arrive at
`fencecheck.contest_results.contest_result` as lists of problems). `race_callers` is step 2 alone, for tests
that want raw answers.

`simulate_contest` runs a contest through the model alone (no Firestore): histories for unit tests. A run's
result record, its files and the whole contest end to end (`execute_contest`) are in
`fencecheck.contest_results`.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from fencecheck.firestore_io import read_project
from fencecheck.history import (
    Call,
    Definite,
    History,
    Indefinite,
    Outcome,
    Planned,
    Recorder,
    classifier,
    observed_of,
    simulate,
)
from fencecheck.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.lockstep import Lockstep, OnceClock
from fencecheck.plugin import SystemPlugin
from fencecheck.race import answer_label, release_together
from reference import AttemptLog

MAX_WHOLE_CALL_RETRIES = 2

Documents = dict[str, dict[str, Any]]


# --- what a contest is --------------------------------------------------------------------------------------


@attrs.frozen
class Racer:
    """One concurrent caller: a name unique in its contest and the one operation it calls (clock included)."""

    name: str
    op: Any


@attrs.frozen
class Contest:
    scenario: str
    setup: tuple[Any, ...] = attrs.field(converter=tuple)
    racers: tuple[Racer, ...] = attrs.field(converter=tuple)
    followers: tuple[Racer, ...] = attrs.field(default=(), converter=tuple, kw_only=True)
    epoch: datetime | None = None  # times in descriptions are shown relative to it

    def __attrs_post_init__(self) -> None:
        if not self.racers:
            raise ValueError(f"{self.scenario}: a contest needs racers")
        names = [racer.name for racer in (*self.racers, *self.followers)]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.scenario}: racer and follower names must be unique")

    @property
    def width(self) -> int:
        return len(self.racers)


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
    """Everything one run produced. `problems` are the harness's findings (hung racers, foreign exceptions, clock
    reads, documents outside every partition); the checker's findings are in `verdict`."""

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
    problems: tuple[str, ...] = ()
    followers: tuple[RacerRecord, ...] = ()

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


# --- racing -------------------------------------------------------------------------------------------------


def _call_once(
    plugin: SystemPlugin, implementation: Any, db: Any, recorder: Recorder, name: str, op: Any, log: Any
) -> CallRecord:
    clock = OnceClock(plugin.clock_of(op))
    classify = classifier(plugin, implementation)
    unexpected = None
    try:
        value = recorder.call(name, op, lambda: plugin.invoke(implementation, db, op, clock, log))
        outcome: Outcome = Definite(observed_of(value))
    except Exception as error:  # recorded already; classified the same way here to decide on a retry
        outcome = classify(error)
        if plugin.error_code(implementation, error) is None:
            unexpected = f"{type(error).__name__}: {error}"[:500]
    return CallRecord(
        -1,  # the history's id is known once every call is in (`_with_history`)
        outcome,
        getattr(log, "attempts", 0),
        getattr(log, "aborts", 0),
        getattr(log, "looks", 0),
        clock.reads,
        unexpected,
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
) -> RacerRecord:
    calls: list[CallRecord] = []
    for attempt in range(1 + max_retries):
        call = _call_once(plugin, implementation, db, recorder, racer.name, racer.op, new_log(index, attempt))
        calls.append(call)
        if call.outcome.definite:
            break
    return RacerRecord(racer, tuple(calls))


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
    return RacerRecord(racer, tuple(CallRecord(c.id, c.outcome) for c in history.calls if c.caller == racer.name))


def fresh_log(_index: int, _attempt: int) -> AttemptLog:
    """The default `new_log(racer index, whole-call attempt)`: every call gets its own attempt counts."""
    return AttemptLog()


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
) -> tuple[tuple[RacerRecord, ...], History, tuple[str, ...]]:
    """Release every racer at once and wait for them (step 2 of `run_contest`, nothing else).

    `new_log(racer index, attempt number)` gives the attempt log handed to that call (default: a fresh
    `AttemptLog`; a test may hand its own to watch it live). Returns the racers' records (call ids and
    outcomes as in the history), the history without final documents, and the names of racers still running
    at `join_timeout` (their unfinished calls are in the history as calls that never returned)."""
    if recorder is None:
        recorder = Recorder(classify=classifier(plugin, implementation), system=plugin.name)
    tasks = [
        functools.partial(_race_one, plugin, implementation, db, recorder, i, racer, max_retries, new_log)
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
    lockstep = Lockstep(db, plugin=plugin, system=implementation, epoch=contest.epoch, full_check_every=None)
    for op in contest.setup:
        lockstep.run(op)
    lockstep.check_project()  # an empty setup included: the project must then be empty
    return lockstep.state


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


def call_problems(records: Iterable[RacerRecord], plugin: SystemPlugin) -> list[str]:
    """What no system may do whatever the order: raise anything but its own error, read a call's clock other
    than once (never, for a call handed none)."""
    problems = []
    for record in records:
        wanted = 0 if plugin.clock_of(record.racer.op) is None else 1
        for number, call in enumerate(record.calls, 1):
            where = f"{record.racer.name} (call {number})"
            if call.unexpected is not None:
                problems.append(f"{where}: raised {call.unexpected} (only the system's error may escape)")
            if call.clock_reads is not None and call.clock_reads != wanted:
                problems.append(f"{where}: read the clock {call.clock_reads} times ({wanted} required)")
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
) -> ContestRun:
    """Set up, race, read back and judge one contest on `db` (see the module doc). `implementation`: the
    plug-in's reference when None."""
    implementation = plugin.reference if implementation is None else implementation
    started = time.perf_counter()
    initial = run_setup(db, contest, plugin=plugin, implementation=implementation)
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
    )
    first = len(contest.racers)  # followers' logs are numbered after the racers'
    followers = [
        _race_one(plugin, implementation, db, recorder, first + i, follower, max_retries, new_log)
        for i, follower in enumerate(contest.followers)
    ]
    everyone = (*contest.racers, *contest.followers)
    partitions = {*plugin.partitions_of_state(initial), *(plugin.partition_of(r.op) for r in everyone)}
    stored = {path: item.data for path, item in read_project(db).items()}
    final_documents, strays = split_documents(plugin, stored, partitions)
    history = recorder.history(final_documents)
    followers = [_with_history(record, history) for record in followers]
    verdict, checker_seconds = judge(plugin, history, initial, final_documents, budget=budget)
    problems = [f"{name}: still running when the harness gave up" for name in hung]
    problems += call_problems((*records, *followers), plugin)
    problems += [f"{path}: stored outside every {plugin.partition_noun}" for path in strays]
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
    )


def _race_seconds(calls: Sequence[Call]) -> float:
    """From the first invocation to the last completion among `calls` (the race's, retries included)."""
    finished = [call.completed_at for call in calls if call.completed_at is not None]
    if not finished:
        return 0.0
    return (max(finished) - min(call.invoked_at for call in calls)) / 1e9


# --- model-only runs (unit tests) ---------------------------------------------------------------------------


def setup_state(plugin: SystemPlugin, setup: Iterable[Any]) -> Any:
    """The model state after the setup (what `run_setup` verifies the implementation reaches)."""
    state = plugin.initial_state()
    for op in setup:
        state, _result = plugin.step(state, op)
    return state


def simulate_contest(
    contest: Contest,
    *,
    plugin: SystemPlugin,
    effect_order: Sequence[int] | None = None,
    invocation_order: Sequence[int] | None = None,
    budget: int = DEFAULT_BUDGET,
) -> ContestRun:
    """The contest through the model alone: the racers take effect one at a time in `effect_order` (indexes into
    `contest.racers`; default as listed) and are invoked in `invocation_order` (default: the effect order).
    Every racer is invoked before any completes, as behind a real start barrier, which leaves the checker the
    most orders to consider; `invocation_order` decides which it tries first. The followers come after, one
    at a time. Answers are the model's (its unavailable code indefinite); there are no whole-call retries.
    The run is judged like a real one."""
    n = contest.width
    effect = list(range(n)) if effect_order is None else list(effect_order)
    invoked = effect if invocation_order is None else list(invocation_order)
    for order in (effect, invoked):
        if sorted(order) != list(range(n)):
            raise ValueError("an order must be a permutation of the racers")
    initial = setup_state(plugin, contest.setup)
    effect_place = {racer: place for place, racer in enumerate(effect)}
    invoke_place = {racer: place for place, racer in enumerate(invoked)}
    planned = [
        Planned(racer.name, racer.op, invoke_place[i], 2 * n + effect_place[i], n + effect_place[i])
        for i, racer in enumerate(contest.racers)
    ]
    after = 3 * n  # every racer has completed
    planned += [
        Planned(follower.name, follower.op, after + 2 * i, after + 2 * i + 1, after + 2 * i)
        for i, follower in enumerate(contest.followers)
    ]
    history, _state = simulate(planned, plugin=plugin, initial_state=initial)
    final_documents = dict(history.final_documents or {})
    verdict, checker_seconds = judge(plugin, history, initial, final_documents, budget=budget)
    records = tuple(
        RacerRecord(racer, (CallRecord(i, history.by_id(i).outcome, 1, 0, 0, 1),))
        for i, racer in enumerate((*contest.racers, *contest.followers))
    )
    return ContestRun(contest, plugin, plugin.reference, initial, records[:n], history, final_documents, verdict,
                      checker_seconds, followers=records[n:])


__all__ = [
    "MAX_WHOLE_CALL_RETRIES",
    "CallRecord",
    "Contest",
    "ContestRun",
    "Racer",
    "RacerRecord",
    "call_problems",
    "fresh_log",
    "judge",
    "qualified_name",
    "race_callers",
    "run_contest",
    "run_setup",
    "setup_state",
    "simulate_contest",
    "split_documents",
]
