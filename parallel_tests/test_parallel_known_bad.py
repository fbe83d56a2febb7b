"""Every registered system's concurrent known-bad variants through the parallel property: each must be caught by a
race.

For each system with parallel programs and each variant its plug-in names for this suite
(`SuiteParts.parallel_variants`: the journal's `known_bad.journal.CONCURRENT_VARIANTS`, the lantern's finding #5
and rejected A3, the gateway's claim outside the transaction; parametrized as `[<system>-<variant>]`; each behaves
exactly like the reference when calls run one at a time), the system's parallel property runs against it with
its budget's `known_bad_examples` (conftest.py `budget_of`; the run stops at the first failing program) and no
example database (a warm database would replay last run's counterexample at once and hide a loss of reach of
the strategy).

Caught is the one rule of fencecheck.checker.known_bad_verdict, judged from the repetitions' structured problems
(`CaseResult.findings`, each of the kind it was found as): the reported (shrunk) case failed a property of the
contract (an illegal history, a structural invariant, the clock read twice, a prefix call that disagreed with
the model) in none of its repetitions by an error (a foreign exception such as a `NameError`, an exec:
implementation's crash or broken protocol, a prefix call that raised: error; a hung branch or call: timeout;
an `unknown` verdict or contention only when nothing else failed: error), and its counterexample file is a
true reproduction: an illegal saved history re-checks as illegal (pure, so not at the mercy of a race), a
structural failure shows a contract finding again when the program runs against the variant, and the same
program run against the real reference passes, once through `replay_parallel(path, db)` and in every one of R
repetitions. The result
is written once, after every check. The test then also requires the failure not to be in the prefix (the bug
needed a race: a prefix failure would mean the variant is not concurrency-only, i.e. the sequential
catalogue's job).

How small the shrunk program is (MIN_BRANCHES branches, at most MAX_SHRUNK_CONCURRENT_OPS racing calls and
MAX_SHRUNK_PREFIX_OPS prefix calls) depends on how far the time-capped shrinkers got, so on the machine's load:
a larger program is a warning in the result (and a pytest warning), not a failure.

Each run writes artifacts/parallel/known_bad/<name>.json: `secondsToDetection` is the wall time from the
start to the first failing program (before shrinking), the shrunk size is after both shrinking stages.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import Phase, settings

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.checker.known_bad_verdict import KnownBadVerdict, bound_warning, judge, run_verdict
from fencecheck.parallel import (
    FAILS_IN_PREFIX,
    Budget,
    ProjectSource,
    load_counterexample,
    parallel_settings,
    recheck_parallel,
    replay_parallel,
    replay_parallel_case,
    run_property,
)
from fencecheck.parallel.case import CaseResult
from fencecheck.parallel.minimize import MIN_BRANCHES
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import plugin
from fencecheck.problems import Problem, verdict_problem
from fencecheck.report.parallel import ParallelVariant, write_parallel_variant
from known_bad.crashing import journal_name_error, lantern_name_error
from parallel_tests.conftest import artifacts_dir, budget_of, counterexamples_dir
from tests.fakes.misbehaving_exec import MISBEHAVIOURS, VERDICTS, misbehaving_journal

# The gate deselects the catalogue (--without-catalogues) and each test of another system (--only-system: each is
# marked with its system).
pytestmark = pytest.mark.catalogue

MAX_SHRUNK_CONCURRENT_OPS = 4
MAX_SHRUNK_PREFIX_OPS = 3


class KnownBadWarning(UserWarning):
    """A bound that did not hold but decides nothing (a shrunk program larger than expected)."""


def case_findings(case: CaseResult) -> tuple[Problem, ...]:
    """Everything a case's repetitions found, each problem of the kind it was found as (fencecheck.problems)."""
    return case.findings()


JOURNAL = plugin("journal")


def _on_fresh_project(projects: ProjectSource, path: Path, system: Any) -> Any:
    """`replay_parallel` on a project of its own (it needs an empty one)."""
    project_id, client = projects.new()
    try:
        return replay_parallel(path, client, system=system)
    finally:
        projects.release(project_id, client)


@attrs.frozen(eq=False)
class Judged:
    verdict: KnownBadVerdict
    fields: dict[str, Any]
    case: CaseResult | None = None
    counterexample: Path | None = None


