"""Parallel suite options and fixtures (fencecheck.parallel: a sequential prefix, then 2-4 branches of calls
released together, judged by the linearizability checker against the model), for every registered system with
parallel programs (its plug-in's `parallel`): the tests are parametrized over them, ids naming the system.

    .venv/bin/python -m pytest parallel_tests -n 2                            # ci budget, 5 repetitions
    .venv/bin/python -m pytest parallel_tests -n 2 --parallel-repeat 10       # every program 10 times
    FENCECHECK_PARALLEL_REPEAT=3 .venv/bin/python -m pytest parallel_tests
    .venv/bin/python -m pytest parallel_tests --hypothesis-profile=thorough   # many more programs

Every program runs R times (`--parallel-repeat`, else $FENCECHECK_PARALLEL_REPEAT, else 5), each repetition
on a fresh emulator project. Examples and shrinking time per profile: each system's `ParallelSpec.budgets`
(fencecheck/systems/<system>_parallel.py), else `fencecheck.parallel.BUDGETS` (the journal's).
Results go to artifacts/parallel/ (the evidence report's "parallel" section), shrunk failing programs to
counterexamples/parallel-<system>-<id>.json (replay: `fencecheck.parallel.replay_parallel(path, db)`).

The property runs against the system $FENCECHECK_SYSTEM names (`fencecheck gate --known-bad NAME` sets it),
the reference when unset; a run against another system writes no reference evidence. The concurrent
known-bad catalogue (test_parallel_known_bad.py: each system's `SuiteParts.parallel_variants`) always runs its
own variants.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.errors import FencecheckError
from fencecheck.parallel import DEFAULT_REPEAT, Budget, ProjectSource, budget_for
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import UNNAMED_SYSTEM, plugin
from fencecheck.plugin.specs import ENV_SYSTEM, check_configured, reference_run
from fencecheck.report.parallel import KNOWN_BAD_SUBDIR, PARALLEL_DIR
from fencecheck.suites import artifacts_root, hypothesis_profiles
from fencecheck.suites.pytest_plugin import count_option, wire_mix

ENV_REPEAT = "FENCECHECK_PARALLEL_REPEAT"
REFERENCE_RUN = "reference"  # the unnamed system's (the journal's) reference run (parallel/reference.json)


def reference_run_name(name: str) -> str:
    """The name of system `name`'s reference run, its artifact parallel/<name>.json: `reference` for the system
    that files naming none mean (the registry's UNNAMED_SYSTEM, the journal: the name its run had before there were
    others), `<name>-reference` for each other."""
    return REFERENCE_RUN if name == UNNAMED_SYSTEM else f"{name}-reference"


def budget_of(system: SystemPlugin, profile: str | None = None) -> Budget:
    """`system`'s parallel budget under `profile` (default: the selected Hypothesis profile): its parallel
    programs' own (`ParallelSpec.budgets`), else the engine's `fencecheck.parallel.BUDGETS`."""
    return budget_for(profile, plugin=system)


def parallel_systems() -> tuple[str, ...]:
    """The registered systems that have parallel programs (the others fail test_parallel_suite_parts.py)."""
    return suite_parts.with_part("parallel")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("parallel", "parallel suite")
    group.addoption(
        "--parallel-repeat",
        type=int,
        default=None,
        metavar="R",
        help=f"run every parallel program R times, each on a fresh project (default: ${ENV_REPEAT} or "
        f"{DEFAULT_REPEAT})",
    )


def parallel_repeat(config: pytest.Config) -> int:
    return count_option(config, "parallel_repeat", ENV_REPEAT, DEFAULT_REPEAT)


def artifacts_dir(config: pytest.Config) -> Path:
    return artifacts_root(config.rootpath)


def counterexamples_dir(config: pytest.Config) -> Path:
    return config.rootpath / "counterexamples"


def pytest_configure(config: pytest.Config) -> None:
    parallel_repeat(config)  # a bad value is a usage error before anything runs
    wire_mix(config)  # so is a malformed --wire-faults / $FENCECHECK_WIRE_FAULTS
    try:
        check_configured()  # so is a $FENCECHECK_SYSTEM that names nothing importable
    except FencecheckError as error:
        raise pytest.UsageError(f"{ENV_SYSTEM}: {error}") from None
    if hasattr(config, "workerinput"):
        return
    # The controller (or a plain run) forgets earlier runs' results, so the directory describes this run;
    # a system's reference run's file only when this run is about that system's reference.
    directory = artifacts_dir(config) / PARALLEL_DIR
    for name in parallel_systems():
        system = plugin(name)
        for variant in system.suites.parallel_variants():
            (directory / KNOWN_BAD_SUBDIR / f"{variant}.json").unlink(missing_ok=True)
        if reference_run(system=name):
            (directory / f"{reference_run_name(name)}.json").unlink(missing_ok=True)


def pytest_report_header(config: pytest.Config) -> str:
    profile = hypothesis_profiles.selected_name()
    programs = ", ".join(f"{budget_of(plugin(name), profile).examples} {name}" for name in parallel_systems())
    return f"parallel suite: profile {profile}, {programs} programs x {parallel_repeat(config)} repetitions"


@pytest.fixture
def repeat(request: pytest.FixtureRequest) -> int:
    return parallel_repeat(request.config)


def _worker(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


@pytest.fixture
def projects(emulator, request: pytest.FixtureRequest) -> ProjectSource:
    """Fresh emulator projects, one per repetition (each reset and its client closed after use)."""
    return ProjectSource(emulator, tag=f"par-{_worker(request.config)}")
