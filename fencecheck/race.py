"""Race harness: run one concurrent scenario against a journal on Firestore, record it, and judge it.

A `RacePlan` is data: one command key, sequential `setup` operations that put it in the needed state, N
`callers` (one model operation each, carrying the clock reading that caller uses) released together by a
`threading.Barrier`, and optional sequential `after` callers. `run_plan` executes it:

1. setup: every op goes through the model's `step` and (journal calls) through the reference, whose answer
   must be the model's; `InjectFault` writes the model's documents for the key. The stored documents must
   then be the model's exactly (`SetupMismatch` otherwise). The model state is the checker's initial state.
2. race: each caller makes its call; a caller whose answer is indefinite (`journal_unavailable`, any
   non-journal exception, no answer) retries the WHOLE call with the same op (same ids, same clock reading)
   up to `max_retries` more times. A caller marked `commit_failure_first` makes its first attempt on a
   `CommitFailureClient` (the emulator rejects that commit atomically) as the op with `commit_fails=True`,
   and its retries on the plain client. Every attempt is its own `Call`, recorded by a `Recorder`.
3. after: the `after` callers run one at a time, recorded (and retried) the same way.
4. read back every stored document of the key (root, lifecycle, all audits, with update times) and every
   document nested under the root; then the whole project, so that a write outside the key (another key,
   a top-level document) is reported too (`project_problems`).

`judge` then checks the full history (retries included) with the linearizability checker from the setup's
model state against the stored documents, and `structural_problems` checks what must hold whatever the
order: one lifecycle document, audits contiguous 1..R with R the lifecycle revision and chained, lifecycle
and its audit partner written by one commit, the expected number of terminal events, nothing that existed
before the race rewritten unless its content changed (root and revision-1 audit never), nothing deleted.
`simulate_plan` runs a plan through the model alone (no Firestore), for unit tests of scenarios.

Why this module is harness (fencecheck) and not suite (race_tests): it knows no scenario; the pytest suite,
the benchmark script and any catalogue of known-bad implementations (`system=`) all drive it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import secrets
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from fencecheck.definite import contention_problem, contract_unavailable
from fencecheck.firestore_io import CommitFailureClient, Stored, key_of, read_key, read_project, typed, write_key
from fencecheck.history import (
    Call,
    Definite,
    History,
    Indefinite,
    Outcome,
    Recorder,
    classify_exception,
    observed_of,
)
from fencecheck.history_codec import command_from_json, command_to_json, op_from_json, op_to_json
from fencecheck.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.lockstep import REFERENCE, OnceClock, ReferenceAPI
from fencecheck.plugin import contract_error_code, exact_answer_matches
from model.journal import (
    Acquire,
    CommandRef,
    Complete,
    Fail,
    FaultKind,
    InjectFault,
    JournalState,
    Operation,
    Register,
    describe_op,
    documents_for,
    step,
)
from model.journal.constants import ERROR_CODES
from reference import AttemptLog
from reference.journal.errors import CommandJournalError
from reference.journal.identity import audit_path, lifecycle_path, root_path

JournalOp = Register | Acquire | Complete | Fail
MAX_WHOLE_CALL_RETRIES = 2
RESULT_FORMAT = "fencecheck.race-result/1"
COUNTEREXAMPLE_FORMAT = "fencecheck.race-counterexample/1"
TERMINAL_EVENTS = ("command_succeeded", "command_failed_final")
_EVENT_STATES = {
    "command_registered": (None, "registered"),
    "command_lease_acquired": ("registered", "leased"),
    "command_lease_taken_over": ("leased", "leased"),
    "command_succeeded": ("leased", "succeeded"),
    "command_failed_final": ("leased", "failed_final"),
}


# --- ids -----------------------------------------------------------------------------------------------


class Ids:
    """Fresh canonical UUID v4 strings for command and lease ids; deterministic for a given seed."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._rng = random.Random(seed)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))


# --- callers and plans ---------------------------------------------------------------------------------


@attrs.frozen
class Caller:
    """One concurrent caller: its name (unique in the plan) and the call it makes (with its clock reading)."""

    name: str
    op: JournalOp
    commit_failure_first: bool = False  # first attempt's commit is rejected by the emulator; retries are plain

    def attempt_op(self, attempt: int) -> JournalOp:
        """The op recorded for attempt 0, 1, ...: the commit-failing first attempt carries commit_fails=True."""
        if attempt == 0 and self.commit_failure_first:
            return attrs.evolve(self.op, commit_fails=True)
        return self.op


