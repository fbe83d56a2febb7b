"""The parallel-program strategy (fencecheck.parallel.strategy), without the emulator.

- every program is within its bounds and contests a key;
- the contests the suite exists for are all generated: racing registrations, first leases, takeovers at the
  exact expiry, finishes by the live holder, calls whose first commit is rejected;
- shrinking reaches the smallest race: two branches of one call each after a one-call prefix;
- the pipeline the emulator suite uses judges pure simulations right: every serial execution of a program
  is linearizable, and a simulated lost update (every branch decides on the same snapshot, the last writer
  wins) is caught, and Hypothesis shrinks it to the two-call race that shows it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import HealthCheck, find, given, settings

from fencecheck.checker.history import Call, Definite, History, Indefinite
from fencecheck.checker.linearizability import check
from fencecheck.parallel import ParallelProgram, contested_keys
from fencecheck.parallel.program import T0
from fencecheck.suites.hypothesis_profiles import _PHASES as PHASES
from fencecheck.systems.journal.parallel import (
    HOLDERS,
    LEASE,
    MAX_BRANCHES,
    MAX_CONCURRENT_OPS,
    MAX_PREFIX_OPS,
    US,
    active_readings,
    command,
    fences,
    live_holders,
    programs,
    readings,
)
from model.journal import Acquire, Complete, Fail, JournalState, Register, documents_for, step

# No explain phase: it replays the shrunk example hundreds of times (most of `find`'s time) for nothing here.
# Derandomized, so what `find` reaches (and how far it shrinks) is the same on every run.
FIND = settings(database=None, max_examples=3000, suppress_health_check=list(HealthCheck), phases=PHASES,
                derandomize=True)
MANY = settings(database=None, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _writes_first(program: ParallelProgram, state: JournalState) -> list[tuple[int, object]]:
    """(branch, op) of every branch's first call that writes when applied to `state`."""
    out = []
    for index, branch in enumerate(program.branches):
        op = branch[0].op
        if step(state, op)[0] is not state:
            out.append((index, op))
    return out


# --- bounds and contests -------------------------------------------------------------------------------


@MANY
@given(programs())
def test_programs_are_bounded_and_contest_a_key(program):
    size = program.size
    assert 2 <= size.branches <= MAX_BRANCHES
    assert size.branches <= size.concurrent_ops <= MAX_CONCURRENT_OPS
    assert size.prefix_ops <= MAX_PREFIX_OPS
    assert all(branch for branch in program.branches)
    assert not any(call.op.commit_fails for branch in program.branches for call in branch)
    assert contested_keys(program), program.describe()
    assert set(program.keys()) <= {command(0).key_hash, command(1).key_hash}


@settings(MANY, max_examples=60)
@given(programs(max_branches=2, max_concurrent_ops=3, max_prefix_ops=2, max_branch_ops=2))
def test_bounds_are_configurable(program):
    assert program.size.branches == 2 and program.size.concurrent_ops <= 3 and program.size.prefix_ops <= 2
    assert all(len(branch) <= 2 for branch in program.branches)


def _racing(kind: type, *, distinct_holders: bool = False):
    def race(program: ParallelProgram) -> bool:
        state, _results = program.prefix_state()
        writers = [(i, op) for i, op in _writes_first(program, state) if isinstance(op, kind)]
        if len({i for i, _op in writers}) < 2:
            return False
        if distinct_holders:
            return len({op.lease_id for _i, op in writers}) >= 2
        return True

    return race


def test_racing_registrations_are_generated():
    program = find(programs(), _racing(Register), settings=FIND)
    assert any(isinstance(call.op, Register) for branch in program.branches for call in branch)


def test_racing_first_leases_of_distinct_holders_are_generated():
    program = find(programs(), _racing(Acquire, distinct_holders=True), settings=FIND)
    state, _results = program.prefix_state()
    assert state.get(program.keys()[0]).lifecycle is None  # a first lease, not a takeover


def test_racing_takeovers_at_the_exact_expiry_are_generated():
    def takeover_at_expiry(program: ParallelProgram) -> bool:
        state, _results = program.prefix_state()
        record = state.get(command(0).key_hash)
        lc = getattr(record, "lifecycle", None)
        if lc is None:
            return False
        writers = _writes_first(program, state)
        return len({i for i, op in writers if isinstance(op, Acquire) and op.now == lc.expires_at}) >= 2

    program = find(programs(), takeover_at_expiry, settings=FIND)
    assert len(program.prefix) >= 2  # registered and leased first


