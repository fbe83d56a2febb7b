"""The compare-and-set register's parallel programs (`fencecheck.parallel.ParallelSpec`, the plug-in's `parallel`):
its strategy of contested calls and its structural check of a race (REG-1, `model.invariant_violations`).

What makes the calls compete: the prefix writes register `x` (and maybe `y`); the branches' calls are mostly on
`x`, and a compare-and-set's expected value is drawn from what the register may hold by then (the prefix's value,
or a value a racing call stores), so swaps race swaps, writes and reads. Values are small, so a racing write or
swap often stores what another call expects. Everything shrinks toward the simplest race: `x` written 0, then
compare-and-sets of `x` from 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from examples.cas_register.model import CompareAndSet, Read, Write, invariant_violations
from examples.cas_register.plugin import NAME
from fencecheck.parallel.program import BranchCall, ParallelProgram, trim_branches
from fencecheck.parallel.property import Budget
from fencecheck.parallel.spec import ParallelSpec

KEYS = ("x", "x", "x", "y")  # mostly the one register, so the branches meet there
VALUES = (0, 1, 2)


@st.composite
def calls(draw: st.DrawFn) -> Any:
    """One call: a compare-and-set (listed first: what shrinking keeps), a write or a read, on a drawn key."""
    kind = draw(st.sampled_from(("cas", "cas", "write", "read")))
    key = draw(st.sampled_from(KEYS))
    expected = draw(st.sampled_from(VALUES))
    value = draw(st.sampled_from(VALUES))
    if kind == "cas":
        return CompareAndSet(key, expected, value)
    return Write(key, value) if kind == "write" else Read(key)


@st.composite
def _programs(draw: st.DrawFn, max_prefix_ops: int, max_branches: int, max_concurrent_ops: int,
              max_branch_ops: int) -> ParallelProgram:
    prefix = [Write("x", draw(st.sampled_from(VALUES)))]
    if max_prefix_ops > 1 and draw(st.booleans()):
        prefix.append(Write("y", draw(st.sampled_from(VALUES))))
    branch_calls = st.builds(BranchCall, calls())
    branches = draw(st.lists(st.lists(branch_calls, min_size=1, max_size=max_branch_ops), min_size=2,
                             max_size=max_branches))
    return ParallelProgram(prefix, trim_branches(branches, max_concurrent_ops), system=NAME)


def programs(*, max_prefix_ops: int = 2, max_branches: int = 3, max_concurrent_ops: int = 6,
             max_branch_ops: int = 3) -> st.SearchStrategy[ParallelProgram]:
    """The register's parallel programs (the engine keeps those with a contested register)."""
    return _programs(max_prefix_ops, max_branches, max_concurrent_ops, max_branch_ops)


def race_problems(_db: Any, _state: Any, _keys: tuple[str, ...], _before: Any, project: Mapping[str, Any]) -> list[str]:
    """REG-1 on every stored document after the race (`model.invariant_violations`), as the races check."""
    return invariant_violations({path: item.data for path, item in project.items()})


# Small in ci: a contested repetition costs one emulator lock timeout (about 2 s) and a retry round (3 s), so a
# few programs of up to 3 branches and 4 racing calls, each shrinking stage at most 10 s.
_CI = Budget(examples=3, known_bad_examples=0, shrink_seconds=10, minimize_seconds=10, max_branches=3,
             max_concurrent_ops=4)
BUDGETS = {
    "ci": _CI,
    "gate": _CI,
    "thorough": Budget(examples=40, known_bad_examples=0, shrink_seconds=60, minimize_seconds=60, max_branches=4,
                       max_concurrent_ops=8),
}

SPEC = ParallelSpec(programs=programs, race_problems=race_problems, budgets=BUDGETS)