@attrs.frozen
class RacePlan:
    scenario: str
    command: CommandRef  # every op of the plan has this command's key hash
    setup: tuple[Operation, ...]
    callers: tuple[Caller, ...]
    after: tuple[Caller, ...] = ()
    terminal_events: int = 0  # terminal audit events stored at the end (the setup's included)
    epoch: datetime | None = None  # times in descriptions are shown relative to it

    def __attrs_post_init__(self) -> None:
        key = self.command.key_hash
        for op in self.setup:
            if op.command.key_hash != key:
                raise ValueError(f"{self.scenario}: setup op on another command key")
        names = [c.name for c in (*self.callers, *self.after)]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.scenario}: caller names must be unique")
        for caller in (*self.callers, *self.after):
            if caller.op.command.key_hash != key:
                raise ValueError(f"{self.scenario}: caller {caller.name} calls another command key")
            if caller.op.commit_fails:
                raise ValueError(f"{self.scenario}: use commit_failure_first, not an op with commit_fails")
        if not self.callers:
            raise ValueError(f"{self.scenario}: a race needs callers")

    @property
    def key_hash(self) -> str:
        return self.command.key_hash

    @property
    def width(self) -> int:
        return len(self.callers)


class SetupMismatch(AssertionError):
    """The reference's answer to a setup call, or the stored documents after the setup, are not the model's."""


# --- records of a run ----------------------------------------------------------------------------------


@attrs.frozen
class Attempt:
    """One whole call as a caller made it."""

    call_id: int
    op: JournalOp
    outcome: Outcome
    attempts: int  # transaction attempts (AttemptLog)
    aborts: int
    clock_reads: int
    unexpected: str | None = None  # an exception that is not the journal's error type


@attrs.frozen
class CallerRecord:
    caller: Caller
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


@attrs.frozen(eq=False)
class RaceRun:
    """Everything a run produced. `stored_*` (update times) are None for a model-only simulation."""

    plan: RacePlan
    initial_state: JournalState
    callers: tuple[CallerRecord, ...]
    after: tuple[CallerRecord, ...]
    history: History
    final_documents: dict[str, dict[str, Any]]
    stored_before: dict[str, Stored] | None = None
    stored_after: dict[str, Stored] | None = None
    nested_paths: tuple[str, ...] | None = None  # every document under the root (lifecycle/current only)
    race_seconds: float = 0.0  # first invocation to last completion of the race calls (retries included)
    total_seconds: float = 0.0
    commit_failures: tuple[tuple[tuple[str, ...], str | None], ...] = ()  # (paths, error type name or None)
    hung: tuple[str, ...] = ()  # callers whose thread had not returned when the harness gave up on it
    project: dict[str, Stored] | None = None  # the whole project at the end (None: a model-only simulation)

    def by_name(self, name: str) -> CallerRecord:
        for record in (*self.callers, *self.after):
            if record.caller.name == name:
                return record
        raise KeyError(name)


# --- calling a journal implementation --------------------------------------------------------------


def invoke(system: ReferenceAPI, db: Any, op: JournalOp, clock: Callable[[], datetime], log: Any = None) -> Any:
    """Make the journal call `op` stands for on `db` (`ReferenceAPI.call`)."""
    return system.call(db, op, clock, log)


def _observed(system: ReferenceAPI, db: Any, op: JournalOp) -> dict[str, Any] | str:
    try:
        return observed_of(invoke(system, db, op, OnceClock(op.now)))
    except Exception as error:
        code = _contract_code(system, error)
        if code is None:
            raise
        return code


def _contract_code(system: ReferenceAPI, error: BaseException) -> str | None:
    """The contract's error code `error` carries: the system's declared error class, or any exception whose
    `.code` is a contract code (an implementation may raise an error class of its own)."""
    if isinstance(error, system.error_type):
        return error.code
    return contract_error_code(error, ERROR_CODES)


def _invoke_as_reference(system: ReferenceAPI, db: Any, op: JournalOp, clock: Any, log: Any) -> Any:
    """`invoke`, with the system's own journal error re-raised as the reference's. A known-bad copy of the
    reference has its own `CommandJournalError` class, which the recorder would take for a transport failure
    (indefinite): a wrong error code would then never be held against it."""
    try:
        return invoke(system, db, op, clock, log)
    except Exception as error:
        if isinstance(error, CommandJournalError):
            raise
        code = _contract_code(system, error)
        if code is None:
            raise
        raise CommandJournalError(code) from None


