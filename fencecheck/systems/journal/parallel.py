"""The journal's parallel programs (`fencecheck.parallel.ParallelSpec`): its strategy of contested calls, its
commit-failing client, and its structural checks of each called command key after the race.

The strategy is pure: it steps the model to know what the prefix built, and draws the branches' calls against
that state. What makes the calls compete:

- few command keys (one or two, shrinking to one), three holders, two commitments: callers collide;
- the prefix is a short story per key (nothing, registered, leased by one holder, or leased and taken over
  at the exact expiry by another, fence 2), plus up to two free calls; branch calls then name the holders
  and fences it created (the live fence, the next one a takeover would grant, the stale one);
- clock readings at the boundaries: the prefix clock, the stored lease's exact `leaseExpiresAt`, 1 us before
  it, a day past it, the expiry of a lease granted in the race itself, 1 us before the stored update time;
- swarm testing: each program draws its calls' intents from one subset of them (`SWARMS`), so some
  programs are all finishes, or all acquires, and concentrate one kind of contest a mix would dilute;
- a program is only drawn if some key is called by two branches and written by at least one of them
  (`program.contested_keys`).

Everything shrinks toward the simplest race: two branches of one call each after a one-call prefix (the
first key registered), two acquires by the first holder at the prefix clock. Choices stay aligned while
shrinking (every call draws the same choices; both keys' prefix stories are always drawn; branches and calls
are lists), so simplifying one call does not change the meaning of the next. Sizes are bounded the way PropEr
bounds parallel suffixes: 2 to `max_branches` branches, at most `max_concurrent_ops` calls over all branches.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import attrs
from hypothesis import strategies as st

from fencecheck.emulator.firestore_io import CommitFailureClient, Stored
from fencecheck.parallel.program import T0, BranchCall, ParallelProgram, contested_keys, trim_branches
from fencecheck.parallel.spec import CommitFailure, ParallelSpec
from fencecheck.systems.journal.store import nested_paths, read_key
from fencecheck.systems.journal.structure import project_problems, structural_problems
from model.journal import (
    Acquire,
    CommandRecord,
    CommandRef,
    Complete,
    Fail,
    JournalState,
    Register,
    owner_fingerprint_of,
    step,
)

JournalOp = Register | Acquire | Complete | Fail
SYSTEM = "journal"

US = timedelta(microseconds=1)
SECOND = timedelta(seconds=1)
LEASE = timedelta(seconds=60)
DAY = timedelta(days=1)

MAX_PREFIX_OPS = 6
MAX_BRANCHES = 4
MAX_CONCURRENT_OPS = 12
MAX_BRANCH_OPS = 4
MAX_EXTRA_PREFIX_OPS = 2


def command_id(n: int) -> str:
    return f"{n:08x}-c0de-4000-8000-000000000000"  # the stateful machine's spelling (stateful_tests)


def lease_id(n: int) -> str:
    return f"{n:08x}-1ea5-4000-a000-000000000000"


PAYLOADS = ('{"quantity":1}', '{"quantity":2}')  # canonical JSON; the second one conflicts with the first
HOLDERS = tuple(lease_id(n) for n in (0xA, 0xB, 0xC))
COMMITMENTS = ("0" * 64, "1" * 64)  # terminal reference fingerprints
# Why a call is drawn: "contend" (an acquire by any holder at any boundary reading: first lease, busy, takeover),
# "finish" (complete or fail by the live lease's holder with its fence, while active: the writes that race),
# "any" (a call with any holder, fence and reading: rejections, conflicts, stale fences), "register".
# Listed twice: the two intents that write most (contend, finish) are drawn twice as often as the others.
INTENTS = ("contend", "finish", "any", "register", "contend", "finish")
# Swarm testing: each program draws its calls' intents from one of these subsets (all of them first, so a
# program shrinks to "any intent"). A program of only finishes, or only acquires, concentrates one kind of
# contest that a mix dilutes: finishes racing finishes is the contest a split read-then-write loses.
SWARMS = (INTENTS, ("finish",), ("contend",), ("contend", "finish"), ("finish", "any"), ("contend", "register"))
# How far the prefix takes each key; "registered" first: the simplest state in which acquires race.
# "leased" twice: a live lease is what finishes and takeovers race over.
PREFIX_STAGES = ("registered", "leased", "taken_over", "none", "leased")
# Mostly a plain first attempt; now and then one whose commit the emulator rejects (an indefinite answer).
COMMIT_FAILURE_FIRST = (False,) * 7 + (True,)


def command(index: int, payload: int = 0) -> CommandRef:
    """Command key `index` (0 or 1); `payload=1` is the same key with a conflicting payload."""
    return CommandRef(
        "test", "internal_system", "parallel-tests", command_id(index + 1), "parallel_command", 1, PAYLOADS[payload]
    )


def readings(state: JournalState, command: CommandRef, clock: datetime) -> tuple[datetime, ...]:
    """Clock readings worth trying for a call on `command`, simplest first (see the module docstring)."""
    out = [clock]
    record = state.get(command.key_hash)
    stored = None
    if isinstance(record, CommandRecord):
        lc = record.lifecycle
        if lc is not None:
            out += [lc.expires_at, lc.expires_at - US, lc.expires_at + DAY]
            stored = lc.updated_at
        else:
            stored = record.registration.created_at
    out += [clock + LEASE, clock + LEASE - US, clock + DAY]  # around the expiry of a lease won in the race
    if stored is not None:
        out.append(stored - US)  # earlier than the stored update: may observe, never decide
    return tuple(dict.fromkeys(out))


def fences(state: JournalState, command: CommandRef) -> tuple[int, ...]:
    """Fences worth presenting: the live one, the one the next grant carries, the stale one."""
    record = state.get(command.key_hash)
    lc = record.lifecycle if isinstance(record, CommandRecord) else None
    if lc is None:
        return (1, 2)
    return tuple(dict.fromkeys((lc.fence_epoch, lc.fence_epoch + 1, max(1, lc.fence_epoch - 1))))


def live_holders(state: JournalState, command: CommandRef) -> tuple[str, ...]:
    """HOLDERS with the stored lease's holder first (the one whose fence is live), then the others."""
    record = state.get(command.key_hash)
    lc = record.lifecycle if isinstance(record, CommandRecord) else None
    if lc is None:
        return HOLDERS
    live = [h for h in HOLDERS if owner_fingerprint_of(command.key_hash, h) == lc.owner_fingerprint]
    return (*live, *(h for h in HOLDERS if h not in live))


