"""Pure linearizability checker for histories of any system, driven by its model's `step` function.

The system is a plug-in (`fencecheck.plugin.SystemPlugin`; the journal's by default): it supplies the model,
how operations map to partitions, and the documents each partition's state predicts.

`check(history)` answers whether the recorded calls could have happened one at a time, each at some instant
between its invocation and its completion, in an order whose model answers are the observed ones (and,
when the history carries the stored documents, whose final model state predicts them exactly).

Algorithm: Wing & Gong's search with Lowe's just-in-time linearization and state memoization, the way
Porcupine's `checkSingle` does it. Invocation and completion events of one partition sit in a doubly linked
list sorted by time (invocations before completions at equal instants). A call may be linearized next when
its invocation precedes the first completion among calls not yet linearized; linearizing one lifts its two
events out of the list, backtracking puts them back. Every (set of linearized calls as an int bitset, model
state) reached is cached, and reaching a cached pair again is pruned.

Extensions:

- *Partitioning* by `plugin.partition_of(op)` (P-compositionality): for the journal the command key (the
  model state is per key and no operation touches another key), so each key is checked alone from its own
  slice of the initial state (`plugin.restrict`). The lantern has one partition, the whole project.
- *Indefinite calls* (`journal_unavailable`, transport errors, no answer) have no completion event: they may
  be linearized at any point after their invocation, or never. The search succeeds once every definite
  call is placed. An indefinite call is only placed where it changes the state; placing it where it does
  not is equivalent to leaving it out, which is always allowed.
- *Read-only commutation* (`commute_read_only=True`): when a definite call can be placed now, its answer
  matches and it leaves the state unchanged, it is placed at once and no alternative is explored at that
  node. Only for operations the plug-in declares `commutes_when_read_only`. Sound when the model has this
  property for them: a call that matches read-only in a state S also leaves
  every state reachable from S unchanged wherever it matches there. The journal model has it (fences only
  grow and terminal states are absorbing, so the answers that write — registered_new, a granted lease with
  a new fence, the first terminal answer — can never be read-only answers after S); the tests check it on
  random states. This turns n-way `lease_busy` contention from exponential into linear. The lantern's
  calls have it except a read of the active lanterns (an error answer never writes; a success writes, or
  is the retry of a light whose lantern exists and stays; a read that retires nothing now can retire, with
  the same answer, a lantern lit earlier in time by a call placed before it).
- *Final documents*: the stored documents act as a last read, after every other call. A complete
  linearization only counts when `documents_of` of its final state equals them exactly (types included:
  `True` is not `1`; a Firestore timestamp equals the same instant as a `datetime`). The search goes on
  through other linearizations (other orders, other subsets of indefinite calls) until one matches.
- *Budget*: the number of placement attempts per partition. Exhausting it answers "unknown". No wall clock
  is read: the verdict is a deterministic function of the history and the budget.

On "illegal" the verdict explains itself (see `linearizability_explain`): the longest linearizable prefix
found (most definite calls, then most calls), the first call that cannot be placed after it (the pending
definite call that completed first: every linearization must place it before anything invoked after that
completion) with the model's answer there, or the final documents' differences, and a per-caller timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from .history import Call, History
from .linearizability_explain import Explanation, explain_partition, summarize
from .plugin import SystemPlugin
from .plugins.journal import JOURNAL

OK = "ok"
ILLEGAL = "illegal"
UNKNOWN = "unknown"
DEFAULT_BUDGET = 1_000_000

StepFn = Callable[[Any, Any], tuple[Any, Any]]
DocumentsFn = Callable[[Any], dict[str, dict[str, Any]]]


@attrs.frozen(eq=False)
class PartitionVerdict:
    """The verdict for one command key.

    `order` is the linearization found (ok), the longest linearizable prefix (illegal), or the longest
    prefix reached before the budget ran out (unknown). `omitted` lists the indefinite calls left out of an
    ok linearization (taken as never applied). `final_state` is the model state after `order` (ok only).
    """

    key_hash: str
    status: str
    order: tuple[Call, ...]
    omitted: tuple[Call, ...]
    final_state: Any
    steps: int
    explanation: Explanation | None = None


@attrs.frozen(eq=False)
class Verdict:
    """Combined verdict: any illegal partition makes it illegal, else any unknown one unknown, else ok."""

    status: str
    partitions: tuple[PartitionVerdict, ...]
    final_state: Any
    budget: int
    plugin: SystemPlugin = JOURNAL

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def order(self) -> dict[str, tuple[Call, ...]]:
        """Per command key hash, the linearization (ok), longest prefix (illegal) or best prefix (unknown)."""
        return {p.key_hash: p.order for p in self.partitions}

    @property
    def steps(self) -> int:
        return sum(p.steps for p in self.partitions)

    @property
    def explanation(self) -> Explanation | None:
        """The explanation of the first illegal partition (in order of first invocation)."""
        for p in self.partitions:
            if p.explanation is not None:
                return p.explanation
        return None

    def explain(self) -> str:
        return summarize(self)


# --- document comparison ---------------------------------------------------------------------------


def normalize_value(value: Any) -> Any:
    """A hashable form that compares equal only for equal values of the same stored type."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            return ("naive-datetime", value.isoformat())
        u = value.astimezone(UTC)
        plain = datetime(u.year, u.month, u.day, u.hour, u.minute, u.second, u.microsecond, tzinfo=UTC)
        # Firestore's DatetimeWithNanoseconds may carry sub-microsecond digits; trust them only when they agree
        # with the microseconds (built from plain datetime arguments, its `nanosecond` reads 0).
        nanosecond = getattr(value, "nanosecond", None)
        if not isinstance(nanosecond, int) or nanosecond // 1000 != u.microsecond:
            nanosecond = u.microsecond * 1000
        return ("timestamp", plain, nanosecond)
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((str(k), normalize_value(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("array", tuple(normalize_value(v) for v in value))
    return (type(value).__name__, repr(value))


def normalize_documents(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {path: normalize_value(doc) for path, doc in docs.items()}


# --- the search ------------------------------------------------------------------------------------


@attrs.frozen(eq=False)
class _Search:
    status: str
    order: tuple[int, ...]  # ok: the linearization; otherwise the best prefix
    state: Any  # the state after `order`
    steps: int


def _search(
    calls: tuple[Call, ...],
    initial: Any,
    step: StepFn,
    budget: int,
    final_ok: Callable[[Any], bool],
    commutes: list[bool],
) -> _Search:
    """Search a linearization of `calls` (sorted by invocation) from `initial`; pure and deterministic."""
    n = len(calls)
    ops = [c.op for c in calls]
    definite = [c.outcome.definite for c in calls]
    any_commutes = any(commutes)
    observed = [c.outcome.observed if c.outcome.definite else None for c in calls]
    bits = [1 << i for i in range(n)]

    # Events: (time, kind, index); invocations (kind 0) sort before completions (kind 1) at equal times.
    events = [(c.invoked_at, 0, i) for i, c in enumerate(calls)]
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
    call_of = [i for _t, _kind, i in events] + [-1, -1]
    call_event = [0] * n
    return_event = [-1] * n
    for e, (_t, kind, i) in enumerate(events):
        if kind == 0:
            call_event[i] = e
        else:
            return_event[i] = e

    def lift(i: int) -> None:
        e = call_event[i]
        nxt[prv[e]] = nxt[e]
        prv[nxt[e]] = prv[e]
        r = return_event[i]
        if r >= 0:
            nxt[prv[r]] = nxt[r]
            prv[nxt[r]] = prv[r]

    def unlift(i: int) -> None:
        r = return_event[i]
        if r >= 0:
            nxt[prv[r]] = r
            prv[nxt[r]] = r
        e = call_event[i]
        nxt[prv[e]] = e
        prv[nxt[e]] = e

    memo: dict[tuple[int, Any], tuple[Any, bool]] = {}

    def attempt(state: Any, i: int) -> tuple[Any, bool]:
        key = (i, state)
        found = memo.get(key)
        if found is None:
            new_state, result = step(state, ops[i])
            found = (new_state, result.matches(observed[i]) if definite[i] else True)
            memo[key] = found
        return found

    state = initial
    linearized = 0
    remaining = sum(definite)
    n_definite = remaining
    stack_call: list[int] = []
    stack_state: list[Any] = []
    stack_greedy: list[bool] = []
    cache: set[tuple[int, Any]] = set()
    steps = 0
    best_score = (-1, -1)
    best_order: tuple[int, ...] = ()
    best_state = initial
    arrived = True
    entry = end

    while True:
        if arrived:
            arrived = False
            score = (n_definite - remaining, len(stack_call))
            if score > best_score:
                best_score, best_order, best_state = score, tuple(stack_call), state
            if remaining == 0 and final_ok(state):
                return _Search(OK, tuple(stack_call), state, steps)
            entry = nxt[head]
            if any_commutes:
                greedy = -1
                e = entry
                while not stops[e]:
                    i = call_of[e]
                    if definite[i] and commutes[i]:
                        steps += 1
                        if steps > budget:
                            return _Search(UNKNOWN, best_order, best_state, budget)
                        new_state, matched = attempt(state, i)
                        if matched and new_state is state:
                            greedy = i
                            break
                    e = nxt[e]
                if greedy >= 0:
                    key = (linearized | bits[greedy], state)
                    if key in cache:
                        entry = end  # that child already failed, so this node fails
                    else:
                        cache.add(key)
                        stack_call.append(greedy)
                        stack_state.append(state)
                        stack_greedy.append(True)
                        linearized |= bits[greedy]
                        lift(greedy)
                        remaining -= 1
                        arrived = True
                        continue
        if stops[entry]:
            if not stack_call:
                return _Search(ILLEGAL, best_order, best_state, steps)
            i = stack_call.pop()
            state = stack_state.pop()
            was_greedy = stack_greedy.pop()
            unlift(i)
            linearized &= ~bits[i]
            remaining += definite[i]
            entry = end if was_greedy else nxt[call_event[i]]
            continue
        i = call_of[entry]
        steps += 1
        if steps > budget:
            return _Search(UNKNOWN, best_order, best_state, budget)
        new_state, matched = attempt(state, i)
        if matched and (new_state is not state or definite[i]):
            key = (linearized | bits[i], new_state)
            if key not in cache:
                cache.add(key)
                stack_call.append(i)
                stack_state.append(state)
                stack_greedy.append(False)
                state = new_state
                linearized |= bits[i]
                lift(i)
                remaining -= definite[i]
                arrived = True
                continue
        entry = nxt[entry]


# --- partitions and the public entry point ---------------------------------------------------------


def check(
    history: History,
    *,
    plugin: SystemPlugin = JOURNAL,
    step: StepFn | None = None,
    initial_state: Any = None,
    budget: int = DEFAULT_BUDGET,
    final_documents: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    documents_of: DocumentsFn | None = None,
    commute_read_only: bool | None = None,
) -> Verdict:
    """Check a history; pure and deterministic.

    `final_documents` (default: `history.final_documents`) maps a partition (the journal's: a command key
    hash) to every document stored there; partitions it leaves out are not compared. `budget` bounds
    placement attempts per partition. `step` (default: the plug-in's) may be replaced by a broken model;
    `documents_of(state)` (default: the plug-in's documents of the partition) likewise. `commute_read_only`
    (default: for each call, `plugin.commutes_when_read_only(op)`) relies on the model property stated in the
    module docstring, which holds for the four journal calls (histories never hold `InjectFault`); pass False
    for a step function without it.
    """
    if budget < 0:
        raise ValueError("budget must be >= 0")
    step = plugin.step if step is None else step
    initial = plugin.initial_state() if initial_state is None else initial_state
    if final_documents is None:
        final_documents = history.final_documents or {}

    groups: dict[str, list[Call]] = {}
    for call in sorted(history.calls, key=lambda c: (c.invoked_at, c.id)):
        groups.setdefault(plugin.partition_of(call.op), []).append(call)
    for key_hash in sorted(final_documents):
        groups.setdefault(key_hash, [])

    partitions: list[PartitionVerdict] = []
    final_state = initial
    for key_hash, group in groups.items():
        calls = tuple(group)
        start = plugin.restrict(initial, key_hash)
        expected = final_documents.get(key_hash)
        if documents_of is None:

            def docs_of(state: Any, key: str = key_hash) -> dict[str, dict[str, Any]]:
                return plugin.documents_of(state, key)

        else:
            docs_of = documents_of
        if expected is None:

            def final_ok(_state: Any) -> bool:
                return True

        else:
            wanted = normalize_documents(expected)
            seen: dict[Any, bool] = {}

            def final_ok(state: Any, wanted=wanted, seen=seen, docs_of=docs_of) -> bool:
                verdict = seen.get(state)
                if verdict is None:
                    verdict = seen[state] = normalize_documents(docs_of(state)) == wanted
                return verdict

        if commute_read_only is None:
            commutes = [plugin.commutes_when_read_only(call.op) for call in calls]
        else:
            commutes = [commute_read_only] * len(calls)
        found = _search(calls, start, step, budget, final_ok, commutes)
        order = tuple(calls[i] for i in found.order)
        if found.status == OK:
            placed = set(found.order)
            omitted = tuple(c for i, c in enumerate(calls) if i not in placed)
            partitions.append(PartitionVerdict(key_hash, OK, order, omitted, found.state, found.steps))
            final_state = plugin.merge(final_state, found.state, key_hash)
            continue
        explanation = None
        if found.status == ILLEGAL:
            explanation = explain_partition(
                key_hash,
                calls,
                start,
                found.order,
                found.state,
                step,
                expected_documents=expected,
                documents_of=docs_of,
                normalize=normalize_value,
                plugin=plugin,
            )
        partitions.append(PartitionVerdict(key_hash, found.status, order, (), None, found.steps, explanation))

    statuses = {p.status for p in partitions}
    status = ILLEGAL if ILLEGAL in statuses else UNKNOWN if UNKNOWN in statuses else OK
    return Verdict(status, tuple(partitions), final_state if status == OK else None, budget, plugin)
