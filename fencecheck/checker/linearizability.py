"""Pure linearizability checker for histories of any system, driven by its model's `step` function.

The system is a plug-in (`fencecheck.plugin.SystemPlugin`: `plugin=`, by default the one the history names):
it supplies the model, how operations map to partitions, and the documents each partition's state predicts.

`check(history)` answers whether the recorded calls could have happened one at a time, each at some instant
between its invocation and its completion, in an order whose model answers are the observed ones (and,
when the history carries the stored documents, whose final model state predicts them exactly).

Algorithm (`fencecheck.checker.search`): Wing & Gong's search with Lowe's just-in-time
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
- *Verdict first*: partitions are searched in rounds of doubling attempts (100, 200, 400, ... up to the
  budget), the way Porcupine runs them side by side: the check stops after the first round in which a
  partition is illegal and reports the undecided ones as not checked. So one hard partition does not hold
  back the verdict that an easy illegal one gives. `full=True` searches every partition to the end. Either
  way the verdict and the first illegal partition's explanation are the same. `processes=N` searches
  partitions in N forked processes with the same result, when the calling process runs no other thread
  (`fork_is_safe`); beside other threads it searches in this process and says so (`Verdict.processes`).

On "illegal" the verdict explains itself (see `linearizability_explain`): the longest linearizable prefix
found (most definite calls, then most calls), the first call that cannot be placed after it (the pending
definite call that completed first: every linearization must place it before anything invoked after that
completion) with the model's answer there, or the final documents' differences, and a per-caller timeline.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Generator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from fencecheck.checker.explain import Explanation, explain_partition
from fencecheck.checker.fork import forked, in_process
from fencecheck.checker.history import Call, History
from fencecheck.checker.search import ILLEGAL, OK, UNKNOWN, Found, MatchFn, StepFn, search, stepwise
from fencecheck.plugin.records import SystemPlugin

NOT_CHECKED = "not checked"  # a partition after the first illegal one, when the check stopped there
DEFAULT_BUDGET = 1_000_000
FIRST_CAP = 100  # attempts per partition in the first round of a check that stops at the first illegal one

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
    "fork_is_safe",
    "normalize_documents",
    "normalize_value",
]


@attrs.frozen(eq=False)
class PartitionVerdict:
    """The verdict for one partition (the journal's: a command key).

    `status` is ok, illegal, unknown or not checked (still undecided when the check stopped at the first
    illegal partition: then `order` is empty and `steps` 0). `order` is the linearization found (ok), the
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
    plugin: SystemPlugin
    processes: int = 1  # how many processes searched: 1 when `processes` > 1 was asked beside other threads

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
    def first_illegal(self) -> PartitionVerdict | None:
        """The illegal partition found first: in the earliest round (`round_of` its attempts), then in order
        of first invocation. The same whether the check stopped there or went on (`full`)."""
        illegal = [(round_of(p.steps, self.budget), k) for k, p in enumerate(self.partitions) if p.status == ILLEGAL]
        return self.partitions[min(illegal)[1]] if illegal else None

    @property
    def explanation(self) -> Explanation | None:
        """The explanation of the first illegal partition (`first_illegal`)."""
        first = self.first_illegal
        return None if first is None else first.explanation

    def explain(self) -> str:
        return summarize(self)


# --- verdict summaries: a verdict's own text, so it lives with the verdict (linearizability_explain
# explains a partition and knows nothing of verdicts) -------------------------------------------


def summarize(verdict: Verdict) -> str:
    parts = verdict.partitions
    noun = verdict.plugin.partition_noun
    n_calls = sum(len(p.order) + len(p.omitted) for p in parts if p.status == "ok")
    if verdict.status == "ok":
        applied = sum(1 for p in parts for c in p.order if not c.outcome.definite)
        omitted = sum(len(p.omitted) for p in parts)
        return (
            f"ok: {n_calls} calls over {len(parts)} {noun}(s) are linearizable"
            f" ({verdict.steps} placement attempts); indefinite calls applied: {applied}, left out: {omitted}"
        )
    if verdict.status == "unknown":
        unknown = [p for p in parts if p.status == "unknown"]
        keys = ", ".join(f"{p.key_hash[:8]} (best prefix {len(p.order)} calls)" for p in unknown)
        return (
            f"unknown: the search budget of {verdict.budget} placement attempts per {noun} ran out"
            f" for {keys}; no partition is illegal"
        )
    illegal = [p for p in parts if p.status == "illegal"]
    unchecked = len(verdict.not_checked)
    if unchecked:
        text = [
            f"illegal: {len(illegal)} of {len(parts) - unchecked} {noun}(s) checked are not linearizable;"
            f" {unchecked} not checked (the check stops at the first illegal {noun}; full mode checks every one)."
        ]
    else:
        text = [f"illegal: {len(illegal)} of {len(parts)} {noun}(s) are not linearizable."]
    first = verdict.first_illegal
    text.append(first.explanation.text() if first.explanation is not None else "(no explanation)")
    if len(illegal) > 1:
        text.append(f"Other illegal {noun}s: " + ", ".join(p.key_hash[:8] for p in illegal if p is not first))
    return "\n".join(text)


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

    def search(self, budget: int) -> Found:
        return search(self.calls, self.start, self.step, budget, self.final_ok, self.commutes, self.matches)

    def stepwise(self) -> Generator[int, int, Found]:
        return stepwise(self.calls, self.start, self.step, self.budget, self.final_ok, self.commutes, self.matches)


def caps(budget: int) -> list[int]:
    """The attempts each partition may have made by the end of each round: 100, 200, 400, ... and the budget."""
    out = []
    cap = FIRST_CAP
    while cap < budget:
        out.append(cap)
        cap *= 2
    return [*out, budget]


def round_of(steps: int, budget: int) -> int:
    """The round in which a search that ends after `steps` attempts ends."""
    return next(k for k, cap in enumerate(caps(budget)) if steps <= cap)


def fork_is_safe() -> bool:
    """Whether this process runs a single thread, the only state in which forking a worker is safe. A child
    forked beside other threads inherits every lock they held at that instant, never released: a parallel check
    in the unit suite, forked while gRPC's threads were live, hung for good. Linux counts native threads (gRPC's
    own included) in /proc; elsewhere only Python's threads are known."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return threading.active_count() == 1


def _searches(tasks: list[_Partition], *, budget: int, full: bool, processes: int) -> list[Found | None]:
    """Each partition's search result (None: not checked), searched in rounds. In round k every partition
    not yet decided searches on up to `caps(budget)[k]` attempts; unless `full`, the first round in which one
    is illegal is the last. So the verdict comes as soon as the quickest illegal partition is found, whatever
    its place, and which partitions are decided depends on the history and the budget alone."""
    results: list[Found | None] = [None] * len(tasks)
    searches = [task.stepwise() for task in tasks]
    with forked(searches, processes) if processes > 1 else in_process(searches) as round_:
        for cap in [budget] if full else caps(budget):
            for k, found in round_(cap).items():
                results[k] = found
            if all(r is not None for r in results) or any(r is not None and r.status == ILLEGAL for r in results):
                break
    return results


def check(
    history: History,
    *,
    plugin: SystemPlugin | None = None,
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

    By default the check stops after the first round (`caps`) in which a partition is illegal, and reports
    the partitions still undecided as not checked (`NOT_CHECKED`): the verdict comes first. `full=True`
    searches every partition, as a report that explains each one needs; the verdict and the first illegal
    partition's explanation (`Verdict.first_illegal`) are the same either way. `processes` > 1 searches
    partitions in that many forked processes, with the same result as one process; only from a process that runs
    no other thread (`fork_is_safe`), else in this one with a `RuntimeWarning` (`Verdict.processes` tells).

    `final_documents` (default: `history.final_documents`) maps a partition (the journal's: a command key
    hash) to every document stored there; partitions it leaves out are not compared. `budget` bounds
    placement attempts per partition. `plugin` defaults to the history's own (`history.plugin`, the system it
    names). `step` (default: the plug-in's) may be replaced by a broken model;
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
    plugin = history.plugin if plugin is None else plugin
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

    searching = min(processes, len(tasks)) if processes > 1 and len(tasks) > 1 else 1
    if searching > 1 and not fork_is_safe():
        warnings.warn(
            f"the check searches in this process, not in {searching}: other threads run here, and a process "
            "forked beside them can hang on a lock one of them held; run a parallel check from a process of "
            "one thread (as `fencecheck check --processes` is)",
            RuntimeWarning,
            stacklevel=2,
        )
        searching = 1
    partitions: list[PartitionVerdict] = []
    final_state = initial
    for task, found in zip(tasks, _searches(tasks, budget=budget, full=full, processes=searching), strict=True):
        calls, key_hash = task.calls, task.key_hash
        if found is None:
            partitions.append(PartitionVerdict(key_hash, NOT_CHECKED, (), (), None, 0))
            continue
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

    statuses = {p.status for p in partitions}
    status = ILLEGAL if ILLEGAL in statuses else UNKNOWN if UNKNOWN in statuses else OK
    return Verdict(status, tuple(partitions), final_state if status == OK else None, budget, plugin, searching)
