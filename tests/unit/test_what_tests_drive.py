"""Against one implementation (`--only-system`, what `fencecheck gate --known-bad` / `--system` passes), every test
left says what it drove (the JUnit property `fencecheck_drives`), the gate counts it per suite, and the evidence
report shows the counts: a reader sees how many tests put the named implementation to the test, and which of its
system's tests drove only the reference."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fencecheck.cli.main import _result_line, drives_lines
from fencecheck.report.junit import SuiteCounts, parse_junit
from fencecheck.report.model import Environment, Run, Settings, SuiteResult
from fencecheck.report.render_html import render_html
from fencecheck.report.render_markdown import render_markdown

ROOT = Path(__file__).resolve().parents[2]

SUITE = '''
import pytest

@pytest.mark.system("journal")
@pytest.mark.emulator
def test_drives_the_journal():
    assert True

@pytest.mark.system("journal")
def test_checks_the_journal_s_parts():
    assert True

@pytest.mark.system("journal")
@pytest.mark.reference_only("binds the reference to reach a row")
def test_drives_only_the_reference():
    assert True

def test_checks_the_suite_parts():
    assert True

@pytest.mark.system("lantern")
def test_of_another_system():
    assert True
'''


def _run(tmp_path: Path, source: str, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    test = tmp_path / "test_suite.py"
    test.write_text(textwrap.dedent(source))
    junit = tmp_path / "junit.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider", "-p",
                           "fencecheck.suites.pytest_plugin", f"--junitxml={junit}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    return done, junit


def test_each_test_against_one_system_says_what_it_drove(tmp_path):
    done, junit = _run(tmp_path, SUITE, "--only-system", "journal")
    assert done.returncode == 0, done.stdout + done.stderr
    counts = parse_junit(junit.read_text())
    assert (counts.tests, counts.drove_implementation, counts.no_implementation) == (4, 1, 2)
    assert counts.reference_only == ("test_suite::test_drives_only_the_reference",)
    assert counts.to_json()["reference_only"] == ["test_suite::test_drives_only_the_reference"]


def test_a_run_against_no_one_implementation_records_nothing(tmp_path):
    done, junit = _run(tmp_path, SUITE)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = parse_junit(junit.read_text())
    assert counts.tests == 5
    assert (counts.drove_implementation, counts.reference_only, counts.no_implementation) == (0, (), 0)
    assert drives_lines(counts) == []


def test_a_reference_only_marker_without_its_reason_is_a_usage_error(tmp_path):
    done, _junit = _run(tmp_path, '''
        import pytest

        @pytest.mark.system("journal")
        @pytest.mark.reference_only
        def test_no_reason():
            assert True
    ''', "--only-system", "journal")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "the reference_only marker takes one reason" in done.stdout + done.stderr


def test_the_gate_prints_what_each_suite_drove():
    counts = SuiteCounts(tests=3, passed=3, drove_implementation=1, reference_only=("m::test_ref",),
                         no_implementation=1)
    text = _result_line("[1/3] stateful", "passed", counts, 2.0)
    assert text.splitlines() == [
        "[1/3] stateful: passed, 3 passed, 0 failed, 2.0 s",
        "  1 tests drove the implementation under test, 1 only the reference, 1 no implementation (checks of the "
        "suite's parts)",
        "  reference-only: m::test_ref",
    ]


def test_the_evidence_shows_what_each_suite_drove():
    suites = (SuiteResult("stateful", "passed", tests=16, passed=16, drove_implementation=15, no_implementation=1),
              SuiteResult("unit", "passed", tests=9, passed=9))
    run = Run("ci", None, None, False, Environment(), Settings(), suites)
    text = render_markdown(run)
    assert ("- stateful: 15 tests drove it, 0 only the reference, 1 no implementation (checks of the suite's parts)"
            in text), text
    assert "- unit:" not in text
    assert "What each test drove" in render_html(run)
    assert Run.from_json(run.to_json()).suites == suites  # the evidence file keeps the counts


@pytest.mark.parametrize("suite", ["stateful_tests", "race_tests", "parallel_tests"])
def test_no_test_of_any_system_in_the_suites_that_take_it_drives_only_the_reference(suite):
    """Every stateful, race and parallel test of a system takes the implementation under test (the gateway's
    journeys used to bind the reference): none is marked reference_only, so none is left out of a gate against
    one implementation. A test that must stay reference-only is marked, and then counted and shown."""
    done = subprocess.run([sys.executable, "-m", "pytest", suite, "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--without-catalogues", "-m", "reference_only"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 5, done.stdout + done.stderr  # pytest's "no tests collected"
    assert "no tests collected" in done.stdout, done.stdout