def active_readings(state: JournalState, command: CommandRef, clock: datetime) -> tuple[datetime, ...]:
    """Readings at which a lease the holder has (stored, or granted in the race at `clock`) is still active."""
    record = state.get(command.key_hash)
    lc = record.lifecycle if isinstance(record, CommandRecord) else None
    out = [clock] if lc is None or clock < lc.expires_at else []
    out += [lc.expires_at - US] if lc is not None else [clock + LEASE - US]
    return tuple(dict.fromkeys(out)) or (clock,)


def _pick(options: tuple, index: int):
    """`options[index]`, wrapping: every call draws the same choices in the same order whatever the state
    offers, so when the shrinker simplifies one call the choices of the calls after it keep their meaning."""
    return options[index % len(options)]


@st.composite
def journal_calls(
    draw: st.DrawFn, state: JournalState, keys: int, clock: datetime, intents: tuple[str, ...] = INTENTS
) -> JournalOp:
    """One call against `state` (the model state it is drawn for), on one of the first `keys` keys, drawn
    with an intent from `intents`: contend for the lease, finish as the lease's holder, any call, register."""
    intent = _pick(intents, draw(st.integers(0, len(INTENTS) - 1)))
    index = min(draw(st.integers(0, 1)), keys - 1)
    holder_index, fence_index = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    reading_index, other = draw(st.integers(0, 7)), draw(st.integers(0, 1))
    fail, acquire = draw(st.booleans()), draw(st.booleans())
    ref = command(index, other if intent == "register" else 0)
    if intent == "register":
        return Register(ref, _pick(readings(state, ref, clock), reading_index))
    if intent == "contend":
        return Acquire(ref, _pick(HOLDERS, holder_index), _pick(readings(state, ref, clock), reading_index))
    if intent == "finish":  # the holder of the live lease, its fence, while the lease is active
        holder, fence = live_holders(state, ref)[0], fences(state, ref)[0]
        now = _pick(active_readings(state, ref, clock), reading_index)
    else:  # any call: other holders, stale or future fences, expired or earlier readings
        holder, fence = _pick(live_holders(state, ref), holder_index), _pick(fences(state, ref), fence_index)
        now = _pick(readings(state, ref, clock), reading_index)
        if acquire:
            return Acquire(ref, holder, now)
    if fail:
        return Fail(ref, holder, fence, now)
    return Complete(ref, holder, fence, COMMITMENTS[other], now)


def _stage_ops(stage: str, ref: CommandRef, first: str, second: str, clock: datetime) -> list[JournalOp]:
    """The calls that take one key to `stage`, starting at `clock` (each a second apart)."""
    ops: list[JournalOp] = []
    if stage == "none":
        return ops
    ops.append(Register(ref, clock))
    if stage in ("leased", "taken_over"):
        ops.append(Acquire(ref, first, clock + SECOND))
    if stage == "taken_over":  # at the exact expiry: expired, so another holder takes over with fence 2
        ops.append(Acquire(ref, second, clock + SECOND + LEASE))
    return ops


