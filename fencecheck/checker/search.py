"""The search behind `fencecheck.checker.linearizability.check`, for one partition: pure, deterministic, no I/O.

Wing & Gong's search with Lowe's just-in-time linearization, the way Porcupine's `checkSingle` does it.
Invocation and completion events of the definite calls sit in a doubly linked list sorted by time
(invocations before completions at equal instants). A call may be linearized next when its invocation
precedes the first completion among definite calls not yet linearized; linearizing one lifts its two events
out of the list, backtracking puts them back. A node's candidates are tried definite calls first, in
invocation order, then indefinite ones.

Indefinite calls have no completion: they are candidates from their invocation on, for ever (or never
placed), and are placed only where they change the state (placing one where it does not is the same as
leaving it out).

Memoization: a node is (the calls linearized, as an int bitset; the model state). When every way on from a
node fails, it is recorded as failed under (its definite calls, its state), with the set of indefinite calls
it had placed. A later node with the same definite calls and state, and a superset of one of those recorded
sets of indefinite calls, is pruned: it has the same constraints and fewer choices (an indefinite call may
always stay out).

Absorption: a call placed right after an indefinite one, that matches without it and reaches the same state
(a write over a lost write nobody read), is pruned: its sibling that places the call first has the same
state and keeps the indefinite call for later. Trying definite calls first means that sibling usually comes
first and has failed already.

Without absorption, each indefinite call still open doubles the nodes the search can reach (placed-or-not
choices that plain (bitset, state) memoization keeps apart): an illegal partition of a 2,000-call register
history with a dozen lost writes exhausted any budget (benchmarks/checker.py). With it, and definite calls
tried first, the subsumption rarely prunes more than an exact match would; it is kept because it is sound
and costs one comparison per recorded set.

Read-only commutation: when a definite call `commutes[i]` can be placed now, matches and leaves the state
unchanged, it is placed at once and no alternative is explored at that node (see the soundness condition in
`fencecheck.checker.linearizability`).

Answers are compared by `matches(model_result, observed)` (the plug-in's `answer_matches`: exact types and
key order). Its results are memoized per (call, state), never per answer: `1 == True` and equal dicts with
another key order hash alike, so an answer-keyed cache would conflate them.

The budget counts placement attempts; exhausting it answers "unknown" with the best prefix so far.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import attrs

from fencecheck.checker.history import Call

OK = "ok"
ILLEGAL = "illegal"
UNKNOWN = "unknown"

StepFn = Callable[[Any, Any], tuple[Any, Any]]
MatchFn = Callable[[Any, Any], bool]


@attrs.frozen(eq=False)
class Found:
    """What the search found: `order` is the linearization (ok) or the best prefix (illegal, unknown), as
    indexes into the calls; `state` the model state after it; `steps` the placement attempts made."""

    status: str
    order: tuple[int, ...]
    state: Any
    steps: int

    status: str
    order: tuple[int, ...]  # ok: the linearization; otherwise the best prefix
    state: Any  # the state after `order`
    steps: int


def search(
    calls: tuple[Call, ...],
    initial: Any,
    step: StepFn,
    budget: int,
    final_ok: Callable[[Any], bool],
    commutes: list[bool],
    matches: MatchFn,
) -> Found:
    """Search a linearization of `calls` (sorted by invocation) from `initial`; pure and deterministic."""
    found = resume(stepwise(calls, initial, step, budget, final_ok, commutes, matches), budget)
    assert found is not None  # a search never pauses at its own budget
    return found


def resume(search: Generator[int, int, Found], cap: int) -> Found | None:
    """Run a `stepwise` search on until it has made `cap` placement attempts: what it found, or None when it
    paused there (the same search with budget `cap` would have answered unknown)."""
    try:
        search.send(cap)
    except StopIteration as done:
        return done.value
    return None


def stepwise(
    calls: tuple[Call, ...],
    initial: Any,
    step: StepFn,
    budget: int,
    final_ok: Callable[[Any], bool],
    commutes: list[bool],
    matches: MatchFn,
) -> Generator[int, int, Found]:
    """`search` in slices, for `resume`: each `send(cap)` runs it until it has made `cap` attempts (it yields
    and waits for the next cap) or has found its answer (it returns it). Pausing changes nothing: the
    attempts, their order and the result are those of one uninterrupted search with the same budget."""
    searching = _stepwise(calls, initial, step, budget, final_ok, commutes, matches)
    next(searching)
    return searching


def _stepwise(
    calls: tuple[Call, ...],
    initial: Any,
    step: StepFn,
    budget: int,
    final_ok: Callable[[Any], bool],
    commutes: list[bool],
    matches: MatchFn,
) -> Generator[int, int, Found]:
    pause = yield 0
    n = len(calls)
    ops = [c.op for c in calls]
    definite = [c.outcome.definite for c in calls]
    any_commutes = any(commutes)
    observed = [c.outcome.observed if c.outcome.definite else None for c in calls]
    bits = [1 << i for i in range(n)]
    definite_mask = sum(bits[i] for i in range(n) if definite[i])

    # Definite calls' events: (time, kind, index); invocations (kind 0) sort before completions (kind 1) at
    # equal times. Indefinite calls have no completion, so they never end a scan: they are kept apart, in
    # invocation order, and join the candidates invoked up to the first pending completion.
    events = [(c.invoked_at, 0, i) for i, c in enumerate(calls) if definite[i]]
    events += [(c.completed_at, 1, i) for i, c in enumerate(calls) if definite[i]]
    events.sort()
    e_count = len(events)
    head, end = e_count, e_count + 1
    nxt = list(range(1, e_count + 1)) + [0 if e_count else end, end]
    prv = [head] + list(range(e_count - 1)) + [head, e_count - 1 if e_count else head]
    if e_count:
        nxt[e_count - 1] = end
    else:
        prv = [head, head]
    stops = [kind == 1 for _t, kind, _i in events] + [True, True]  # completions (and the end) stop a scan
    stop_time = [t for t, _kind, _i in events] + [None, None]
    call_of = [i for _t, _kind, i in events] + [-1, -1]
    call_event = [-1] * n
    return_event = [-1] * n
    for e, (_t, kind, i) in enumerate(events):
        if kind == 0:
            call_event[i] = e
        else:
            return_event[i] = e
    loose = [i for i in range(n) if not definite[i]]
    loose_at = [calls[i].invoked_at for i in loose]

    def lift(i: int) -> None:
        e = call_event[i]
        if e < 0:
            return
        nxt[prv[e]] = nxt[e]
        prv[nxt[e]] = prv[e]
        r = return_event[i]
        nxt[prv[r]] = nxt[r]
        prv[nxt[r]] = prv[r]

    def unlift(i: int) -> None:
        e = call_event[i]
        if e < 0:
            return
        r = return_event[i]
        nxt[prv[r]] = r
        prv[nxt[r]] = r
        nxt[prv[e]] = e
        prv[nxt[e]] = e

    memo: dict[tuple[int, Any], tuple[Any, bool]] = {}

    def attempt(state: Any, i: int) -> tuple[Any, bool]:
        # Keyed on the call, not on its answer: answers that are == but not exact (1 and True) never meet.
        key = (i, state)
        found = memo.get(key)
        if found is None:
            new_state, result = step(state, ops[i])
            found = (new_state, matches(result, observed[i]) if definite[i] else True)
            memo[key] = found
        return found

    # Nodes that failed, by (definite calls placed, state): the minimal sets of indefinite calls placed with
    # which they failed. A node with a superset of those has fewer choices left and fails too.
    failed: dict[tuple[int, Any], list[int]] = {}

    loose_mask = ((1 << n) - 1) ^ definite_mask

    def has_failed(linearized: int, state: Any) -> bool:
        placed = failed.get((linearized & definite_mask, state))
        if placed is not None:
            extra = linearized & loose_mask
            for f in placed:
                if f & extra == f:
                    return True
        return False

    def mark_failed(linearized: int, state: Any) -> None:
        key = (linearized & definite_mask, state)
        extra = linearized & loose_mask
        placed = failed.get(key)
        if placed is None:
            failed[key] = [extra]
        else:
            placed[:] = [f for f in placed if f & extra != extra]
            placed.append(extra)

    def absorbed(i: int, new_state: Any) -> bool:
        """Whether placing `i` here erases the indefinite call placed just before it, unobserved: `i` also
        matches without it and reaches the same state. Then the sibling that places `i` first, keeping that
        call for later, has the same state and more choices, so this node can only fail where it succeeds."""
        if not path or definite[path[-1]]:
            return False
        alt_state, alt_matched = attempt(before[-1], i)
        return alt_matched and (alt_state is new_state or alt_state == new_state)

    state = initial
    linearized = 0
    remaining = sum(definite)
    n_definite = remaining
    path: list[int] = []  # the calls placed, in order
    before: list[Any] = []  # the state before each of them
    choices: list[list[int]] = []  # per node on the path (and the current one): its candidates
    cursor: list[int] = []  # per node: the next candidate to try
    steps = 0
    best_score = (-1, -1)
    best_order: tuple[int, ...] = ()
    best_state = initial
    arrived = True

    while True:
        if arrived:
            arrived = False
            score = (n_definite - remaining, len(path))
            if score > best_score:
                best_score, best_order, best_state = score, tuple(path), state
            if remaining == 0 and final_ok(state):
                return Found(OK, tuple(path), state, steps)
            candidates: list[int] = []
            e = nxt[head]
            while not stops[e]:
                candidates.append(call_of[e])
                e = nxt[e]
            greedy = -1
            if any_commutes:
                for i in candidates:
                    if commutes[i]:
                        steps += 1
                        while steps > pause and pause < budget:
                            pause = yield pause
                        if steps > budget:
                            return Found(UNKNOWN, best_order, best_state, budget)
                        new_state, matched = attempt(state, i)
                        if matched and new_state is state:
                            greedy = i
                            break
            if greedy >= 0:
                # The only child worth trying; if it already failed, so does this node.
                choices.append([])
                cursor.append(0)
                child = linearized | bits[greedy]
                if not has_failed(child, state):
                    path.append(greedy)
                    before.append(state)
                    linearized = child
                    lift(greedy)
                    remaining -= 1
                    arrived = True
                continue
            limit = stop_time[e]
            for j, i in enumerate(loose):
                if limit is not None and loose_at[j] > limit:
                    break
                if not linearized & bits[i]:
                    candidates.append(i)
            choices.append(candidates)
            cursor.append(0)
        candidates = choices[-1]
        position = cursor[-1]
        if position == len(candidates):
            choices.pop()
            cursor.pop()
            if not path:
                return Found(ILLEGAL, best_order, best_state, steps)
            mark_failed(linearized, state)
            i = path.pop()
            state = before.pop()
            unlift(i)
            linearized &= ~bits[i]
            remaining += definite[i]
            continue
        cursor[-1] = position + 1
        i = candidates[position]
        steps += 1
        while steps > pause and pause < budget:
            pause = yield pause
        if steps > budget:
            return Found(UNKNOWN, best_order, best_state, budget)
        new_state, matched = attempt(state, i)
        # An indefinite call placed where it changes nothing is the same as leaving it out.
        if matched and (definite[i] or (new_state is not state and new_state != state)):
            child = linearized | bits[i]
            if not has_failed(child, new_state) and not absorbed(i, new_state):
                path.append(i)
                before.append(state)
                state = new_state
                linearized = child
                lift(i)
                remaining -= definite[i]
                arrived = True
