"""Second shrinking stage for a failing parallel program: remove branches, calls and prefix calls while the
program still fails.

Why a second stage: Hypothesis shrinks the strategy's choices, and many of its candidates only simplify a
value (a reading, a holder) without making the program smaller. On the emulator every candidate costs R
runs of a race, and Hypothesis's shrinking is capped in time (see `property.py`); this stage spends the
rest of the budget only on candidates that are structurally smaller, as stateful_tests/test_known_bad.py's
`minimize` does for sequential programs. The result is 1-minimal for these moves unless the deadline came
first: no single branch, call or prefix call can be removed, and no first-commit failure dropped, while it
still fails.

`candidates` is pure; `minimize` takes the judgement (`fails`) as a function, so it is tested without an
emulator.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import attrs

from fencecheck.parallel.program import BranchCall, ParallelProgram

T = TypeVar("T")
MIN_BRANCHES = 2  # a counterexample keeps the parallel shape: at least two branches racing


def candidates(program: ParallelProgram) -> Iterator[ParallelProgram]:
    """Structurally smaller programs, the biggest cuts first: a whole branch, one call, one prefix call (the
    last first: earlier ones build the state later ones need), a first-commit failure."""
    branches = program.branches
    if len(branches) > MIN_BRANCHES:
        for i in range(len(branches)):
            yield attrs.evolve(program, branches=branches[:i] + branches[i + 1 :])
    for i, branch in enumerate(branches):
        if len(branch) > 1:
            for j in range(len(branch)):
                yield attrs.evolve(program, branches=(*branches[:i], branch[:j] + branch[j + 1 :], *branches[i + 1 :]))
    for k in reversed(range(len(program.prefix))):
        yield attrs.evolve(program, prefix=program.prefix[:k] + program.prefix[k + 1 :])
    for i, branch in enumerate(branches):
        for j, call in enumerate(branch):
            if call.commit_failure_first:
                plain = (*branch[:j], BranchCall(call.op), *branch[j + 1 :])
                yield attrs.evolve(program, branches=(*branches[:i], plain, *branches[i + 1 :]))


def minimize(
    program: ParallelProgram,
    fails: Callable[[ParallelProgram], T | None],
    deadline: float,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[ParallelProgram, T | None, int]:
    """Greedy descent over `candidates`: take the first candidate that still fails (`fails` returns its
    evidence, or None when it passed) and start again from it, until none fails or `clock()` passes
    `deadline`. Returns (smallest failing program, its evidence or None if none was smaller, tries)."""
    best: T | None = None
    tries = 0
    improved = True
    while improved and clock() < deadline:
        improved = False
        for candidate in candidates(program):
            if clock() >= deadline:
                break
            tries += 1
            evidence = fails(candidate)
            if evidence is not None:
                program, best, improved = candidate, evidence, True
                break
    return program, best, tries
