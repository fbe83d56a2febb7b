"""Near-miss inputs: calls one step from what is stored or from what the caller is entitled to, where bugs that a
random input seldom meets live (an `==` turned `>=`, a check on the wrong field). Each call a lockstep run makes is
classed, and transition coverage counts the transitions each class reached, per system, so the evidence shows
whether the generators aim at the contract's boundaries.

Two classes are the core's, told from the program alone, for every system:

- `exact-retry`: every field but the clock equal to an earlier call's of the same operation;
- `one-field-changed`: an earlier call of the same operation with exactly one field changed, the clock aside
  (fields are compared at every depth: a changed field of the evidence is one field).

The others need the system's knowledge of what is stored, so its model tells them (`Model.near_misses(state,
op)`, given the state before the call):

- `current-fence-other-holder`: a fenced call by a caller that does not hold the lease, presenting its current fence;
- `stored-but-one-field`: evidence or a payload equal to the stored one but for one field;
- `clock-boundary`: a clock reading at a stored expiry or deadline, or 1 µs either side.

Pure: no Firestore, no clock. `PROCESS_COUNTS[system][class]` counts transitions per class in one test process
(the lockstep adds to it wherever it counts transition coverage; `fencecheck.checker.coverage` writes it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

EXACT_RETRY = "exact-retry"
ONE_FIELD_CHANGED = "one-field-changed"
CURRENT_FENCE_OTHER_HOLDER = "current-fence-other-holder"
STORED_BUT_ONE_FIELD = "stored-but-one-field"
CLOCK_BOUNDARY = "clock-boundary"

CLASSES: dict[str, str] = {
    EXACT_RETRY: "the same call again: every field but the clock equal to an earlier call's",
    ONE_FIELD_CHANGED: "an earlier call with exactly one field changed (the clock aside)",
    CURRENT_FENCE_OTHER_HOLDER: "a fenced call by a caller that does not hold the lease, presenting its current fence",
    STORED_BUT_ONE_FIELD: "evidence or a payload equal to the stored one but for one field",
    CLOCK_BOUNDARY: "a clock reading at a stored expiry or deadline, or 1 µs either side",
}

PROCESS_COUNTS: defaultdict[str, defaultdict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Every leaf of an operation's fields, by its path (attrs values, mappings and sequences opened)."""
    if attrs.has(type(value)):
        items: Iterable[tuple[str, Any]] = ((f.name, getattr(value, f.name)) for f in attrs.fields(type(value)))
    elif isinstance(value, Mapping):
        items = ((str(k), v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return {path: (type(value), value)}  # typed: True is not 1
    found: dict[str, Any] = {}
    for name, inner in items:
        found.update(_leaves(inner, f"{path}.{name}" if path else name))
    if not found:
        found[path] = (type(value), value)
    return found


def _without_clock(op: Any, clock: datetime | None) -> dict[str, Any]:
    leaves = _leaves(op)
    if clock is None:
        return leaves
    return {path: leaf for path, leaf in leaves.items() if leaf != (type(clock), clock)}


def program_classes(op: Any, earlier: Sequence[Any], clock_of: Any) -> set[str]:
    """The core's classes of `op` after the calls `earlier` (faults already left out by the caller)."""
    mine = _without_clock(op, clock_of(op))
    found: set[str] = set()
    for before in earlier:
        if type(before) is not type(op):
            continue
        theirs = _without_clock(before, clock_of(before))
        if theirs.keys() != mine.keys():
            continue
        changed = sum(1 for path, leaf in mine.items() if theirs[path] != leaf)
        if changed == 0:
            found.add(EXACT_RETRY)
        elif changed == 1:
            found.add(ONE_FIELD_CHANGED)
        if len(found) == 2:
            break
    return found


def classes(plugin: Any, state: Any, op: Any, earlier: Sequence[Any]) -> tuple[str, ...]:
    """Every near-miss class of `op`, a call (not a fault) made in `state` after the program `earlier`, in the
    order of `CLASSES`. A class the model names that is not one of `CLASSES` is a ValueError."""
    calls = [before for before in earlier if not plugin.is_fault(before)]
    found = program_classes(op, calls, plugin.clock_of) | set(plugin.near_misses(state, op))
    unknown = found - CLASSES.keys()
    if unknown:
        raise ValueError(f"{plugin.name}'s near_misses named {sorted(unknown)}: expected some of {list(CLASSES)}")
    return tuple(name for name in CLASSES if name in found)


def empty_counts() -> dict[str, dict[str, int]]:
    return {name: {} for name in CLASSES}


def merge(documents: Iterable[Mapping[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Sum several processes' counts (class -> transition -> count); every class present, in `CLASSES` order."""
    total: dict[str, Counter[str]] = {name: Counter() for name in CLASSES}
    for document in documents:
        for name, counts in document.items():
            if name not in total:
                raise ValueError(f"unknown near-miss class {name!r}: expected one of {list(CLASSES)}")
            total[name].update({transition: int(count) for transition, count in counts.items()})
    return {name: dict(sorted(counts.items())) for name, counts in total.items()}
