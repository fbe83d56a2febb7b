"""Each registered system's reference under parallel programs (parametrized over the systems with parallel
programs, ids naming the system): every generated program (a prefix, then 2-4 racing branches, with at least
one contested partition) must pass every one of its R repetitions. Each system's programs are its plug-in's
(fencecheck/systems/<system>_parallel.py), its budget theirs (`ParallelSpec.budgets`, conftest.py `budget_of`).

A failure is a proof, not a timing accident: the failing repetition's history was judged not linearizable
(or a structural invariant broke). A repetition with fewer than 90% definite branch calls fails the test
too, for contention, never as a contract verdict (`fencecheck.checker.definite`). The shrunk program is saved as
counterexamples/parallel-<system>-<implementation>-<id>.json and the run is written to
artifacts/parallel/<run>.json for the evidence report either way (`reference.json` for the journal,
`<system>-reference.json` for the others: conftest.py `reference_run_name`). Under a wire fault mix
(`--wire-faults`) every system's run also writes its fault kinds to artifacts/wire-faults/parallel-<run>.json.
Against an implementation $FENCECHECK_SYSTEM names (see conftest.py) the same property runs against it for its
system, and no evidence is written.
"""

from __future__ import annotations

import pytest

from fencecheck.errors import CheckFailed
from fencecheck.parallel import PASSES, parallel_settings, run_property
from fencecheck.plugin.registry import plugin
from fencecheck.plugin.specs import configured_implementation, describe_system, reference_run
from fencecheck.problems import contention
from fencecheck.report.parallel import ParallelRun, write_parallel_run
from fencecheck.runners.contest_results import write_json
from fencecheck.suites import hypothesis_profiles
from fencecheck.suites.pytest_plugin import wire_mix
from parallel_tests.conftest import (
    artifacts_dir,
    budget_of,
    counterexamples_dir,
    parallel_systems,
    reference_run_name,
)

# Each system's test is marked with it: --only-system <another> deselects it (fencecheck.suites.pytest_plugin).
SYSTEMS = [pytest.param(name, marks=pytest.mark.system(name), id=name) for name in parallel_systems()]


def _relative(path, root) -> str | None:
    if path is None:
        return None
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


@pytest.mark.parametrize("name", SYSTEMS)
def test_reference_is_linearizable_under_parallel_programs(name, projects, repeat, request):
    config = request.config
    system_plugin = plugin(name)
    system = configured_implementation(system_plugin)
    budget = budget_of(system_plugin)
    run = reference_run_name(name)
    outcome = run_property(projects, plugin=system_plugin, system=system, repeat=repeat, budget=budget,
                           run_settings=parallel_settings(budget=budget), counterexamples=counterexamples_dir(config),
                           wire_mix=wire_mix(config))
    print(f"\nparallel {name}, {describe_system(system)}: {outcome.examples} programs x {repeat} repetitions "
          f"({outcome.repetitions} runs) in {outcome.seconds:.1f} s{wire_note(outcome)}")
    write_wire_faults(config, outcome, run, name)
    if reference_run(system=name):
        write_evidence(config, outcome, repeat, run, name)
    assert_reference_passed(outcome)


def wire_note(outcome) -> str:
    if outcome.wire_seed is None:
        return ""
    kinds = ", ".join(f"{label} {count}" for label, count in outcome.wire_faults.items())
    return f"; wire faults (seed {outcome.wire_seed}): {kinds or 'none'}"


def write_wire_faults(config, outcome, name: str, system: str) -> None:
    """artifacts/wire-faults/parallel-<name>.json: the run's fault mix seed and fault kinds, when it had a mix, and
    its system (the plug-in), which the run's name does not always show (fencecheck/report/wire_faults.py)."""
    path = artifacts_dir(config) / "wire-faults" / f"parallel-{name}.json"
    path.unlink(missing_ok=True)
    if outcome.wire_seed is not None:
        write_json(path, {"seed": outcome.wire_seed, "kinds": outcome.wire_faults, "system": system})


def assert_failed_cases(outcome) -> None:
    """No program failed; a failing case's findings, each of its kind, travel with the failure (the project's
    pytest plug-in records them for the gate)."""
    if outcome.failed:
        raise CheckFailed(outcome.message(), outcome.case.findings())


def assert_reference_passed(outcome) -> None:
    assert_failed_cases(outcome)
    if outcome.contended:  # after the contract: a proven failure above outweighs it
        message = (f"{outcome.contended_repetitions} repetition(s) had too few definite answers to judge "
                   f"(contention, not a contract verdict); the first:\n{outcome.contention}")
        raise CheckFailed(message, (contention(message),))
    assert outcome.examples > 0, "no parallel program ran"
    assert outcome.contested_examples == outcome.examples, "every generated program must contest a key"


def write_evidence(config, outcome, repeat: int, name: str, system: str) -> None:
    """artifacts/parallel/<name>.json: `system`'s run against its reference, for the evidence report."""
    case = outcome.case
    write_parallel_run(
        artifacts_dir(config),
        ParallelRun(
            name=name,
            system="reference",
            plugin=system,
            profile=hypothesis_profiles.selected_name(),
            examples=outcome.examples,
            repetitions=repeat,
            repetitions_run=outcome.repetitions,
            contested_examples=outcome.contested_examples,
            seconds=round(outcome.seconds, 2),
            classification=PASSES if case is None else case.classification,
            failed_repetitions=None if case is None else len(case.failures),
            case_repetitions=None if case is None else len(case.repetitions),
            shrunk_branches=None if case is None else case.program.size.branches,
            shrunk_ops=None if case is None else case.program.size.ops,
            counterexample=_relative(outcome.counterexample, config.rootpath),
            message=None if case is None else outcome.message()[:4000],
            contended_repetitions=outcome.contended_repetitions,
            contention=None if outcome.contention is None else outcome.contention[:4000],
        ),
    )
