"""A contest through the model alone (no Firestore): histories and runs for unit tests, judged like real ones.

- `setup_state`: the model state after a contest's setup (what `fencecheck.runners.contest.run_setup` verifies the
  implementation reaches);
- `simulate_contest`: every racer invoked before any completes, as behind a real start barrier, effects in a
  chosen order; no whole-call retries;
- `simulate_in_turn`: one call at a time in a chosen order, with whole-call retries of the plug-in's
  unavailable answer and each racer's `first_op` as its first attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fencecheck.checker.history import Call, Definite, History, Indefinite, Outcome, Planned, simulate
from fencecheck.checker.linearizability import DEFAULT_BUDGET
from fencecheck.plugin.records import SystemPlugin
from fencecheck.runners.contest import (
    MAX_WHOLE_CALL_RETRIES,
    CallRecord,
    Contest,
    ContestRun,
    Racer,
    RacerRecord,
    judge,
)

__all__ = ["setup_state", "simulate_contest", "simulate_in_turn"]


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
        RacerRecord(racer, (CallRecord(i, history.by_id(i).outcome, 1, 0, 0, 1, op=racer.op),))
        for i, racer in enumerate((*contest.racers, *contest.followers))
    )
    return ContestRun(contest, plugin, plugin.reference, initial, records[:n], history, final_documents, verdict,
                      checker_seconds, followers=records[n:])


def simulate_in_turn(
    contest: Contest,
    *,
    plugin: SystemPlugin,
    order: Sequence[int] | None = None,
    retry_at: int | None = None,
    budget: int = DEFAULT_BUDGET,
) -> ContestRun:
    """The contest through the model alone, one call at a time: the racers in `order` (indexes into
    `contest.racers`; default as listed), each racer's first attempt its `first_op` when it has one. A call the
    model answers with the plug-in's unavailable code is indefinite and its racer retries the whole call, at
    most `MAX_WHOLE_CALL_RETRIES` more times, `retry_at` places later in the queue (default: next). The
    followers come after, one at a time, retried at once. Calls get sequential, non-overlapping times; the
    run is judged like a real one."""
    n = contest.width
    order = list(range(n)) if order is None else list(order)
    if sorted(order) != list(range(n)):
        raise ValueError("an order must be a permutation of the racers")
    initial = setup_state(plugin, contest.setup)
    state = initial
    calls: list[Call] = []

    def make_call(racer: Racer, attempt: int) -> CallRecord:
        nonlocal state
        op = racer.op_of(attempt)
        state, result = plugin.step(state, op)
        answer = result.output if result.ok else result.code
        outcome: Outcome = Indefinite(answer) if answer == plugin.unavailable_code else Definite(answer)
        call = Call(len(calls), racer.name, op, 2 * len(calls), 2 * len(calls) + 1, outcome)
        calls.append(call)
        return CallRecord(call.id, outcome, 1, 0, 0, 1, op=op)

    made: dict[int, list[CallRecord]] = {i: [] for i in range(n)}
    queue: list[tuple[int, int]] = [(i, 0) for i in order]  # (racer index, attempt number)
    position = 0
    while position < len(queue):
        index, attempt = queue[position]
        record = make_call(contest.racers[index], attempt)
        made[index].append(record)
        if not record.outcome.definite and attempt < MAX_WHOLE_CALL_RETRIES:
            queue.insert(min(len(queue), position + 1 + (retry_at or 0)), (index, attempt + 1))
        position += 1
    followers = []
    for follower in contest.followers:
        tries: list[CallRecord] = []
        for attempt in range(1 + MAX_WHOLE_CALL_RETRIES):
            tries.append(make_call(follower, attempt))
            if tries[-1].outcome.definite:
                break
        followers.append(RacerRecord(follower, tuple(tries)))
    partitions = {*plugin.partitions_of_state(initial), *(plugin.partition_of(r.op) for r in contest.callers)}
    final_documents = {key: plugin.documents_of(state, key) for key in sorted(partitions)}
    history = History(tuple(calls), final_documents, system=plugin.name)
    verdict, checker_seconds = judge(plugin, history, initial, final_documents, budget=budget)
    racers = tuple(RacerRecord(racer, tuple(made[i])) for i, racer in enumerate(contest.racers))
    return ContestRun(contest, plugin, plugin.reference, initial, racers, history, final_documents, verdict,
                      checker_seconds, followers=tuple(followers))
