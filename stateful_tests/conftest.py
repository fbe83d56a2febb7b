"""Stateful suites: Hypothesis profiles, collection of the machine module, transition-coverage files.

Profiles (fencecheck/hypothesis_profiles.py, registered for every suite by fencecheck.pytest_plugin): `ci`
(the machines' default), `thorough`, `gate`. Select one with Hypothesis's own option or with the
environment; an unknown name is a usage error:

    .venv/bin/python -m pytest stateful_tests --hypothesis-profile=thorough
    FENCECHECK_PROFILE=gate .venv/bin/python -m pytest stateful_tests
    FENCECHECK_DERANDOMIZE=1 .venv/bin/python -m pytest stateful_tests      # any profile, derandomized

Each test process writes the transitions its machines exercised to
`artifacts/coverage/<system>-transitions-<worker>.json` (`journal`, `lantern`, `gateway`; `gw0`, `gw1`, ... under
xdist, else `main`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecheck import coverage, hypothesis_profiles
from fencecheck.errors import FencecheckError
from fencecheck.plugins import SYSTEM_NAMES
from fencecheck.systems import ENV_SYSTEM, check_configured, reference_run

HERE = Path(__file__).parent
# test modules whose names do not match test_*.py
MACHINE_MODULES = ("journal_machine.py", "lantern_machine.py", "gateway_machine.py")

def _coverage_dir(config: pytest.Config) -> Path:
    return config.rootpath / "artifacts" / "coverage"


def _worker(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


def pytest_configure(config: pytest.Config) -> None:
    # Profiles are registered and selected by fencecheck.pytest_plugin, for every suite.
    try:
        check_configured()  # a $FENCECHECK_SYSTEM naming nothing importable is a usage error
    except FencecheckError as error:
        raise pytest.UsageError(f"{ENV_SYSTEM}: {error}") from None
    # Transition coverage is about each system's reference: a run against another implementation (`fencecheck
    # gate --known-bad`) neither clears nor writes that system's, as the known-bad catalogue does not.
    if not hasattr(config, "workerinput"):  # the controller: forget earlier runs' files
        for system in SYSTEM_NAMES:
            if reference_run(system=system):
                coverage.remove_stale(_coverage_dir(config), system)


def pytest_report_header(config: pytest.Config) -> str:
    derandomized = ", derandomized" if hypothesis_profiles.derandomize_requested() else ""
    return f"fencecheck stateful profile: {hypothesis_profiles.selected_name()}{derandomized}"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if file_path.parent == HERE and file_path.name in MACHINE_MODULES and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_sessionfinish(session: pytest.Session) -> None:
    for system, counts in coverage.PROCESS_COUNTS.items():
        if counts and reference_run(system=system):
            coverage.write(_coverage_dir(session.config), _worker(session.config), counts, system)
