"""Pure linearizability checker for histories of any system, driven by its model's `step` function.

The system is a plug-in (`fencecheck.plugin.SystemPlugin`; the journal's by default): it supplies the model,
how operations map to partitions, and the documents each partition's state predicts.

`check(history)` answers whether the recorded calls could have happened one at a time, each at some instant
between its invocation and its completion, in an order whose model answers are the observed ones (and,
when the history carries the stored documents, whose final model state predicts them exactly).

Algorithm (`fencecheck.linearizability_search`): Wing & Gong's search with Lowe's just-in-time
linearization and memoization of failed (calls linearized, model state) nodes, the way Porcupine's
`checkSingle` does it, with failed nodes also pruning the same node with more indefinite calls placed.

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
- *Exact answers*: a model answer matches an observed one by `plugin.answer_matches` (the lockstep's test:
  exact types, key order), so `fenceEpoch: True` or reordered keys are illegal here as they are there.
- *Budget*: the number of placement attempts per partition. Exhausting it answers "unknown". No wall clock
  is read: the verdict is a deterministic function of the history and the budget.
- *Verdict first*: the check stops at the first illegal partition (in order of first invocation) and
  reports the rest as not checked; `full=True` searches them all. Either way the verdict and the first
  illegal partition's explanation are the same. `processes=N` searches partitions in N forked processes.

On "illegal" the verdict explains itself (see `linearizability_explain`): the longest linearizable prefix
found (most definite calls, then most calls), the first call that cannot be placed after it (the pending
definite call that completed first: every linearization must place it before anything invoked after that
completion) with the model's answer there, or the final documents' differences, and a per-caller timeline.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from .history import Call, History
from .linearizability_explain import Explanation, explain_partition, summarize
from .linearizability_search import ILLEGAL, OK, UNKNOWN, Found, MatchFn, StepFn, search
from .plugin import SystemPlugin
from .plugins.journal import JOURNAL

NOT_CHECKED = "not checked"  # a partition after the first illegal one, when the check stopped there
DEFAULT_BUDGET = 1_000_000

DocumentsFn = Callable[[Any], dict[str, dict[str, Any]]]

__all__ = [
    "DEFAULT_BUDGET",
    "ILLEGAL",
    "NOT_CHECKED",
    "OK",
    "UNKNOWN",
    "PartitionVerdict",
    "Verdict",
    "check",
    "normalize_documents",
    "normalize_value",
]


@attrs.frozen(eq=False)
class PartitionVerdict:
    """The verdict for one partition (the journal's: a command key).

    `status` is ok, illegal, unknown or not checked (after the first illegal partition, when the check
    stopped there: then `order` is empty and `steps` 0). `order` is the linearization found (ok), the
    longest linearizable prefix (illegal), or the longest prefix reached before the budget ran out
    (unknown). `omitted` lists the indefinite calls left out of an
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
    def not_checked(self) -> tuple[PartitionVerdict, ...]:
        """The partitions left unsearched because the check stopped at the first illegal one."""
        return tuple(p for p in self.partitions if p.status == NOT_CHECKED)

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


# --- partitions and the public entry point ---------------------------------------------------------


@attrs.frozen(eq=False)
class _Partition:
    """One partition's search problem, everything `search` needs (a forked worker reads it from `_TASKS`)."""

    key_hash: str
    calls: tuple[Call, ...]
    start: Any
    step: StepFn
    budget: int
    final_ok: Callable[[Any], bool]
    commutes: list[bool]
    matches: MatchFn

    def search(self) -> Found:
        return search(self.calls, self.start, self.step, self.budget, self.final_ok, self.commutes, self.matches)


_TASKS: list[_Partition] = []  # the partitions of the check under way, for workers forked from it


def _search_task(index: int) -> tuple[int, Found]:
    return index, _TASKS[index].search()


def _searches(tasks: list[_Partition], *, full: bool, processes: int) -> Iterator[Found]:
    """Each partition's search result, in partition order; the first illegal one ends it unless `full`."""
    if processes <= 1 or len(tasks) <= 1:
        for task in tasks:
            found = task.search()
            yield found
            if found.status == ILLEGAL and not full:
                return
        return
    # Forked workers inherit the tasks (step functions and plug-ins need not be picklable); results come back
    # in partition order, so the partitions reported are the ones a sequential check reports.
    global _TASKS
    _TASKS = tasks
    try:
        with multiprocessing.get_context("fork").Pool(min(processes, len(tasks))) as pool:
            for _index, found in pool.imap(_search_task, range(len(tasks))):
                yield found
                if found.status == ILLEGAL and not full:
                    return  # leaving the block terminates the workers still searching
    finally:
        _TASKS = []


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
    full: bool = False,
    processes: int = 1,
) -> Verdict:
    """Check a history; pure and deterministic.

    Partitions are searched in order of their first invocation. By default the check stops at the first
    illegal one, and reports the partitions after it as not checked (`NOT_CHECKED`): the verdict comes
    first. `full=True` searches every partition, as a report that explains each one needs; the verdict and
    the first illegal partition's explanation are the same either way. `processes` > 1 searches partitions
    in that many forked processes, with the same result as one process.

    `final_documents` (default: `history.final_documents`) maps a partition (the journal's: a command key
    hash) to every document stored there; partitions it leaves out are not compared. `budget` bounds
    placement attempts per partition. `step` (default: the plug-in's) may be replaced by a broken model;
    `documents_of(state)` (default: the plug-in's documents of the partition) likewise. Answers are compared
    by `plugin.answer_matches` (exact types and key order). `commute_read_only` (default: for each call,
    `plugin.commutes_when_read_only(op)`) relies on the model property stated in the module docstring, which
    holds for the four journal calls (histories never hold `InjectFault`); pass False for a step function
    without it.
    """
    if budget < 0:
        raise ValueError("budget must be >= 0")
    if processes < 1:
        raise ValueError("processes must be >= 1")
    step = plugin.step if step is None else step
    initial = plugin.initial_state() if initial_state is None else initial_state
    if final_documents is None:
        final_documents = history.final_documents or {}

    groups: dict[str, list[Call]] = {}
    for call in sorted(history.calls, key=lambda c: (c.invoked_at, c.id)):
        groups.setdefault(plugin.partition_of(call.op), []).append(call)
    for key_hash in sorted(final_documents):
        groups.setdefault(key_hash, [])

    tasks: list[_Partition] = []
    documents: dict[str, DocumentsFn] = {}
    for key_hash, group in groups.items():
        calls = tuple(group)
        expected = final_documents.get(key_hash)
        if documents_of is None:

            def docs_of(state: Any, key: str = key_hash) -> dict[str, dict[str, Any]]:
                return plugin.documents_of(state, key)

        else:
            docs_of = documents_of
        documents[key_hash] = docs_of
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
        start = plugin.restrict(initial, key_hash)
        tasks.append(_Partition(key_hash, calls, start, step, budget, final_ok, commutes, plugin.answer_matches))

    partitions: list[PartitionVerdict] = []
    final_state = initial
    for task, found in zip(tasks, _searches(tasks, full=full, processes=processes), strict=False):
        calls, key_hash = task.calls, task.key_hash
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
                task.start,
                found.order,
                found.state,
                step,
                expected_documents=final_documents.get(key_hash),
                documents_of=documents[key_hash],
                normalize=normalize_value,
                plugin=plugin,
            )
        partitions.append(PartitionVerdict(key_hash, found.status, order, (), None, found.steps, explanation))
    for task in tasks[len(partitions) :]:
        partitions.append(PartitionVerdict(task.key_hash, NOT_CHECKED, (), (), None, 0))

    statuses = {p.status for p in partitions}
    status = ILLEGAL if ILLEGAL in statuses else UNKNOWN if UNKNOWN in statuses else OK
    return Verdict(status, tuple(partitions), final_state if status == OK else None, budget, plugin)