def _call_once(system: ReferenceAPI, recorder: Recorder, db: Any, caller: Caller, op: JournalOp) -> Attempt:
    log = AttemptLog()
    clock = OnceClock(op.now)
    unexpected = None
    try:
        value = recorder.call(caller.name, op, lambda: _invoke_as_reference(system, db, op, clock, log))
        outcome: Outcome = Definite(observed_of(value))
    except Exception as error:  # the recorder recorded it already; classified the same way here
        outcome = classify_exception(error)
        if not isinstance(error, CommandJournalError):
            unexpected = f"{type(error).__name__}: {error}"[:500]
    return Attempt(-1, op, outcome, log.attempts, log.aborts, clock.reads, unexpected)


def run_caller(
    recorder: Recorder,
    system: ReferenceAPI,
    db: Any,
    failing_db: Any,
    caller: Caller,
    max_retries: int,
) -> CallerRecord:
    attempts: list[Attempt] = []
    for index in range(1 + max_retries):
        op = caller.attempt_op(index)
        target = failing_db if op.commit_fails else db
        attempt = _call_once(system, recorder, target, caller, op)
        attempts.append(attempt)
        if attempt.outcome.definite:
            break
    return CallerRecord(caller, tuple(attempts))


# --- running a plan ------------------------------------------------------------------------------------