def test_racing_finishes_by_the_live_holder_are_generated():
    program = find(programs(), _racing((Complete, Fail)), settings=FIND)
    state, _results = program.prefix_state()
    lc = state.get(program.keys()[0]).lifecycle
    assert lc is not None and lc.state == "leased"


def test_first_commit_failures_are_generated():
    program = find(programs(), lambda p: any(c.commit_failure_first for b in p.branches for c in b), settings=FIND)
    assert sum(c.commit_failure_first for b in program.branches for c in b) == 1


def test_readings_include_the_expiry_boundaries_and_the_stored_time():
    ref = command(0)
    state = JournalState.empty()
    for op in (Register(ref, _t(0)), Acquire(ref, HOLDERS[1], _t(1))):
        state, _result = step(state, op)
    expiry = _t(1) + LEASE
    options = readings(state, ref, _t(3))
    assert options[0] == _t(3)
    assert {expiry, expiry - US, expiry + LEASE * 1440, _t(1) - US} <= set(options)
    assert live_holders(state, ref)[0] == HOLDERS[1]
    assert fences(state, ref) == (1, 2)
    assert all(now < expiry for now in active_readings(state, ref, _t(3)))


def _t(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# --- shrinking ---------------------------------------------------------------------------------------------


def test_shrinks_to_two_branches_of_one_call():
    program = find(programs(), lambda p: True, settings=FIND)
    assert (program.size.branches, program.size.concurrent_ops, program.size.prefix_ops) == (2, 2, 1)
    assert all(isinstance(branch[0].op, Acquire) for branch in program.branches)  # the simplest contest


def test_shrinks_toward_fewer_calls_per_branch():
    program = find(programs(), lambda p: p.size.branches >= 3, settings=FIND)
    assert (program.size.branches, program.size.concurrent_ops) == (3, 3)


# --- the judging pipeline on pure simulations -------------------------------------------------------------


def _history(program: ParallelProgram, calls: list[Call], final_state: JournalState) -> History:
    return History(tuple(calls), {h: documents_for(final_state, h) for h in program.keys()}, system="journal")


def _outcome(result):
    answer = result.output if result.ok else result.code
    return Indefinite("journal_unavailable") if answer == "journal_unavailable" else Definite(answer)


def serial_history(program: ParallelProgram) -> tuple[History, JournalState]:
    """Every call one after the other, branch by branch: linearizable by construction."""
    state, _results = program.prefix_state()
    initial, calls = state, []
    for lane, branch in zip(program.lanes, program.branches, strict=True):
        for call in branch:
            state, result = step(state, call.op)
            calls.append(Call(len(calls), lane, call.op, 2 * len(calls), 2 * len(calls) + 1, _outcome(result)))
    return _history(program, calls, state), initial


def lost_update_history(program: ParallelProgram) -> tuple[History, JournalState]:
    """Every branch's first call decides on the same snapshot (the state after the prefix), overlapping in
    time, and the last writer's state is what remains: the bug a check outside the transaction makes."""
    initial, _results = program.prefix_state()
    final, calls = initial, []
    for lane, branch in zip(program.lanes, program.branches, strict=True):
        after, result = step(initial, branch[0].op)
        final = after if after is not initial else final
        calls.append(Call(len(calls), lane, branch[0].op, 0, 100, _outcome(result)))
    return _history(program, calls, final), initial


@MANY
@given(programs())
def test_every_serial_execution_is_linearizable(program):
    history, initial = serial_history(program)
    verdict = check(history, initial_state=initial)
    assert verdict.ok, verdict.explain()


def test_a_lost_update_is_caught_and_shrinks_to_the_two_call_race():
    def fails(program: ParallelProgram) -> bool:
        history, initial = lost_update_history(program)
        return not check(history, initial_state=initial).ok

    program = find(programs(), fails, settings=FIND)
    assert (program.size.branches, program.size.concurrent_ops) == (2, 2)
    assert program.size.prefix_ops <= 1
    ops = [branch[0].op for branch in program.branches]
    state, _results = program.prefix_state()
    assert all(step(state, op)[0] is not state for op in ops), "both racing calls write"
