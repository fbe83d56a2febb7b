"""The parallel property under Hypothesis: generate a program, run it R times, fail if any repetition fails.

Hypothesis declines concurrent rules in its state machines; this is PropEr's `parallel_commands` shape on
plain `@given`. How a nondeterministic failure is kept shrinkable:

- one failure, one origin: every failing case raises `ParallelFailure` from the same line, outside any
  `except` block, so Hypothesis sees one bug (its `InterestingOrigin` is type, location and context) and
  `report_multiple_bugs` has nothing to split;
- a candidate counts as failing if ANY of its R repetitions fails. A shrink candidate that loses no race in
  its R tries is simply not accepted; shrinking carries on from the last failing program;
- the final replay (the one Hypothesis reports) repeats up to `FINAL_ROUNDS` more rounds while it keeps
  passing, so a race that is lost now and then is seen again instead of ending in `FlakyFailure`;
- if it still passes, Hypothesis raises `FlakyFailure`; the outcome then reports the smallest failing case
  seen (`Outcome.case`), which is as much evidence of a bug as any: its history was proven not linearizable.

Shrinking on the emulator is slow (every candidate is R runs of a race), so it happens in two capped
stages, as in stateful_tests/test_known_bad.py: Hypothesis for `shrink_seconds` (patching its fixed 300 s
engine limit), then `minimize.minimize` for `minimize_seconds`, which only tries structurally smaller
programs (a branch, a call, a prefix call fewer).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import attrs
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis.control import current_build_context
from hypothesis.errors import Flaky
from hypothesis.internal.conjecture import engine as conjecture_engine

from fencecheck.parallel.case import DEFAULT_REPEAT, CaseResult, ProjectSource, run_case, save_counterexample
from fencecheck.parallel.minimize import minimize
from fencecheck.parallel.program import ParallelProgram, ProgramSize, contested_keys
from fencecheck.parallel.strategy import MAX_BRANCHES, MAX_CONCURRENT_OPS, programs
from fencecheck.plugin.records import SystemPlugin
from fencecheck.suites import hypothesis_profiles
from fencecheck.wire.mix import FaultMix


class ParallelFailure(AssertionError):
    """A parallel program failed (see its message: classification, counts, program, evidence)."""


@attrs.frozen
class Budget:
    """Per Hypothesis profile: programs against the reference, programs a known-bad variant may take to be
    caught (its run stops at the first failure), and how long each shrinking stage may take. Repetitions
    come from the suite's option (`--parallel-repeat`, default 5)."""

    examples: int
    known_bad_examples: int
    shrink_seconds: float
    minimize_seconds: float
    max_branches: int = MAX_BRANCHES
    max_concurrent_ops: int = MAX_CONCURRENT_OPS


BUDGETS = {
    # ci and gate: up to 3 branches and 6 racing calls, so one program (R repetitions at once) takes a few
    # seconds; the whole suite, known-bad variants included, stays under ~3 minutes with -n 2 on 2 cores.
    # A known-bad run stops at its first failing program: measured on the variants, 3 to 25 programs (a few
    # seconds each); 100 leaves room for the tail, and only a variant that survives costs all of it.
    "ci": Budget(examples=10, known_bad_examples=100, shrink_seconds=15, minimize_seconds=25, max_branches=3,
                 max_concurrent_ops=6),
    "gate": Budget(examples=10, known_bad_examples=100, shrink_seconds=15, minimize_seconds=25, max_branches=3,
                   max_concurrent_ops=6),
    # thorough: up to 4 branches and 12 racing calls; 80 programs took 200 s on 2 cores, so about 6-7 minutes.
    "thorough": Budget(examples=150, known_bad_examples=200, shrink_seconds=120, minimize_seconds=120),
}


def budget_for(profile: str | None = None, *, plugin: SystemPlugin | None = None) -> Budget:
    """The budget of the selected profile (`ci` for any profile without its own, e.g. Hypothesis's default):
    `plugin`'s own when its parallel programs name budgets (`ParallelSpec.budgets`), else `BUDGETS`."""
    spec = plugin.parallel() if plugin is not None and plugin.parallel is not None else None
    budgets = spec.budgets if spec is not None and spec.budgets is not None else BUDGETS
    return budgets.get(profile or hypothesis_profiles.selected_name(), budgets["ci"])


def parallel_settings(profile: str | None = None, *, budget: Budget | None = None, **overrides: Any) -> settings:
    """The selected profile's settings with this suite's example budget (`budget`'s, else the profile's); no
    deadline, no health checks (every example is seconds of emulator time by design)."""
    name = profile or hypothesis_profiles.selected_name()
    base = settings.get_profile(name) if name in hypothesis_profiles.PROFILES else settings()
    values: dict[str, Any] = {
        "max_examples": (budget or budget_for(name)).examples,
        "deadline": None,
        "suppress_health_check": list(HealthCheck),
        # No explain phase (as in every project profile): it would replay the failing race hundreds of times.
        "phases": [phase for phase in base.phases if phase is not Phase.explain],
    }
    if hypothesis_profiles.derandomize_requested():
        values.update(derandomize=True, database=None)
    values.update(overrides)
    return settings(base, **values)


@contextlib.contextmanager
def shrinking_budget(seconds: float) -> Iterator[None]:
    with mock.patch.object(conjecture_engine, "MAX_SHRINKING_SECONDS", seconds):
        yield


def _is_final() -> bool:
    try:
        return bool(current_build_context().is_final)
    except Exception:
        return False


