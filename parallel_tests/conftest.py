"""Parallel suite options and fixtures (fencecheck.parallel: a sequential prefix, then 2-4 branches of calls
released together, judged by the linearizability checker against the model), for the journal
(test_parallel_*.py), the lantern (test_lantern_parallel_*.py) and the gateway (test_gateway_parallel_*.py).

    .venv/bin/python -m pytest parallel_tests -n 2                            # ci budget, 5 repetitions
    .venv/bin/python -m pytest parallel_tests -n 2 --parallel-repeat 10       # every program 10 times
    FENCECHECK_PARALLEL_REPEAT=3 .venv/bin/python -m pytest parallel_tests
    .venv/bin/python -m pytest parallel_tests --hypothesis-profile=thorough   # many more programs

Every program runs R times (`--parallel-repeat`, else $FENCECHECK_PARALLEL_REPEAT, else 5), each repetition
on a fresh emulator project. Examples and shrinking time per profile: `fencecheck.parallel.BUDGETS` for the
journal, `LANTERN_BUDGETS` and `GATEWAY_BUDGETS` below for the lantern and the gateway.
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
from fencecheck.parallel import DEFAULT_REPEAT, Budget, ProjectSource, budget_for
from fencecheck.plugins.journal import JOURNAL, ReferenceAPI
from fencecheck.pytest_plugin import count_option, wire_mix
from fencecheck.report.parallel import KNOWN_BAD_SUBDIR, PARALLEL_DIR
from fencecheck.systems import ENV_SYSTEM, configured_implementation, reference_run
from known_bad.journal import CONCURRENT_VARIANTS

ENV_REPEAT = "FENCECHECK_PARALLEL_REPEAT"
REFERENCE_RUN = "reference"  # the name of the reference run's artifact (parallel/reference.json)
LANTERN_REFERENCE_RUN = "lantern-reference"  # the lantern's (parallel/lantern-reference.json)
GATEWAY_REFERENCE_RUN = "gateway-reference"  # the gateway's (parallel/gateway-reference.json)
# The lantern's concurrent known-bad variants the parallel suite must catch (known_bad/lantern/variants.py).
# Not finding_3_venue_in_read_set: what it breaks is B1's promise that lights at one venue never abort, a cost
# the checker does not judge (every history it makes is linearizable); race_tests' 24-way contest catches it.
LANTERN_VARIANTS = ("finding_5_read_then_write_extinguish", "rejected_a3_auto_extinguish_batch")
# The lantern's budgets: a few programs in ci (its CI share is small: a repetition takes ~6 s on an idle machine,
# most of it the emulator's lock waits and the prefix's whole-project read-backs), up to 3 branches and 5 racing
# calls; its one partition (the whole project) makes every call of a program one search for the checker.
LANTERN_BUDGETS = {
    "ci": Budget(examples=3, known_bad_examples=40, shrink_seconds=10, minimize_seconds=15, max_branches=3,
                 max_concurrent_ops=5),
    "gate": Budget(examples=3, known_bad_examples=40, shrink_seconds=10, minimize_seconds=15, max_branches=3,
                   max_concurrent_ops=5),
    "thorough": Budget(examples=60, known_bad_examples=100, shrink_seconds=60, minimize_seconds=60, max_branches=4,
                       max_concurrent_ops=8),
}


def _budget_for(budgets: dict[str, Budget], profile: str | None) -> Budget:
    """The budget of `profile` (default: the selected Hypothesis profile); ci's for a profile it does not name."""
    return budgets.get(profile or hypothesis_profiles.selected_name(), budgets["ci"])


def lantern_budget(profile: str | None = None) -> Budget:
    return _budget_for(LANTERN_BUDGETS, profile)


# The gateway's concurrent known-bad variants the parallel suite must catch (known_bad/gateway/variants.py).
GATEWAY_VARIANTS = ("claim_outside_the_transaction",)
# The gateway's budgets: its CI share is about a minute (the reference test), so ci runs a few programs of up
# to 3 branches and 5 racing calls on one journal; thorough many more.
GATEWAY_BUDGETS = {
    "ci": Budget(examples=5, known_bad_examples=40, shrink_seconds=10, minimize_seconds=15, max_branches=3,
                 max_concurrent_ops=5),
    "gate": Budget(examples=5, known_bad_examples=40, shrink_seconds=10, minimize_seconds=15, max_branches=3,
                   max_concurrent_ops=5),
    "thorough": Budget(examples=60, known_bad_examples=100, shrink_seconds=60, minimize_seconds=60, max_branches=4,
                       max_concurrent_ops=8),
}


def gateway_budget(profile: str | None = None) -> Budget:
    return _budget_for(GATEWAY_BUDGETS, profile)


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
    wire_mix(config)  # so is a malformed --wire-faults / $FENCECHECK_WIRE_FAULTS
    try:
        reference = reference_run(system=JOURNAL.name)  # so is a $FENCECHECK_SYSTEM that names nothing importable
    except FencecheckError as error:
        raise pytest.UsageError(f"{ENV_SYSTEM}: {error}") from None
    if hasattr(config, "workerinput"):
        return
    # The controller (or a plain run) forgets earlier runs' results, so the directory describes this run;
    # the reference run's file only when this run is about the reference.
    directory = artifacts_dir(config) / PARALLEL_DIR
    stale = [directory / KNOWN_BAD_SUBDIR / f"{v.name}.json" for v in CONCURRENT_VARIANTS]
    stale += [directory / KNOWN_BAD_SUBDIR / f"{name}.json" for name in (*LANTERN_VARIANTS, *GATEWAY_VARIANTS)]
    lantern_reference = reference_run(system="lantern")
    runs = [directory / f"{REFERENCE_RUN}.json"] * reference + [directory / f"{LANTERN_REFERENCE_RUN}.json"] * (
        lantern_reference) + [directory / f"{GATEWAY_REFERENCE_RUN}.json"] * reference_run(system="gateway")
    for path in runs + stale:
        path.unlink(missing_ok=True)


def pytest_report_header(config: pytest.Config) -> str:
    profile = hypothesis_profiles.selected_name()
    budget = budget_for(profile)
    return (f"parallel suite: profile {profile}, {budget.examples} journal, {lantern_budget(profile).examples} "
            f"lantern and {gateway_budget(profile).examples} gateway programs x {parallel_repeat(config)} repetitions")


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