def _typed_docs(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {path: typed(dict(doc)) for path, doc in docs.items()}


def run_setup(db: Any, plan: RacePlan, system: ReferenceAPI = REFERENCE) -> JournalState:
    """Apply the setup sequentially to the model and the journal; returns the model state after it."""
    state = JournalState.empty()
    h = plan.key_hash
    for position, op in enumerate(plan.setup, 1):
        new_state, result = step(state, op)
        if isinstance(op, InjectFault):
            if not result.wrote:
                raise SetupMismatch(f"{plan.scenario}: setup fault {op.kind.value} does not apply")
            write_key(db, h, documents_for(new_state, h))
        else:
            observed = _observed(system, db, op)
            if not exact_answer_matches(result, observed):
                expected = result.output if result.ok else result.code
                raise SetupMismatch(
                    f"{plan.scenario}: setup call {position} {describe_op(op, epoch=plan.epoch)}: "
                    f"the journal answered {observed!r}, the model {expected!r} ({result.transition})"
                )
        state = new_state
    stored = {path: item.data for path, item in read_key(db, h).items()}
    if _typed_docs(stored) != _typed_docs(documents_for(state, h)):
        raise SetupMismatch(
            f"{plan.scenario}: stored documents after the setup are not the model's: "
            f"stored {sorted(p.replace(h, h[:8]) for p in stored)}, "
            f"model {sorted(p.replace(h, h[:8]) for p in documents_for(state, h))}"
        )
    return state


def nested_paths(db: Any, key_hash: str) -> tuple[str, ...]:
    root = db.document(root_path(key_hash))
    return tuple(sorted(snap.reference.path for coll in root.collections() for snap in coll.stream()))


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


def run_plan(
    db: Any,
    plan: RacePlan,
    *,
    system: ReferenceAPI = REFERENCE,
    max_retries: int = MAX_WHOLE_CALL_RETRIES,
    barrier_timeout: float = 120.0,
    join_timeout: float = 900.0,
) -> RaceRun:
    """Run a plan on `db` (a client for a project nobody else uses for this key)."""
    started = time.perf_counter()
    initial = run_setup(db, plan, system)
    h = plan.key_hash
    stored_before = read_key(db, h)
    failing = None
    if any(c.commit_failure_first for c in (*plan.callers, *plan.after)):
        failing = CommitFailureClient(db)

    recorder = Recorder()
    records, hung_indices = release_together(
        [functools.partial(run_caller, recorder, system, db, failing, c, max_retries) for c in plan.callers],
        [f"race-{c.name}" for c in plan.callers],
        barrier_timeout=barrier_timeout,
        join_timeout=join_timeout,
        label=f"{plan.scenario}: race",
    )
    hung = tuple(plan.callers[i].name for i in hung_indices)

    race_calls = recorder.calls()
    after_records = tuple(run_caller(recorder, system, db, failing, c, max_retries) for c in plan.after)

    stored_after = read_key(db, h)
    nested = nested_paths(db, h)
    project = read_project(db)
    final_documents = {path: item.data for path, item in stored_after.items()}
    history = recorder.history({h: final_documents})
    # Callers whose thread hung keep their calls as indefinite no-return calls in the history.
    callers = tuple(
        _with_call_ids(record, history)
        if record is not None
        else CallerRecord(plan.callers[i], _pending_attempts(history, plan.callers[i]))
        for i, record in enumerate(records)
    )
    after_records = tuple(_with_call_ids(record, history) for record in after_records)
    finished = [c.completed_at for c in race_calls if c.completed_at is not None]
    race_ns = (max(finished) - min(c.invoked_at for c in race_calls)) if finished else 0
    commit_failures = ()
    if failing is not None:
        commit_failures = tuple(
            (paths, None if error is None else error.__name__) for paths, error in list(failing.rejected)
        )
    return RaceRun(
        plan,
        initial,
        callers,
        after_records,
        history,
        final_documents,
        stored_before,
        stored_after,
        nested,
        race_ns / 1e9,
        time.perf_counter() - started,
        commit_failures,
        hung,
        project,
    )


def _with_call_ids(record: CallerRecord, history: History) -> CallerRecord:
    """A caller's calls are sequential, so its n-th call in the history (by id) is its n-th attempt."""
    ids = sorted(call.id for call in history.calls if call.caller == record.caller.name)
    if len(ids) != len(record.attempts):
        raise RuntimeError(f"{record.caller.name}: {len(record.attempts)} attempts but {len(ids)} recorded calls")
    return CallerRecord(
        record.caller, tuple(attrs.evolve(a, call_id=i) for a, i in zip(record.attempts, ids, strict=True))
    )


def _pending_attempts(history: History, caller: Caller) -> tuple[Attempt, ...]:
    return tuple(
        Attempt(call.id, call.op, call.outcome, 0, 0, 0, None) for call in history.calls if call.caller == caller.name
    )


# --- model-only simulation (unit tests of scenarios) -------------------------------------------------


def simulate_plan(plan: RacePlan, order: Sequence[int] | None = None, *, retry_at: int | None = None) -> RaceRun:
    """Run `plan` through the model alone, the race callers one at a time in `order` (indexes into
    `plan.callers`; default: as listed). A `commit_failure_first` caller's failing attempt takes effect at
    its place in the order and its retry `retry_at` places later (default: at once); an answer
    `journal_unavailable` is retried at once. Calls get sequential, non-overlapping times."""
    state = JournalState.empty()
    for op in plan.setup:
        state, _result = step(state, op)
    initial = state
    order = list(range(plan.width)) if order is None else list(order)
    if sorted(order) != list(range(plan.width)):
        raise ValueError("order must be a permutation of the callers")
    queue: list[tuple[int, int]] = [(i, 0) for i in order]  # (caller index, attempt number)
    attempts: dict[int, list[Attempt]] = {i: [] for i in range(plan.width)}
    calls: list[Call] = []
    clock = 0

    def make_call(caller: Caller, op: JournalOp) -> Attempt:
        nonlocal state, clock
        state, result = step(state, op)
        answer = result.output if result.ok else result.code
        outcome: Outcome = Indefinite("journal_unavailable") if answer == "journal_unavailable" else Definite(answer)
        call = Call(len(calls), caller.name, op, clock, clock + 1, outcome)
        calls.append(call)
        clock += 2
        return Attempt(call.id, op, outcome, 1, 0, 1)

    position = 0
    while position < len(queue):
        index, number = queue[position]
        caller = plan.callers[index]
        attempt = make_call(caller, caller.attempt_op(number))
        attempts[index].append(attempt)
        if not attempt.outcome.definite and number < MAX_WHOLE_CALL_RETRIES:
            delay = 0 if retry_at is None else retry_at
            queue.insert(min(len(queue), position + 1 + delay), (index, number + 1))
        position += 1
    after = []
    for caller in plan.after:
        tries: list[Attempt] = []
        for number in range(1 + MAX_WHOLE_CALL_RETRIES):
            tries.append(make_call(caller, caller.attempt_op(number)))
            if tries[-1].outcome.definite:
                break
        after.append(CallerRecord(caller, tuple(tries)))
    h = plan.key_hash
    final = documents_for(state, h)
    history = History(tuple(calls), {h: final})
    records = tuple(CallerRecord(plan.callers[i], tuple(attempts[i])) for i in range(plan.width))
    return RaceRun(plan, initial, records, tuple(after), history, final)


# --- judging --------------------------------------------------------------------------------------------


def judge(run: RaceRun, *, budget: int = DEFAULT_BUDGET) -> tuple[Verdict, float]:
    """The checker's verdict on the full history from the setup's model state; and its time in seconds."""
    started = time.perf_counter()
    verdict = check(
        run.history,
        initial_state=run.initial_state,
        final_documents={run.plan.key_hash: run.final_documents},
        budget=budget,
    )
    return verdict, time.perf_counter() - started


def _audit_revision(path: str, key_hash: str) -> int | None:
    prefix = f"auditEvents/commerce_command_{key_hash}_"
    if path.startswith(prefix) and path[len(prefix) :].isdigit():
        return int(path[len(prefix) :])
    return None


def structural_problems(
    key_hash: str,
    before: Mapping[str, Stored],
    after: Mapping[str, Stored],
    *,
    nested_paths: Iterable[str] = (),
    corrupt: bool = False,
    terminal_events: int | None = None,
) -> list[str]:
    """Invariants of the stored documents of one key that hold whatever order the race took (see module doc).

    `corrupt`: the setup left a record that is not valid; then nothing may change at all.
    """
    short = key_hash[:8]
    problems: list[str] = []
    root, lifecycle, first = root_path(key_hash), lifecycle_path(key_hash), audit_path(key_hash, 1)

    extra_nested = sorted(set(nested_paths) - {lifecycle})
    if extra_nested:
        problems.append(f"{short}: documents under the root besides lifecycle/current: {extra_nested}")

    # Nothing that existed before the race is deleted; unchanged content keeps its update time.
    for path, old in before.items():
        name = path.replace(key_hash, short)
        new = after.get(path)
        if new is None:
            problems.append(f"{name}: deleted by the race")
        elif typed(new.data) == typed(old.data):
            if new.update_time != old.update_time:
                problems.append(f"{name}: rewritten with the same content (update time moved)")
        elif path != lifecycle or corrupt:
            problems.append(f"{name}: content changed by the race (only the lifecycle may change)")
    if corrupt:
        for path in sorted(after.keys() - before.keys()):
            problems.append(f"{path.replace(key_hash, short)}: created although the stored record is not valid")
        return problems

    # The root pair: both or neither, written by one commit.
    if (root in after) != (first in after):
        problems.append(f"{short}: only one half of the root pair is stored")
    elif root in after and after[root].update_time != after[first].update_time:
        problems.append(f"{short}: root and revision-1 audit were not written by one commit")

    # Audits: contiguous 1..R, chained, each a later commit than the previous one.
    audits = {}
    for path, item in after.items():
        revision = _audit_revision(path, key_hash)
        if revision is not None:
            audits[revision] = item
    lc = after.get(lifecycle)
    top = 1 if lc is None else lc.data.get("commandRevision")
    if not audits and root not in after:
        if lc is not None:
            problems.append(f"{short}: a lifecycle without its root pair")
        return problems
    if not isinstance(top, int) or sorted(audits) != list(range(1, top + 1)):
        problems.append(f"{short}: audit revisions {sorted(audits)} are not 1..{top} (lifecycle revision)")
        return problems
    previous = None
    terminal = 0
    for revision in range(1, top + 1):
        data, stamp = audits[revision].data, audits[revision].update_time
        event = data.get("eventType")
        if data.get("commandRevision") != revision:
            problems.append(f"{short}: audit {revision} carries commandRevision {data.get('commandRevision')!r}")
        states = _EVENT_STATES.get(event)
        if states is None or (revision == 1) != (event == "command_registered"):
            problems.append(f"{short}: audit {revision} has event type {event!r}")
        elif (data.get("fromState"), data.get("toState")) != states:
            problems.append(f"{short}: audit {revision} ({event}) goes {data.get('fromState')}->{data.get('toState')}")
        if previous is not None:
            pdata, pstamp = previous
            if data.get("fromState") != pdata.get("toState"):
                problems.append(f"{short}: audit {revision} starts in {data.get('fromState')!r}, "
                                f"audit {revision - 1} ended in {pdata.get('toState')!r}")
            if stamp <= pstamp:
                problems.append(f"{short}: audit {revision} was not committed after audit {revision - 1}")
            fence, pfence = data.get("fenceEpoch"), pdata.get("fenceEpoch")
            if revision == 2 and fence != 1:
                problems.append(f"{short}: the first lease event has fence {fence!r}, not 1")
            if revision > 2 and isinstance(fence, int) and isinstance(pfence, int):
                step_ = 1 if event == "command_lease_taken_over" else 0
                if fence != pfence + step_:
                    problems.append(f"{short}: audit {revision} ({event}) has fence {fence} after fence {pfence}")
        if event in TERMINAL_EVENTS:
            terminal += 1
            if revision != top:
                problems.append(f"{short}: terminal event at revision {revision} is not the last")
        previous = (data, stamp)
    if terminal > 1:
        problems.append(f"{short}: {terminal} terminal events (at most one may ever exist)")
    if terminal_events is not None and terminal != terminal_events:
        problems.append(f"{short}: {terminal} terminal events stored, {terminal_events} expected")
    if lc is not None:
        partner = audits[top]
        if lc.update_time != partner.update_time:
            problems.append(f"{short}: lifecycle and its revision-{top} audit were not written by one commit")
        if lc.data.get("fenceEpoch") != partner.data.get("fenceEpoch") or lc.data.get("state") != partner.data.get(
            "toState"
        ):
            problems.append(f"{short}: lifecycle does not match its revision-{top} audit")
    return problems


def _short(path: str) -> str:
    """A path with every command key hash in it cut to 8 digits (messages name no raw ids)."""
    key = key_of(path)
    return path if key is None else path.replace(key, key[:8])


def project_problems(
    project: Mapping[str, Stored], judged: Mapping[str, Iterable[str]], state: JournalState
) -> list[str]:
    """The whole-project read-back of a race or parallel run: every stored document must be one the run read
    back and judged for a key it called (`judged`: key hash -> those paths), or belong to a key it did not
    call and be exactly the model's document there (`state`: the model state the race started from).
    Anything else is a write outside the contested keys: a stray (no command key at all), a document of an
    uncalled key the model does not predict, or one in a called key's scope that is none of its documents."""
    problems = []
    seen: dict[str, dict[str, Any]] = {}
    judged_paths = {key: set(paths) for key, paths in judged.items()}
    for path, item in sorted(project.items()):
        key = key_of(path)
        if key is None:
            problems.append(f"{path}: stored outside every command key (a stray write; the run only calls "
                            f"{', '.join(sorted(k[:8] for k in judged_paths))})")
        elif key in judged_paths:
            if path not in judged_paths[key]:
                problems.append(f"{_short(path)}: stored in a contested key's scope but none of its documents")
        else:
            seen.setdefault(key, {})[path] = item.data
    for key in sorted(set(seen) | (set(state.keys()) - set(judged_paths))):
        stored, predicted = seen.get(key, {}), documents_for(state, key)
        for path in sorted(stored.keys() | predicted.keys()):
            if path not in predicted:
                problems.append(f"{_short(path)}: stored under a key no caller of the run called, and not the "
                                f"model's there")
            elif path not in stored:
                problems.append(f"{_short(path)}: the model's document of an uncalled key is missing")
            elif typed(dict(stored[path])) != typed(dict(predicted[path])):
                problems.append(f"{_short(path)}: an uncalled key's document changed")
    return problems


def run_problems(run: RaceRun) -> list[str]:
    """Harness-level problems of a run: structural invariants, clock reads, foreign exceptions, hung
    callers, commit failures that went through, documents outside the key (whole-project read-back)."""
    problems: list[str] = []
    if run.stored_before is not None and run.stored_after is not None:
        record = run.initial_state.get(run.plan.key_hash)
        corrupt = record is not None and record.corrupt
        problems += structural_problems(
            run.plan.key_hash,
            run.stored_before,
            run.stored_after,
            nested_paths=run.nested_paths or (),
            corrupt=corrupt,
            terminal_events=run.plan.terminal_events,
        )
    if run.project is not None and run.stored_after is not None:
        judged = {run.plan.key_hash: {*run.stored_after, *(run.nested_paths or ())}}
        problems += project_problems(run.project, judged, run.initial_state)
    for record in (*run.callers, *run.after):
        for attempt in record.attempts:
            if attempt.unexpected is not None:
                problems.append(f"{record.caller.name}: raised {attempt.unexpected} (only the journal error type "
                                f"may escape)")
            if attempt.clock_reads != 1 and attempt.attempts:
                problems.append(f"{record.caller.name}: the clock was read {attempt.clock_reads} times (once "
                                f"per call required)")
    problems += [f"{name}: still running when the harness gave up" for name in run.hung]
    for paths, error in run.commit_failures:
        if error is None:
            problems.append(f"a commit that the fault should have failed was applied: {list(paths)}")
    return problems


# --- results -------------------------------------------------------------------------------------------


@attrs.frozen
class ScenarioResult:
    scenario: str
    repeat: int
    width: int
    race_seconds: float
    total_seconds: float
    outcomes: dict[str, int]  # final answer per caller
    first_outcomes: dict[str, int]  # first attempt's answer per caller
    callers: int
    definite_callers: int
    definite_share: float  # callers with a definite answer after <= max whole-call retries
    whole_call_retries: int
    retried_callers: int
    calls: int  # calls in the history (race, retries and after-calls)
    attempts: int  # transaction attempts, summed over every call
    aborts: int
    max_attempts: int  # most transaction attempts one call needed
    verdict: str
    checker_ms: float
    checker_steps: int
    problems: tuple[str, ...]  # structural invariants and harness problems
    promise_problems: tuple[str, ...]  # the seed's specific promise
    explanation: str | None = None
    counterexample: str | None = None
    project_id: str | None = None
    key_hash: str | None = None
    lock_timeouts: int | None = None  # emulator-wide, during this run (shared by parallel workers)
    # Racing callers left indefinite with the model's own unavailable answer (fencecheck.definite): they
    # count with the definite ones for the share.
    contract_unavailable_callers: int = 0
    # Too few definite callers for the verdict to mean anything (fencecheck.definite): never a pass.
    contention: str | None = None

    @property
    def passed(self) -> bool:
        return (
            self.verdict == "ok" and not self.problems and not self.promise_problems and self.contention is None
        )

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["problems"] = list(self.problems)
        out["promise_problems"] = list(self.promise_problems)
        out["format"] = RESULT_FORMAT
        return out


def summarize_run(
    run: RaceRun,
    verdict: Verdict,
    checker_seconds: float,
    *,
    repeat: int = 0,
    promise_problems: Sequence[str] = (),
    counterexample: str | None = None,
    project_id: str | None = None,
    lock_timeouts: int | None = None,
) -> ScenarioResult:
    records = run.callers
    every = [a for r in (*run.callers, *run.after) for a in r.attempts]
    definite = sum(1 for r in records if r.definite)
    unavailable_ids = contract_unavailable(verdict, run.initial_state)
    excused = sum(1 for r in records if not r.definite and r.attempts and r.attempts[-1].call_id in unavailable_ids)
    explanation = None if verdict.ok else verdict.explain()
    return ScenarioResult(
        scenario=run.plan.scenario,
        repeat=repeat,
        width=run.plan.width,
        race_seconds=round(run.race_seconds, 4),
        total_seconds=round(run.total_seconds, 4),
        outcomes=dict(sorted(Counter(answer_label(r.final) for r in records).items())),
        first_outcomes=dict(
            sorted(Counter(answer_label(r.attempts[0].outcome) for r in records if r.attempts).items())
        ),
        callers=len(records),
        definite_callers=definite,
        definite_share=definite / len(records),
        whole_call_retries=sum(r.retries for r in records),
        retried_callers=sum(1 for r in records if r.retries),
        calls=len(run.history.calls),
        attempts=sum(a.attempts for a in every),
        aborts=sum(a.aborts for a in every),
        max_attempts=max((a.attempts for a in every), default=0),
        verdict=verdict.status,
        checker_ms=round(checker_seconds * 1000, 3),
        checker_steps=verdict.steps,
        problems=tuple(run_problems(run)),
        promise_problems=tuple(promise_problems),
        explanation=explanation,
        counterexample=counterexample,
        project_id=project_id,
        key_hash=run.plan.key_hash,
        lock_timeouts=lock_timeouts,
        contract_unavailable_callers=excused,
        contention=contention_problem(definite + excused, len(records)),
    )


# --- saving and re-checking ----------------------------------------------------------------------------


def setup_to_json(ops: Iterable[Operation]) -> list[dict[str, Any]]:
    out = []
    for op in ops:
        if isinstance(op, InjectFault):
            out.append({"type": "inject_fault", "command": command_to_json(op.command), "kind": op.kind.value})
        else:
            out.append(op_to_json(op))
    return out


def setup_from_json(data: object) -> tuple[Operation, ...]:
    if not isinstance(data, list):
        raise ValueError("setup must be a JSON array")
    ops: list[Operation] = []
    for item in data:
        if isinstance(item, dict) and item.get("type") == "inject_fault":
            ops.append(InjectFault(command_from_json(item["command"]), FaultKind(item["kind"])))
        else:
            ops.append(op_from_json(item))
    return tuple(ops)


def state_after_setup(plugin: Any, data: Mapping[str, Any]) -> Any:
    """The model state after a saved race's or contest's setup, for any plug-in (the journal's race files
    spell their setup their own way, without a `setupHeader`)."""
    if plugin.name == "journal" and "setupHeader" not in data:
        setup: Sequence[Any] = setup_from_json(data["setup"])
    else:
        setup = plugin.ops_from_json(data.get("setupHeader", {}), data["setup"])
    state = plugin.initial_state()
    for op in setup:
        state, _result = plugin.step(state, op)
    return state


def _callers_json(records: Sequence[CallerRecord]) -> list[dict[str, Any]]:
    return [
        {
            "caller": r.caller.name,
            "commitFailureFirst": r.caller.commit_failure_first,
            "calls": [a.call_id for a in r.attempts],
            "answers": [answer_label(a.outcome) for a in r.attempts],
            "transactionAttempts": [a.attempts for a in r.attempts],
            "aborts": [a.aborts for a in r.attempts],
        }
        for r in records
    ]


def result_document(result: ScenarioResult, run: RaceRun) -> dict[str, Any]:
    """The JSON saved per run: the result, the plan's setup, each caller's attempts and the full history."""
    out = result.to_json()
    out["setup"] = setup_to_json(run.plan.setup)
    out["callerAttempts"] = _callers_json(run.callers)
    out["afterAttempts"] = _callers_json(run.after)
    out["history"] = run.history.to_json()
    out["plan"] = plan_roles(run.plan)
    return out


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)
    return path


