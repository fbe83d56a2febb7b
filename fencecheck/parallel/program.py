"""Parallel programs, as data: a sequential prefix, then 2 to 4 branches of journal calls released together.

This is the shape of Erlang QuickCheck / PropEr `parallel_commands` and quickcheck-state-machine: the prefix
runs one call at a time (each call checked against the model), then every branch runs its calls in order
while the branches race each other. Every call carries its own clock reading (`op.now`), so a program
replays exactly; a call marked `commit_failure_first` makes its first attempt on a client whose commit the
emulator rejects (see `fencecheck.race.Caller`).

Pure: no I/O. `prefix_state` steps the model; `contested_keys` says which command keys the branches fight
over (the strategy only generates programs that have one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from fencecheck.history_codec import datetime_from_json, datetime_to_json, op_from_json, op_to_json
from model.journal import Acquire, Complete, Fail, JournalState, Register, Result, describe_op, step

JournalOp = Register | Acquire | Complete | Fail
PROGRAM_FORMAT = "fencecheck.parallel-program/1"
T0 = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
_JOURNAL_OPS = (Register, Acquire, Complete, Fail)


def _journal_op(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, _JOURNAL_OPS):
        raise TypeError(f"{attribute.name} must be a journal call (register, acquire, complete, fail)")
    if value.commit_fails:
        raise ValueError("use commit_failure_first, not an op with commit_fails")


@attrs.frozen
class BranchCall:
    """One call of a branch. `commit_failure_first`: its first attempt's commit is rejected by the emulator
    (atomically), the whole-call retry runs on the plain client."""

    op: JournalOp = attrs.field(validator=_journal_op)
    commit_failure_first: bool = False


def _ops(value: Iterable[JournalOp]) -> tuple[JournalOp, ...]:
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
    prefix: tuple[JournalOp, ...] = attrs.field(converter=_ops)
    branches: tuple[tuple[BranchCall, ...], ...] = attrs.field(converter=_branches)
    epoch: datetime = T0  # times in descriptions are shown relative to it

    def __attrs_post_init__(self) -> None:
        for op in self.prefix:
            _journal_op(self, attrs.fields(ParallelProgram).prefix, op)
        if not self.branches or any(not branch for branch in self.branches):
            raise ValueError("a parallel program needs at least one branch, and no branch may be empty")
        for branch in self.branches:
            for call in branch:
                if not isinstance(call, BranchCall):
                    raise TypeError("branches hold BranchCall values")

    @property
    def lanes(self) -> tuple[str, ...]:
        """The caller name of each branch in recorded histories: b1, b2, ..."""
        return tuple(f"b{i}" for i in range(1, len(self.branches) + 1))

    @property
    def size(self) -> ProgramSize:
        return ProgramSize(len(self.branches), sum(len(b) for b in self.branches), len(self.prefix))

    def prefix_state(self) -> tuple[JournalState, tuple[Result, ...]]:
        """The model state after the prefix, and the model's answer to each prefix call."""
        state = JournalState.empty()
        results = []
        for op in self.prefix:
            state, result = step(state, op)
            results.append(result)
        return state, tuple(results)

    def keys(self) -> tuple[str, ...]:
        """Command key hashes the branches call, in order of first appearance."""
        return tuple(dict.fromkeys(call.op.command.key_hash for branch in self.branches for call in branch))

    def describe(self) -> str:
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
        return {
            "format": PROGRAM_FORMAT,
            "epoch": datetime_to_json(self.epoch),
            "prefix": [op_to_json(op) for op in self.prefix],
            "branches": [
                [{"op": op_to_json(call.op), "commitFailureFirst": call.commit_failure_first} for call in branch]
                for branch in self.branches
            ],
        }

    @classmethod
    def from_json(cls, data: object) -> ParallelProgram:
        if not isinstance(data, Mapping) or data.get("format") != PROGRAM_FORMAT:
            raise ValueError(f"not a parallel program: expected format {PROGRAM_FORMAT!r}")
        extra = sorted(set(data) - {"format", "epoch", "prefix", "branches"})
        if extra:
            raise ValueError(f"parallel program: unknown keys {extra}")
        if not isinstance(data.get("prefix"), list) or not isinstance(data.get("branches"), list):
            raise ValueError("parallel program: prefix and branches must be JSON arrays")
        branches = []
        for raw in data["branches"]:
            if not isinstance(raw, list):
                raise ValueError("parallel program: each branch must be a JSON array")
            calls = []
            for item in raw:
                if not isinstance(item, Mapping) or set(item) != {"op", "commitFailureFirst"}:
                    raise ValueError('a branch call must be {"op": ..., "commitFailureFirst": bool}')
                if not isinstance(item["commitFailureFirst"], bool):
                    raise ValueError("commitFailureFirst must be a boolean")
                calls.append(BranchCall(op_from_json(item["op"]), item["commitFailureFirst"]))
            branches.append(tuple(calls))
        return cls(
            tuple(op_from_json(op) for op in data["prefix"]),
            tuple(branches),
            datetime_from_json(data["epoch"]),
        )


def contested_keys(program: ParallelProgram, state: JournalState | None = None) -> tuple[str, ...]:
    """Keys that two or more branches call while at least one of those branches writes to it.

    "Writes" is judged by running each branch alone from the state after the prefix (`state`, computed when
    not given): a branch whose call on the key changes the model state there competes with every other
    branch that reads or writes the key. A race between read-only calls proves little; this is what the
    strategy insists on.
    """
    if state is None:
        state, _results = program.prefix_state()
    touched: dict[str, set[int]] = {}
    writing: dict[str, set[int]] = {}
    for index, branch in enumerate(program.branches):
        solo = state
        for call in branch:
            h = call.op.command.key_hash
            touched.setdefault(h, set()).add(index)
            after, _result = step(solo, call.op)
            if after is not solo:
                writing.setdefault(h, set()).add(index)
            solo = after
    return tuple(h for h, branches in touched.items() if len(branches) >= 2 and writing.get(h))
