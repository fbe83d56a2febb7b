"""The executable model of a compare-and-set register per key: pure, frozen values only.

Three operations, each on one key (a key is a partition: no operation reaches across keys):

- `Read(key)` answers `{"outcome": "read", "value": v}` (None for a key never written) and changes nothing;
- `Write(key, value)` stores `value` and answers `{"outcome": "written", "value": value}`;
- `CompareAndSet(key, expected, new)` stores `new` only if the key holds `expected`, and answers
  `{"outcome": "swapped", "value": new}`; otherwise it changes nothing and answers
  `{"outcome": "mismatch", "value": v}` with the value it found.

(`outcome` first: fencecheck's explanations name an answer by its `outcome`.)

`step(state, op) -> (state, result)` never mutates: states and results are frozen attrs values, hashable, so
the checker can memoize states it has seen.
"""

from __future__ import annotations

from typing import Any

import attrs

UNAVAILABLE = "cas_unavailable"  # the answer meaning "may or may not have applied"


@attrs.frozen
class Read:
    key: str


@attrs.frozen
class Write:
    key: str
    value: int


@attrs.frozen
class CompareAndSet:
    key: str
    expected: int | None
    new: int


Operation = Read | Write | CompareAndSet


@attrs.frozen
class Transition:
    """One row of the model's transition table: which branch of `step` answered."""

    id: str
    reachable: bool = True


TRANSITIONS = (Transition("read"), Transition("write"), Transition("cas_swapped"), Transition("cas_mismatch"))


@attrs.frozen
class CasState:
    """(key, value) pairs sorted by key: canonical, so equal states are equal values."""

    values: tuple[tuple[str, int], ...] = ()

    @classmethod
    def empty(cls) -> CasState:
        return cls()

    def get(self, key: str) -> int | None:
        return dict(self.values).get(key)

    def with_value(self, key: str, value: int) -> CasState:
        values = dict(self.values)
        values[key] = value
        return CasState(tuple(sorted(values.items())))

    def keys(self) -> tuple[str, ...]:
        return tuple(key for key, _value in self.values)


@attrs.frozen
class Result:
    """What a step answers. `output` is the JSON an implementation must answer exactly."""

    transition: str
    wrote: bool
    output_json: tuple[tuple[str, Any], ...]  # the output's (key, value) pairs, in order: hashable
    code: str | None = None  # no error answers in this contract

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def output(self) -> dict[str, Any] | None:
        return dict(self.output_json)

    def matches(self, observed: Any) -> bool:
        # Exact: True is not 1 (a Python `==` would say it is), and the keys come in the contract's order.
        return (isinstance(observed, dict) and list(observed) == [key for key, _ in self.output_json]
                and all(type(observed[key]) is type(value) and observed[key] == value
                        for key, value in self.output_json))


def step(state: CasState, op: Operation) -> tuple[CasState, Result]:
    current = state.get(op.key)
    if isinstance(op, Read):
        return state, Result("read", False, (("outcome", "read"), ("value", current)))
    if isinstance(op, Write):
        return state.with_value(op.key, op.value), Result("write", True, (("outcome", "written"), ("value", op.value)))
    if isinstance(op, CompareAndSet):
        if current == op.expected:
            return state.with_value(op.key, op.new), Result("cas_swapped", True,
                                                            (("outcome", "swapped"), ("value", op.new)))
        return state, Result("cas_mismatch", False, (("outcome", "mismatch"), ("value", current)))
    raise TypeError(f"not a compare-and-set register operation: {type(op).__name__}")


def documents(state: CasState, key: str) -> dict[str, dict[str, Any]]:
    """The stored documents of one key: `casRegisters/{key}` holding its value, none for a key never written."""
    value = state.get(key)
    return {} if value is None else {f"casRegisters/{key}": {"value": value}}


def invariant_violations(stored: dict[str, dict[str, Any]]) -> list[str]:
    """REG-1 on stored documents (path -> data), whatever the order of the calls that wrote them: every document
    is a register `casRegisters/<key>` holding exactly `{"value": <int>}` (True is no int here)."""
    return [f"REG-1: {path} holds {data!r}, expected a register casRegisters/<key> = {{'value': <int>}}"
            for path, data in sorted(stored.items())
            if not path.startswith("casRegisters/") or list(data) != ["value"] or type(data["value"]) is not int]


def describe_op(op: Operation, *, epoch: Any = None) -> str:
    if isinstance(op, Read):
        return f"read {op.key}"
    if isinstance(op, Write):
        return f"write {op.key} := {op.value}"
    return f"compare-and-set {op.key}: {op.expected} -> {op.new}"


def describe_state(state: CasState, *, epoch: Any = None) -> str:
    return "\n".join(f"{key} = {value}" for key, value in state.values) or "(every register empty)"
