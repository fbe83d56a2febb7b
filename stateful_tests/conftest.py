"""Stateful suites: Hypothesis profiles, collection of every registered system's machine, transition-coverage files.

Profiles (fencecheck/suites/hypothesis_profiles.py, registered for every suite by fencecheck.suites.pytest_plugin): `ci`
(the machines' default), `thorough`, `gate`. Select one with Hypothesis's own option or with the
environment; an unknown name is a usage error:

    .venv/bin/python -m pytest stateful_tests --hypothesis-profile=thorough
    FENCECHECK_PROFILE=gate .venv/bin/python -m pytest stateful_tests
    FENCECHECK_DERANDOMIZE=1 .venv/bin/python -m pytest stateful_tests      # any profile, derandomized

Each registered system's lockstep machine is the module its plug-in names (`SuiteParts.machine`, a module whose
name does not match test_*.py), with any further tests on it (`SuiteParts.machine_tests`): collected here, with no
list of systems of its own. The built-in systems' live with each system's own tests
(`tests/systems/journal/machine.py::TestJournalLockstep::runTest`), a system from outside's in its folder
(`examples/cas_register/machine.py::TestCasRegisterMachine::runTest`); each is collected with this directory,
under its own path, so `pytest stateful_tests` and the gate's stateful suite run it (a machine module placed in
this directory is collected as this directory's). A system that names no machine fails test_suite_parts.py.

Each test process writes the transitions its machines exercised to
`artifacts/coverage/<system>-transitions-<worker>.json` (`journal`, `lantern`, `gateway`; `gw0`, `gw1`, ... under
xdist, else `main`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.checker import coverage, near_miss
from fencecheck.errors import FencecheckError
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin
from fencecheck.plugin.specs import ENV_SYSTEM, check_configured, reference_run
from fencecheck.suites import artifacts_root, hypothesis_profiles

HERE = Path(__file__).parent.resolve()


@functools.cache
def machine_files() -> frozenset[Path]:
    """The registered systems' machine modules and the further tests on their machines (`SuiteParts.machine`,
    `machine_tests`: test modules whose names do not match test_*.py), wherever they are, found without importing
    them."""
    named = [part for name in suite_parts.with_part("machine")
             for part in (plugin(name).suites.machine, *plugin(name).suites.machine_tests)]
    found = (suite_parts.module_file(where) for where in named)
    return frozenset(path for path in found if path is not None)


def outside_machine_files() -> tuple[Path, ...]:
    """The machine modules outside this directory (every built-in system's, under tests/systems/, and those of
    systems from outside the package), by path."""
    return tuple(sorted(path for path in machine_files() if path.parent != HERE))


class OutsideMachines(pytest.File):
    """The machine modules outside this directory, collected with it (on its conftest.py, which every collection
    of the directory walks): pytest alone would never collect them, since they are not test_*.py modules and no
    test path holds an outside system's folder. Each module keeps its own path as its node id. A module named on
    the command line is pytest's own to collect (never twice)."""

    def collect(self):
        for path in outside_machine_files():
            if not self.session.isinitpath(path):
                yield pytest.Module.from_parent(self, path=path)


def _coverage_dir(config: pytest.Config) -> Path:
    return artifacts_root(config.rootpath) / "coverage"


def _worker(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


def pytest_configure(config: pytest.Config) -> None:
    # Profiles are registered and selected by fencecheck.suites.pytest_plugin, for every suite.
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


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    resolved = file_path.resolve()
    if resolved.parent == HERE and resolved in machine_files() and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    if resolved == Path(__file__).resolve() and outside_machine_files():
        return OutsideMachines.from_parent(parent, path=file_path)
    return None


def pytest_sessionfinish(session: pytest.Session) -> None:
    for system, counts in coverage.PROCESS_COUNTS.items():
        if counts and reference_run(system=system):
            coverage.write(_coverage_dir(session.config), _worker(session.config), counts, system,
                           near_miss.PROCESS_COUNTS[system])