@st.composite
def prefixes(draw: st.DrawFn, keys: int, max_ops: int = MAX_PREFIX_OPS) -> tuple[tuple[JournalOp, ...], datetime]:
    """A prefix for `keys` command keys and the clock after it."""
    ops: list[JournalOp] = []
    clock = T0
    for index in range(2):  # both keys' stories are drawn, so dropping to one key shifts no later choice
        stage = draw(st.sampled_from(PREFIX_STAGES))
        first, step_to_second = draw(st.integers(0, 2)), draw(st.integers(1, 2))
        story = _stage_ops(stage, command(index), HOLDERS[first], HOLDERS[(first + step_to_second) % 3], clock)
        if index >= keys or len(ops) + len(story) > max_ops:
            continue
        ops += story
        clock = max([clock, *(op.now for op in story)]) + SECOND
    state = JournalState.empty()
    for op in ops:
        state, _result = step(state, op)
    extra = draw(st.integers(0, min(MAX_EXTRA_PREFIX_OPS, max_ops - len(ops))))
    for _ in range(extra):
        op = draw(journal_calls(state, keys, clock))
        ops.append(op)
        state, _result = step(state, op)
        clock = max(clock, op.now) + SECOND
    return tuple(ops), clock


@st.composite
def _programs(
    draw: st.DrawFn, max_prefix_ops: int, max_branches: int, max_concurrent_ops: int, max_branch_ops: int
) -> ParallelProgram:
    keys = draw(st.integers(1, 2))
    prefix, clock = draw(prefixes(keys, max_prefix_ops))
    state = JournalState.empty()
    for op in prefix:
        state, _result = step(state, op)
    swarm = draw(st.sampled_from(SWARMS))
    # Lists, because Hypothesis's shrinker deletes list elements (a branch, a call) cleanly.
    calls = st.builds(BranchCall, journal_calls(state, keys, clock, swarm), st.sampled_from(COMMIT_FAILURE_FIRST))
    branches = draw(st.lists(st.lists(calls, min_size=1, max_size=max_branch_ops), min_size=2, max_size=max_branches))
    return ParallelProgram(prefix, trim_branches(branches, max_concurrent_ops), system=SYSTEM)


def programs(
    *,
    max_prefix_ops: int = MAX_PREFIX_OPS,
    max_branches: int = MAX_BRANCHES,
    max_concurrent_ops: int = MAX_CONCURRENT_OPS,
    max_branch_ops: int = MAX_BRANCH_OPS,
) -> st.SearchStrategy[ParallelProgram]:
    """Parallel programs with at least one contested key (see the module docstring)."""
    if not 2 <= max_branches <= max_concurrent_ops or max_branch_ops < 1:
        raise ValueError("need 2 <= max_branches <= max_concurrent_ops and max_branch_ops >= 1")
    return _programs(max_prefix_ops, max_branches, max_concurrent_ops, max_branch_ops).filter(
        lambda program: bool(contested_keys(program))
    )


# --- the journal's checks of a race ----------------------------------------------------------------------


def before_race(db: Any, keys: tuple[str, ...]) -> dict[str, dict[str, Stored]]:
    """Each called key's documents before the race (what structural_problems compares with)."""
    return {h: read_key(db, h) for h in keys}


def race_problems(db: Any, state: JournalState, keys: tuple[str, ...], before: Mapping[str, Mapping[str, Stored]],
                  project: Mapping[str, Stored]) -> list[str]:
    """The structural invariants per called key (`structure.structural_problems`, as in races), and
    the whole-project read-back (`project_problems`: a stray write, or a prefix-only key's documents that are
    no longer the model's)."""
    problems = []
    after = {h: read_key(db, h) for h in keys}
    nested = {h: nested_paths(db, h) for h in keys}
    for h in keys:
        record = state.get(h)
        corrupt = record is not None and record.corrupt
        problems += structural_problems(h, before[h], after[h], nested_paths=nested[h], corrupt=corrupt)
    problems += project_problems(project, {h: {*after[h], *nested[h]} for h in keys}, state)
    return problems


SPEC = ParallelSpec(
    programs=programs,
    commit_failure=CommitFailure(CommitFailureClient, lambda op: attrs.evolve(op, commit_fails=True)),
    before_race=before_race,
    race_problems=race_problems,
    reports_strays=True,  # project_problems names them, with the keys the run called
)