def plan_roles(plan: RacePlan) -> dict[str, Any]:
    """What the history alone does not say about a plan, so `fencecheck replay` can run the same race again:
    who raced and who followed one at a time, whose first commit was rejected, the expected terminal events."""

    def roles(callers: Sequence[Caller]) -> list[dict[str, Any]]:
        return [{"name": c.name, "commitFailureFirst": c.commit_failure_first} for c in callers]

    return {"callers": roles(plan.callers), "after": roles(plan.after), "terminalEvents": plan.terminal_events}


def save_counterexample(run: RaceRun, verdict: Verdict, directory: Path, *, system: str | None = None) -> Path:
    """`<directory>/race-<scenario>-<shortid>.json`: setup + history (final documents included) + verdict;
    `recheck` reads it back and runs the checker again. `system` names a system other than the reference
    (`ReferenceAPI.module`), so a replay runs against the same one."""
    history = run.history.to_json()
    setup = setup_to_json(run.plan.setup)
    digest = hashlib.sha256(json.dumps([setup, history], sort_keys=True, default=str).encode()).hexdigest()
    data = {
        "format": COUNTEREXAMPLE_FORMAT,
        "scenario": run.plan.scenario,
        "keyHash": run.plan.key_hash,
        "verdict": verdict.status,
        "explanation": verdict.explain(),
        "setup": setup,
        "history": history,
        "system": system,
        "plan": plan_roles(run.plan),
    }
    return write_json(directory / f"race-{run.plan.scenario}-{digest[:10]}.json", data)