@attrs.frozen(eq=False)
class Outcome:
    """What one property run found. `case` is the reported failing case (the final replay if it failed,
    otherwise the smallest failing case seen); None when every example passed."""

    examples: int
    repetitions: int  # repetitions run over every example (shrinking included)
    contested_examples: int
    seconds: float
    case: CaseResult | None = None
    counterexample: Path | None = None
    error: BaseException | None = None
    first_failure_seconds: float | None = None  # from the start to the first failing case
    examples_to_failure: int | None = None
    flaky: bool = False  # Hypothesis's final replay passed (FlakyFailure); `case` is the smallest seen
    hypothesis_size: ProgramSize | None = None  # the failing program as Hypothesis shrank it
    minimize_tries: int = 0
    contended_repetitions: int = 0  # repetitions too contended to judge (fencecheck.checker.definite): never a pass
    contention: str | None = None  # the first one's message, with its program
    wire_faults: dict[str, int] = attrs.field(factory=dict)  # fault events per "kind Method", every repetition
    wire_seed: str | None = None  # the fault mix's seed (None: no mix)

    @property
    def contended(self) -> bool:
        return self.contended_repetitions > 0

    @property
    def failed(self) -> bool:
        return self.case is not None

    def message(self) -> str:
        if self.case is None:
            return f"{self.examples} examples passed"
        text = self.case.summary()
        if self.flaky:
            text = "(the final replay passed every repetition: the smallest failing case seen is shown)\n" + text
        if self.counterexample is not None:
            text += f"\ncounterexample saved: {self.counterexample}"
        return text


def run_property(
    projects: ProjectSource,
    *,
    plugin: SystemPlugin,
    system: Any = None,
    repeat: int = DEFAULT_REPEAT,
    budget: Budget | None = None,
    run_settings: settings | None = None,
    shrink_seconds: float | None = None,
    minimize_seconds: float | None = None,
    counterexamples: Path | None = None,
    on_case: Callable[[CaseResult], None] | None = None,
    wire_mix: FaultMix | None = None,
) -> Outcome:
    """Run the parallel property of `plugin`'s system against `system` (an implementation of it; its reference
    when None) under `run_settings` (default `parallel_settings()`), with `budget`'s sizes and shrinking times
    (default `budget_for()`, the profile's); never raises for a failing program (see `Outcome`); harness errors
    propagate. `wire_mix`: every branch call goes through the wire under this seeded fault mix
    (`fencecheck.wire.mix`); the fault events of every repetition are counted in `Outcome.wire_faults`."""
    budget = budget or budget_for()
    faults: Counter[str] = Counter()
    run_settings = run_settings or parallel_settings(budget=budget)
    seconds = budget.shrink_seconds if shrink_seconds is None else shrink_seconds
    minimizing = budget.minimize_seconds if minimize_seconds is None else minimize_seconds
    started = time.monotonic()
    seen = {"examples": 0, "repetitions": 0, "contested": 0, "contended": 0}
    contention: list[str] = []
    smallest: list[CaseResult] = []
    final: list[CaseResult] = []
    first: dict[str, Any] = {}

    @run_settings
    @given(programs(plugin, max_branches=budget.max_branches, max_concurrent_ops=budget.max_concurrent_ops))
    def parallel_property(program):
        is_final = _is_final()
        result = run_case(projects, program, system=system, repeat=repeat, final=is_final, wire_mix=wire_mix)
        for repetition in result.repetitions:
            faults.update(repetition.wire_faults)
        seen["examples"] += 1
        seen["repetitions"] += len(result.repetitions)
        seen["contested"] += bool(contested_keys(program))
        seen["contended"] += len(result.contended)
        if result.contended and not contention:
            contention.append(result.summary())
        if on_case is not None:
            on_case(result)
        failed = result.failed
        if failed:
            first.setdefault("seconds", time.monotonic() - started)
            first.setdefault("examples", seen["examples"])
            if not smallest or _size_key(result) < _size_key(smallest[0]):
                smallest[:] = [result]
            if is_final:
                final[:] = [result]
                note(result.summary())
        if failed:  # the one place a failure is raised: one origin for Hypothesis, whatever the cause
            raise ParallelFailure(result.classification)

    error: BaseException | None = None
    flaky = False
    try:
        with shrinking_budget(seconds):
            parallel_property()
    except ParallelFailure as failure:
        error = failure
    except Flaky as failure:  # FlakyFailure: the final replay passed although the program failed before
        error, flaky = failure, True
    case = final[0] if final else (smallest[0] if smallest else None)
    if error is not None and case is None:
        raise RuntimeError("Hypothesis reported a failure but no failing case was recorded") from error
    hypothesis_size, tries = (case.program.size if case is not None else None), 0
    if case is not None and minimizing > 0:

        def fails(candidate: ParallelProgram) -> CaseResult | None:
            result = run_case(projects, candidate, system=system, repeat=repeat, wire_mix=wire_mix)
            seen["repetitions"] += len(result.repetitions)
            return result if result.failed else None

        _program, smaller, tries = minimize(case.program, fails, time.monotonic() + minimizing)
        case = smaller or case
    path = save_counterexample(case, counterexamples) if case is not None and counterexamples is not None else None
    return Outcome(
        examples=seen["examples"],
        repetitions=seen["repetitions"],
        contested_examples=seen["contested"],
        seconds=time.monotonic() - started,
        case=case,
        counterexample=path,
        error=error,
        first_failure_seconds=first.get("seconds"),
        examples_to_failure=first.get("examples"),
        flaky=flaky,
        hypothesis_size=hypothesis_size,
        minimize_tries=tries,
        contended_repetitions=seen["contended"],
        contention=contention[0] if contention else None,
        wire_faults=dict(sorted(faults.items())),
        wire_seed=None if wire_mix is None else wire_mix.seed,
    )


def _size_key(result: CaseResult) -> tuple[int, int, int]:
    size = result.program.size
    return (size.branches, size.concurrent_ops, size.prefix_ops)
