"""Shared helpers for the report tests: the fixture artifacts directory and runs derived from it.

The fixture (tests/fixtures/report/, rebuilt by its build_fixture.py) is a failing gate run: one illegal
race history with a call that cannot be placed, a known-bad variant that survived, one that timed out, two
reachable transitions never exercised. `passing_run` removes those, for the renderings of a pass.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import attrs

from fencecheck.report import collect
from fencecheck.report.model import CoverageSection, KnownBadCatalogue, RaceScenario, RaceSection, Run

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "report"
ILLEGAL_RUN = "journal_distinct_holder_first_acquire-1"


def copy_fixture(tmp_path: Path) -> Path:
    """A private copy of the fixture (artifacts/ and counterexamples/ side by side); returns its artifacts
    directory. Files are touched to now: the gate record's start lies in the past, so they count as this run's
    whatever the checkout's timestamps are."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("*.py", "__pycache__", "evidence.*"))
    now = time.time()
    for path in root.rglob("*"):
        os.utime(path, (now, now))
    return root / "artifacts"


def fixture_run(tmp_path: Path) -> Run:
    return collect(copy_fixture(tmp_path))


def illegal_race(run: Run) -> RaceScenario:
    assert run.races is not None
    return next(s for s in run.races.scenarios if s.run_id == ILLEGAL_RUN)


def passing_run(run: Run) -> Run:
    """The fixture run with everything that fails it taken out."""
    assert run.races is not None and run.known_bad is not None and run.coverage is not None
    suites = tuple(attrs.evolve(s, status="passed", passed=s.tests, failed=0, failing=()) for s in run.suites)
    races = RaceSection(tuple(s for s in run.races.scenarios if s.verdict == "ok"))
    variants = tuple(v for v in run.known_bad.variants if v.status == "caught")
    systems = tuple(
        attrs.evolve(c, rows=tuple(attrs.evolve(r, count=max(r.count, 1)) if r.reachable else r for r in c.rows))
        for c in run.coverage.systems
    )
    return attrs.evolve(
        run,
        suites=suites,
        races=races,
        known_bad=KnownBadCatalogue(variants),
        coverage=CoverageSection(systems),
        counterexamples=tuple(c for c in run.counterexamples if c.kind != "race"),
    )
