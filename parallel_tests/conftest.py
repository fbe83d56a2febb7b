"""Parallel suite options and fixtures (fencecheck.parallel: a sequential prefix, then 2-4 branches of journal
calls released together, judged by the linearizability checker against the model).

    .venv/bin/python -m pytest parallel_tests -n 2                            # ci budget, 5 repetitions
    .venv/bin/python -m pytest parallel_tests -n 2 --parallel-repeat 10       # every program 10 times
    FENCECHECK_PARALLEL_REPEAT=3 .venv/bin/python -m pytest parallel_tests
    .venv/bin/python -m pytest parallel_tests --hypothesis-profile=thorough   # many more programs

Every program runs R times (`--parallel-repeat`, else $FENCECHECK_PARALLEL_REPEAT, else 5), each repetition
on a fresh emulator project. Examples and shrinking time per profile: `fencecheck.parallel.BUDGETS`.
Results go to artifacts/parallel/ (the evidence report's "parallel" section), shrunk failing programs to
counterexamples/parallel-<system>-<id>.json (replay: `fencecheck.parallel.replay_parallel(path, db)`).

The property runs against the system $FENCECHECK_SYSTEM names (`fencecheck gate --known-bad NAME` sets it),
the reference when unset; a run against another system writes no reference evidence. The concurrent
known-bad catalogue (test_parallel_known_bad.py) always runs its own variants.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecheck import hypothesis_profiles
from fencecheck.errors import FencecheckError
from fencecheck.parallel import DEFAULT_REPEAT, ProjectSource, budget_for
from fencecheck.plugins.journal import JOURNAL, ReferenceAPI
from fencecheck.pytest_plugin import count_option
from fencecheck.report.parallel import KNOWN_BAD_SUBDIR, PARALLEL_DIR
from fencecheck.systems import ENV_SYSTEM, configured_implementation, reference_run
from known_bad.journal import CONCURRENT_VARIANTS

ENV_REPEAT = "FENCECHECK_PARALLEL_REPEAT"
REFERENCE_RUN = "reference"  # the name of the reference run's artifact (parallel/reference.json)


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
    return config.rootpath / "artifacts"


def counterexamples_dir(config: pytest.Config) -> Path:
    return config.rootpath / "counterexamples"


def pytest_configure(config: pytest.Config) -> None:
    parallel_repeat(config)  # a bad value is a usage error before anything runs
    try:
        reference = reference_run()  # so is a $FENCECHECK_SYSTEM that names nothing importable
    except FencecheckError as error:
        raise pytest.UsageError(f"{ENV_SYSTEM}: {error}") from None
    if hasattr(config, "workerinput"):
        return
    # The controller (or a plain run) forgets earlier runs' results, so the directory describes this run;
    # the reference run's file only when this run is about the reference.
    directory = artifacts_dir(config) / PARALLEL_DIR
    stale = [directory / KNOWN_BAD_SUBDIR / f"{v.name}.json" for v in CONCURRENT_VARIANTS]
    for path in [directory / f"{REFERENCE_RUN}.json"] * reference + stale:
        path.unlink(missing_ok=True)


def pytest_report_header(config: pytest.Config) -> str:
    profile = hypothesis_profiles.selected_name()
    budget = budget_for(profile)
    return (f"parallel suite: profile {profile}, {budget.examples} programs x {parallel_repeat(config)} "
            f"repetitions against the reference")


@pytest.fixture(scope="session")
def system() -> ReferenceAPI:
    """The journal under test: the reference, or the system $FENCECHECK_SYSTEM names."""
    return configured_implementation(JOURNAL)


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