def load_counterexample(path: Path | str) -> tuple[History, JournalState]:
    """The history and the checker's initial state (the setup replayed through the model) of a saved file."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("format") not in (COUNTEREXAMPLE_FORMAT, RESULT_FORMAT):
        raise ValueError(f"{path}: not a saved race")
    state = JournalState.empty()
    for op in setup_from_json(data["setup"]):
        state, _result = step(state, op)
    return History.from_json(data["history"]), state


def recheck(path: Path | str, *, budget: int = DEFAULT_BUDGET) -> Verdict:
    """Check a saved race (counterexample or result file) again."""
    history, initial = load_counterexample(path)
    return check(history, initial_state=initial, budget=budget)


# --- one scenario, end to end --------------------------------------------------------------------------


def execute(
    db: Any,
    scenario: Any,
    *,
    repeat: int = 0,
    ids_seed: int | None = None,
    artifacts_dir: Path | None = None,
    counterexamples_dir: Path | None = None,
    emulator: Any = None,
    project_id: str | None = None,
    system: ReferenceAPI = REFERENCE,
    budget: int = DEFAULT_BUDGET,
) -> tuple[ScenarioResult, RaceRun, Verdict]:
    """Build `scenario` (anything with `.name`, `.plan(ids)` and `.promise(run)`) with fresh ids, run it on
    `db`, judge it, and save `<artifacts_dir>/<name>-<repeat>.json` (and, when the verdict is not ok, a
    counterexample in `counterexamples_dir`)."""
    seed = secrets.randbits(64) if ids_seed is None else ids_seed
    plan = scenario.plan(Ids(seed))
    locks_before = emulator.lock_timeout_count() if emulator is not None else None
    run = run_plan(db, plan, system=system)
    system_name = None if system is REFERENCE else system.module  # saved, so a replay runs the same system
    locks_after = emulator.lock_timeout_count() if emulator is not None else None
    verdict, seconds = judge(run, budget=budget)
    counterexample = None
    if not verdict.ok and counterexamples_dir is not None:
        counterexample = str(save_counterexample(run, verdict, counterexamples_dir, system=system_name))
    lock_timeouts = None if locks_before is None or locks_after is None else locks_after - locks_before
    result = summarize_run(
        run,
        verdict,
        seconds,
        repeat=repeat,
        promise_problems=scenario.promise(run),
        counterexample=counterexample,
        project_id=project_id,
        lock_timeouts=lock_timeouts,
    )
    if artifacts_dir is not None:
        document = result_document(result, run)
        document["idsSeed"] = seed
        document["system"] = system_name
        write_json(artifacts_dir / f"{scenario.name}-{repeat}.json", document)
    return result, run, verdict