def judge_parallel_variant(api: Any, *, projects: ProjectSource, emulator: Any, repeat: int,
                           run_settings: settings, counterexamples: Path, root: Path,
                           shrink_seconds: float | None = None, minimize_seconds: float | None = None,
                           system: SystemPlugin = JOURNAL, budget: Budget | None = None) -> Judged:
    """Run `system`'s parallel property against `api` (one of its implementations) and judge it (see the
    module docstring); harness crashes propagate."""
    started = time.monotonic()
    outcome = run_property(projects, plugin=system, system=api, repeat=repeat, run_settings=run_settings,
                           counterexamples=counterexamples, shrink_seconds=shrink_seconds,
                           minimize_seconds=minimize_seconds, budget=budget)
    case = outcome.case
    if case is None:
        return Judged(attrs.evolve(judge([]), reason=(
            f"no property of the contract failed in {outcome.examples} parallel programs ({outcome.repetitions} runs, "
            f"{time.monotonic() - started:.1f} s)")), {})
    size = case.program.size
    path = outcome.counterexample
    relative = path.relative_to(root).as_posix() if path is not None else None
    fields: dict[str, Any] = dict(
        seconds_to_detection=round(outcome.first_failure_seconds, 2) if outcome.first_failure_seconds else None,
        examples_to_detection=outcome.examples_to_failure,
        classification=case.classification,
        failed_repetitions=len(case.failures),
        repetitions=len(case.repetitions),
        shrunk_branches=size.branches,
        shrunk_concurrent_ops=size.concurrent_ops,
        shrunk_prefix_ops=size.prefix_ops,
        counterexample=relative,
    )
    print(
        f"\ncaught after {outcome.first_failure_seconds:.1f} s ({outcome.examples_to_failure} programs); "
        f"Hypothesis shrank it to {outcome.hypothesis_size}, minimizing to {size}; {case.classification} "
        f"({len(case.failures)}/{len(case.repetitions)}); {outcome.seconds:.1f} s in all; {relative}"
    )
    found = case_findings(case)
    early = run_verdict(found)
    if path is None or early is not None:  # an error or a hang: nothing to replay
        return Judged(early or judge(found, reproduction="no counterexample saved"), fields, case, path)
    # Shrinking is time-capped (Budget.shrink_seconds, minimize_seconds): the size it reaches depends on load.
    bounds = [
        *bound_warning("the shrunk program's branches", size.branches, MIN_BRANCHES),
        *bound_warning("the shrunk program's racing calls", size.concurrent_ops, MAX_SHRUNK_CONCURRENT_OPS),
        *bound_warning("the shrunk program's prefix calls", size.prefix_ops, MAX_SHRUNK_PREFIX_OPS),
    ]
    saved = load_counterexample(path)
    status = saved.data["failure"]["status"] if saved.data.get("failure") else None
    replay: tuple[Problem, ...]
    if status == "illegal":
        rechecked = recheck_parallel(path)
        again = None if rechecked is None else verdict_problem(rechecked.status, rechecked.explain())
        replay = () if again is None else (again,)
        how = f"{relative}: the saved history re-checked as {rechecked and rechecked.status}"
    elif status == "prefix":
        replay = _on_fresh_project(projects, path, api).findings()
        how = f"{relative}: the prefix run again against the variant"
    else:
        again_case = replay_parallel_case(path, emulator, repeat=repeat, system=api)
        replay = case_findings(again_case)
        how = f"{relative}: run again against the variant ({again_case.classification})"
    once = _on_fresh_project(projects, path, system.reference)
    again_case = replay_parallel_case(path, emulator, repeat=repeat, system=system.reference)
    against = (*once.findings(), *case_findings(again_case))
    if against:
        how += f"; against the reference: {once.explain() or again_case.summary()}"
    return Judged(judge(found, replay=replay, reference=against, reproduction=how, warnings=bounds),
                  fields, case, path)


def catch_parallel_variant(judge_it: Any, *, name: str, v: Any, system: SystemPlugin, label: str,
                           request: Any, record_property: Any) -> None:
    """`judge_it()` (a `judge_parallel_variant` call), its result written once, after every check, and the
    test's verdict: caught under fencecheck.checker.known_bad_verdict, and not in the prefix. `label` names the
    variant's kind in messages ("concurrent known-bad variant")."""
    config = request.config
    try:
        judged = judge_it()
    except Exception:
        write_parallel_variant(artifacts_dir(config), ParallelVariant(
            name=name, rule=v.rule, status="error", failing_property=request.node.nodeid, plugin=system.name))
        raise  # the harness crashed: not a detection
    verdict = judged.verdict
    write_parallel_variant(artifacts_dir(config), ParallelVariant(
        name=name, rule=v.rule, status=verdict.status, failing_property=request.node.nodeid,
        warnings=verdict.warnings, plugin=system.name, **judged.fields))
    for key, value in judged.fields.items():
        record_property(key, str(value))
    for warning in verdict.warnings:
        warnings.warn(f"{label} {name}: {warning}", KnownBadWarning, stacklevel=2)
    summary = judged.case.summary() if judged.case is not None else ""
    assert verdict.caught, f"{label} {name} {verdict.status.upper()}: {verdict.reason} ({v.description})\n{summary}"
    assert judged.case is not None and judged.case.classification != FAILS_IN_PREFIX, (
        f"{name} failed sequentially, in the prefix:\n{summary}"
    )


