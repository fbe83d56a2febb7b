"""Parallel programs, as data: a sequential prefix, then 2 to 4 branches of calls of one system released together.

This is the shape of Erlang QuickCheck / PropEr `parallel_commands` and quickcheck-state-machine: the prefix
runs one call at a time (each call checked against the model), then every branch runs its calls in order
while the branches race each other. Every call carries its own clock reading, so a program replays exactly;
a call marked `commit_failure_first` makes its first attempt on a client whose commit the emulator rejects
(only for a system whose `ParallelSpec` has a `CommitFailure`: the journal's).

A program names its system (`system`, a plug-in name: "journal", "lantern"); the plug-in is found through the
registry (`fencecheck.plugin.registry.plugin`) and gives the model, the partitions and the JSON form of its operations.

Pure: no I/O. `prefix_state` steps the model; `contested_keys` says which partitions the branches fight over
(a strategy only generates programs that have one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from fencecheck.checker.history_codec import datetime_from_json, datetime_to_json
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import UNNAMED_SYSTEM

PROGRAM_FORMAT = "fencecheck.parallel-program/2"
# Version 1 (before the lantern had parallel programs) named no system: every such program is the journal's,
# its operations written inline (history_codec's journal form, which the journal's ops_from_json also reads).
PROGRAM_FORMAT_V1 = "fencecheck.parallel-program/1"
V1_SYSTEM = UNNAMED_SYSTEM
T0 = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)


def plugin_of(name: str) -> SystemPlugin:
    from fencecheck.plugin.registry import plugin  # the registry imports the plug-ins: found by name, on first use

    return plugin(name)


@attrs.frozen
class BranchCall:
    """One call of a branch. `commit_failure_first`: its first attempt's commit is rejected by the emulator
    (atomically), the whole-call retry runs on the plain client."""

    op: Any
    commit_failure_first: bool = False


def trim_branches(branches: list[list[BranchCall]], max_calls: int) -> tuple[tuple[BranchCall, ...], ...]:
    """Cut calls from the ends of the last branches until at most `max_calls` remain (each keeps one): how a
    plug-in's strategy keeps its drawn branches within the engine's `max_concurrent_ops`. Changes `branches`."""
    excess = sum(len(branch) for branch in branches) - max_calls
    for branch in reversed(branches):
        cut = min(excess, len(branch) - 1)
        if cut > 0:
            del branch[len(branch) - cut :]
            excess -= cut
    return tuple(tuple(branch) for branch in branches)


def _ops(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


def _branches(value: Iterable[Iterable[BranchCall]]) -> tuple[tuple[BranchCall, ...], ...]:
    return tuple(tuple(branch) for branch in value)


@attrs.frozen
class ProgramSize:
    """How big a program is: what shrinking reduces, and what the report shows for a shrunk counterexample."""

    branches: int
    concurrent_ops: int
    prefix_ops: int

    @property
    def ops(self) -> int:
        return self.concurrent_ops + self.prefix_ops

    def __str__(self) -> str:
        return f"{self.branches} branches, {self.concurrent_ops} concurrent ops, {self.prefix_ops} prefix ops"


@attrs.frozen
class ParallelProgram:
    prefix: tuple[Any, ...] = attrs.field(converter=_ops)
    branches: tuple[tuple[BranchCall, ...], ...] = attrs.field(converter=_branches)
    epoch: datetime = T0  # times in descriptions are shown relative to it
    system: str = attrs.field(kw_only=True)  # the plug-in's name

    def __attrs_post_init__(self) -> None:
        plugin = self.plugin  # an unknown system is an error here, not at run time
        if not self.branches or any(not branch for branch in self.branches):
            raise ValueError("a parallel program needs at least one branch, and no branch may be empty")
        for op in self.prefix:
            _check_op(plugin, op, "prefix")
        commit_failures = plugin.parallel is not None and plugin.parallel().commit_failure is not None
        for branch in self.branches:
            for call in branch:
                if not isinstance(call, BranchCall):
                    raise TypeError("branches hold BranchCall values")
                _check_op(plugin, call.op, "branch")
                if call.commit_failure_first and not commit_failures:
                    raise ValueError(f"the {self.system} has no commit-failing client: commit_failure_first "
                                     "is not available")

    @property
    def plugin(self) -> SystemPlugin:
        return plugin_of(self.system)

    @property
    def lanes(self) -> tuple[str, ...]:
        """The caller name of each branch in recorded histories: b1, b2, ..."""
        return tuple(f"b{i}" for i in range(1, len(self.branches) + 1))

    @property
    def size(self) -> ProgramSize:
        return ProgramSize(len(self.branches), sum(len(b) for b in self.branches), len(self.prefix))

    def prefix_state(self) -> tuple[Any, tuple[Any, ...]]:
        """The model state after the prefix, and the model's answer to each prefix call."""
        plugin = self.plugin
        state = plugin.initial_state()
        results = []
        for op in self.prefix:
            state, result = plugin.step(state, op)
            results.append(result)
        return state, tuple(results)

    def keys(self) -> tuple[str, ...]:
        """The partitions the branches call, in order of first appearance."""
        partition_of = self.plugin.partition_of
        return tuple(dict.fromkeys(partition_of(call.op) for branch in self.branches for call in branch))

    def describe(self) -> str:
        describe_op = self.plugin.describe_op
        lines = ["prefix:" if self.prefix else "prefix: (none)"]
        lines += [f"  {i}. {describe_op(op, epoch=self.epoch)}" for i, op in enumerate(self.prefix, 1)]
        for lane, branch in zip(self.lanes, self.branches, strict=True):
            lines.append(f"branch {lane}:")
            for call in branch:
                flag = " [first commit rejected]" if call.commit_failure_first else ""
                lines.append(f"  - {describe_op(call.op, epoch=self.epoch)}{flag}")
        return "\n".join(lines)

    # --- JSON ---------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The plug-in writes the operations (`ops_to_json`, prefix then branch calls in order): its header
        keys (the journal's `commands` table) sit beside `prefix` and `branches`."""
        calls = [call for branch in self.branches for call in branch]
        header, entries = self.plugin.ops_to_json([*self.prefix, *(call.op for call in calls)])
        written = iter(entries[len(self.prefix):])
        return {
            "format": PROGRAM_FORMAT,
            "system": self.system,
            "epoch": datetime_to_json(self.epoch),
            **header,
            "prefix": entries[: len(self.prefix)],
            "branches": [
                [{"op": next(written), "commitFailureFirst": call.commit_failure_first} for call in branch]
                for branch in self.branches
            ],
        }

    @classmethod
    def from_json(cls, data: object) -> ParallelProgram:
        if not isinstance(data, Mapping) or data.get("format") not in (PROGRAM_FORMAT, PROGRAM_FORMAT_V1):
            raise ValueError(f"not a parallel program: expected format {PROGRAM_FORMAT!r} (or the journal's "
                             f"{PROGRAM_FORMAT_V1!r})")
        if data["format"] == PROGRAM_FORMAT_V1:
            system, known = V1_SYSTEM, {"format", "epoch", "prefix", "branches"}
        else:
            system = data.get("system")
            if not isinstance(system, str):
                raise ValueError("parallel program: system must name a plug-in")
            known = {"format", "system", "epoch", "prefix", "branches", *plugin_of(system).history_header_keys}
        plugin = plugin_of(system)
        extra = sorted(set(data) - known)
        if extra:
            raise ValueError(f"parallel program: unknown keys {extra}")
        if not isinstance(data.get("prefix"), list) or not isinstance(data.get("branches"), list):
            raise ValueError("parallel program: prefix and branches must be JSON arrays")
        flags, entries, shape = [], list(data["prefix"]), []
        for raw in data["branches"]:
            if not isinstance(raw, list):
                raise ValueError("parallel program: each branch must be a JSON array")
            shape.append(len(raw))
            for item in raw:
                if not isinstance(item, Mapping) or set(item) != {"op", "commitFailureFirst"}:
                    raise ValueError('a branch call must be {"op": ..., "commitFailureFirst": bool}')
                if not isinstance(item["commitFailureFirst"], bool):
                    raise ValueError("commitFailureFirst must be a boolean")
                flags.append(item["commitFailureFirst"])
                entries.append(item["op"])
        ops = iter(plugin.ops_from_json(data, entries))
        prefix = tuple(next(ops) for _ in data["prefix"])
        calls = iter(BranchCall(op, flag) for op, flag in zip(ops, flags, strict=True))
        branches = tuple(tuple(next(calls) for _ in range(n)) for n in shape)
        return cls(prefix, branches, datetime_from_json(data["epoch"]), system=system)


def _check_op(plugin: SystemPlugin, op: Any, where: str) -> None:
    try:
        plugin.ops_to_json([op])  # the plug-in writes every one of its operations, and nothing else
    except (TypeError, ValueError, AttributeError) as error:
        raise TypeError(f"a {where} call must be a {plugin.name} call: {error}") from None
    if plugin.is_fault(op):
        raise TypeError(f"a {where} call must be a {plugin.name} call, not a fault")
    if plugin.commit_fails(op):
        raise ValueError("use commit_failure_first, not an op with commit_fails")


def contested_keys(program: ParallelProgram, state: Any = None) -> tuple[str, ...]:
    """Partitions that two or more branches call while at least one of those branches writes there.

    "Writes" is judged by running each branch alone from the state after the prefix (`state`, computed when
    not given): a branch whose call changes the model state competes with every other branch that reads or
    writes the partition. A race between read-only calls proves little; this is what the strategies insist on.
    """
    plugin = program.plugin
    if state is None:
        state, _results = program.prefix_state()
    touched: dict[str, set[int]] = {}
    writing: dict[str, set[int]] = {}
    for index, branch in enumerate(program.branches):
        solo = state
        for call in branch:
            key = plugin.partition_of(call.op)
            touched.setdefault(key, set()).add(index)
            after, _result = plugin.step(solo, call.op)
            if after is not solo and after != solo:
                writing.setdefault(key, set()).add(index)
            solo = after
    return tuple(key for key, branches in touched.items() if len(branches) >= 2 and writing.get(key))
