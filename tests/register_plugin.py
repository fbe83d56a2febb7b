"""A tiny test system for the linearizability checker: one read/write register per key, as a plug-in.

The checker takes any `fencecheck.plugin.SystemPlugin`; this one has the smallest model that still makes
the search work (writes always change the state, reads pin it), the classic register of Porcupine's and
Knossos's benchmarks. Only the parts the checker and `fencecheck.checker.history.simulate` use are real; the
implementation side is absent (no system stands behind it).

Shared by the checker's unit tests (tests/unit/test_linearizability.py) and its benchmark
(benchmarks/checker.py), which generates 2,000-call, 50-client histories with it (`register_history`).
"""

from __future__ import annotations

import heapq
import random
from typing import Any

import attrs

from fencecheck.checker.history import History, Planned, simulate
from fencecheck.plugin.records import Codec, Implementations, Model, Partitions, SystemPlugin

MS = 1_000_000  # ns
UNAVAILABLE = "register_unavailable"

RegisterState = tuple[tuple[str, int], ...]  # (key, value) pairs, sorted by key: hashable and canonical


@attrs.frozen
class Write:
    key: str
    value: int


@attrs.frozen
class Read:
    key: str


@attrs.frozen(cache_hash=True)
class Result:
    transition: str
    wrote: bool
    outcome: str | None
    value: int | None = None
    code: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is not None

    @property
    def output(self) -> dict[str, Any] | None:
        if self.outcome is None:
            return None
        if self.outcome == "read":
            return {"outcome": "read", "value": self.value}
        return {"outcome": self.outcome}

    def matches(self, observed: Any) -> bool:
        if isinstance(observed, str):
            return self.code == observed and self.outcome is None
        return self.output == observed


def _get(state: RegisterState, key: str) -> int | None:
    return dict(state).get(key)


def step(state: RegisterState, op: Write | Read) -> tuple[RegisterState, Result]:
    if isinstance(op, Write):
        values = dict(state)
        values[op.key] = op.value
        return tuple(sorted(values.items())), Result("write", True, "written")
    return state, Result("read", False, "read", _get(state, op.key))


def restrict(state: RegisterState, key: str) -> RegisterState:
    return tuple(item for item in state if item[0] == key)


def merge(whole: RegisterState, part: RegisterState, key: str) -> RegisterState:
    return tuple(sorted([item for item in whole if item[0] != key] + list(part)))


def documents_of(state: RegisterState, key: str) -> dict[str, dict[str, Any]]:
    value = _get(state, key)
    return {} if value is None else {f"registers/{key}": {"value": value}}


def describe_op(op: Write | Read, *, epoch: Any = None) -> str:
    return f"write {op.key}={op.value}" if isinstance(op, Write) else f"read {op.key}"


def describe_state(state: RegisterState, *, epoch: Any = None) -> str:
    return "\n".join(f"{key} = {value}" for key, value in state) or "(empty)"


def _absent(*_args: Any, **_kwargs: Any) -> Any:
    raise NotImplementedError("the register test system has no implementation")


REGISTER = SystemPlugin(
    name="register",
    model=Model(
        initial_state=tuple,
        step=step,
        transitions=(),
        documents=documents_of,
        describe_op=describe_op,
        describe_state=describe_state,
        commutes_when_read_only=lambda op: isinstance(op, Read),  # a read never writes, so it always commutes
    ),
    partitions=Partitions(
        partition_of=lambda op: op.key,
        partition_noun="register",
        partitions_of_state=lambda state: [key for key, _value in state],
        partition_of_path=lambda path: path.removeprefix("registers/"),
        restrict=restrict,
        merge=merge,
        partition_version=lambda state, key: _get(state, key),
    ),
    implementations=Implementations(
        resolve=_absent,
        invoke=_absent,
        unavailable_code=UNAVAILABLE,
        write_partition=_absent,
        clock_of=lambda _op: None,
        error_code=lambda _impl, _error: None,
        spec_of=lambda _impl: None,
    ),
    codec=Codec(
        ops_to_json=_absent,
        ops_from_json=_absent,
    ),
)


def register_history(
    seed: int = 1,
    *,
    clients: int = 50,
    keys: int = 10,
    calls: int = 2000,
    read_share: float = 0.5,
    lost_share: float = 0.05,
) -> History:
    """`calls` calls by `clients` clients, each call on a random key: a client waits 0-2 ms, then writes a
    fresh value or reads, and the call takes 1-10 ms, taking effect at a random instant within it. Some
    answers are lost (indefinite), half of those never having applied. Linearizable by construction."""
    rng = random.Random(seed)
    plans: list[Planned] = []
    free = [(rng.randrange(2 * MS), client) for client in range(clients)]
    heapq.heapify(free)
    for n in range(calls):
        moment, client = heapq.heappop(free)
        key = f"k{rng.randrange(keys)}"
        op = Write(key, n) if rng.random() >= read_share else Read(key)
        duration = MS + rng.randrange(9 * MS)
        lost = rng.random() < lost_share
        plans.append(
            Planned(
                f"client-{client}",
                op,
                moment,
                None if lost and rng.random() < 0.5 else moment + duration,
                moment + rng.randrange(duration + 1),
                lost="transport:DeadlineExceeded" if lost else None,
                applies=not lost or rng.random() < 0.5,
            )
        )
        heapq.heappush(free, (moment + duration + rng.randrange(2 * MS), client))
    history, _state = simulate(plans, plugin=REGISTER)
    return history


def break_reads(history: History, keys: int, seed: int = 1) -> History:
    """In `keys` of the history's registers, one definite read (past the first quarter) answers a value that
    register never held: those registers become illegal, the others stay linearizable."""
    rng = random.Random(seed)
    calls = list(history.calls)
    by_key: dict[str, list[int]] = {}
    for index, call in enumerate(calls):
        if isinstance(call.op, Read) and call.outcome.definite:
            by_key.setdefault(call.op.key, []).append(index)
    for key in rng.sample(sorted(by_key), keys):
        reads = by_key[key]
        index = rng.choice(reads[len(reads) // 4 :])
        calls[index] = attrs.evolve(calls[index], outcome=type(calls[index].outcome)({"outcome": "read", "value": -1}))
    return History(calls, history.final_documents, system=history.system)