def _variants() -> list[Any]:
    """(system, variant) for every variant a system with parallel programs names for this suite, each marked with
    its system, id `<system>-<variant>`."""
    return [pytest.param(name, variant, marks=pytest.mark.system(name), id=f"{name}-{variant}")
            for name in suite_parts.with_part("parallel") for variant in plugin(name).suites.parallel_variants()]


def variant_of(system: SystemPlugin, name: str) -> Any:
    """The catalogue's record of variant `name` (its `rule` and `description`), from the system's catalogue module
    (`SuiteParts.catalogue`)."""
    assert system.suites.catalogue, f"{system.name} names parallel variants but no catalogue module (SuiteParts)"
    return suite_parts.load(system, "catalogue").variant(name)


@pytest.mark.parametrize("system_name, name", _variants())
def test_concurrent_variant_is_caught(system_name, name, projects, repeat, emulator, request, record_property):
    system = plugin(system_name)
    v = variant_of(system, name)
    config = request.config
    budget = budget_of(system)
    catch_parallel_variant(
        lambda: judge_parallel_variant(
            system.resolve(system.known_bad_variants()[name]), system=system, budget=budget, projects=projects,
            emulator=emulator, repeat=repeat,
            run_settings=parallel_settings(budget=budget, database=None, max_examples=budget.known_bad_examples),
            counterexamples=counterexamples_dir(config), root=config.rootpath,
        ),
        name=name, v=v, system=system, label=f"concurrent {system_name} variant", request=request,
        record_property=record_property,
    )


@pytest.mark.system("journal")
def test_a_variant_that_only_raises_name_error_is_an_error_not_a_catch(projects, emulator, tmp_path):
    # Every transaction raises NameError: a prefix call that raised, or a foreign exception in a branch. Two
    # programs, one repetition each, no shrinking: the verdict is all this checks.
    judged = judge_parallel_variant(
        journal_name_error(), projects=projects, emulator=emulator, repeat=1,
        run_settings=parallel_settings(database=None, max_examples=2, phases=[Phase.generate]),
        counterexamples=tmp_path, root=tmp_path, shrink_seconds=0, minimize_seconds=0,
    )
    assert judged.verdict.status == "error" and "NameError" in judged.verdict.reason, judged.verdict


@pytest.mark.system("journal")
@pytest.mark.parametrize("how", sorted(MISBEHAVIOURS))
def test_an_exec_implementation_that_crashes_hangs_or_breaks_the_protocol_is_no_catch(how, projects, emulator,
                                                                                      tmp_path):
    # Its first call fails (a prefix call or a branch's): a crash with a multi-line message, a call never
    # answered, a malformed answer. One program, one repetition, no shrinking: the verdict is all this checks.
    with misbehaving_journal(how) as system:
        judged = judge_parallel_variant(
            system, projects=projects, emulator=emulator, repeat=1,
            run_settings=parallel_settings(database=None, max_examples=1, phases=[Phase.generate]),
            counterexamples=tmp_path, root=tmp_path, shrink_seconds=0, minimize_seconds=0,
        )
    assert judged.verdict.status == VERDICTS[MISBEHAVIOURS[how]], judged.verdict
    assert "ImplementationFailure" in judged.verdict.reason, judged.verdict


@pytest.mark.system("lantern")
def test_a_lantern_variant_that_only_raises_name_error_is_an_error_not_a_catch(projects, emulator, tmp_path):
    # The racing operations raise NameError (the prefix's venue and lights work, so the race is reached): a
    # foreign exception in a branch. Two programs, one repetition each, no shrinking: the verdict is all this checks.
    lantern = plugin("lantern")
    judged = judge_parallel_variant(
        lantern_name_error("extinguish_lantern", "read_active_lanterns"), system=lantern, projects=projects,
        emulator=emulator, repeat=1, budget=budget_of(lantern),
        run_settings=parallel_settings(budget=budget_of(lantern), database=None, max_examples=2,
                                       phases=[Phase.generate]),
        counterexamples=tmp_path, root=tmp_path, shrink_seconds=0, minimize_seconds=0,
    )
    assert judged.verdict.status == "error" and "NameError" in judged.verdict.reason, judged.verdict
