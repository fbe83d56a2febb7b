"""The evidence report's wire faults section (fencecheck/report/wire_faults.py): the fault kinds each suite
exercised (issue 15), from the suites' files to all three renderings and the verdict's warnings. Built on a
private copy of the report fixture (tests/fixtures/report), which records no wire faults of its own.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import attrs

from fencecheck.report import collect, judge, render_html, render_markdown
from fencecheck.report.artifacts import write_json, write_stateful_summary
from fencecheck.report.model import NOT_RUN, Run
from fencecheck.report.parallel import ParallelRun, write_parallel_run
from fencecheck.report.wire_faults import WireFaultEntry
from parallel_tests.test_parallel_reference import write_wire_faults
from tests.unit.report_support import copy_fixture, passing_run

STATEFUL_KINDS = {"fail-response Commit": 4, "reject Commit": 7}
RACE_KINDS = {"journal": {"cut-stream BatchGetDocuments": 2, "fail-response Commit": 3},
              "lantern": {"delay Commit": 1}}
PARALLEL_KINDS = {"fail BeginTransaction": 5, "fail-response Commit": 6}
RACE_FILE = "journal_commit_failure_registration-0.json"


def _artifacts(tmp_path):
    artifacts = copy_fixture(tmp_path)
    write_stateful_summary(artifacts, machine="JournalMachine", profile="gate", examples=100, steps=7912,
                           seconds=88.41, wire_faults=STATEFUL_KINDS)
    write_json(artifacts / "wire-faults" / "races.json", RACE_KINDS)
    config = SimpleNamespace(rootpath=artifacts.parent)  # the suite's own writer, as its tests call it
    write_wire_faults(config, SimpleNamespace(wire_seed="4242/program-3", wire_faults=PARALLEL_KINDS),
                      "journal-wire-faults", "journal")
    return artifacts


def _with_parallel_run(run: Run, tmp_path) -> Run:
    """`run` with a collected parallel section (so the parallel suite counts as run)."""
    artifacts = copy_fixture(tmp_path / "parallel")
    write_parallel_run(artifacts, ParallelRun("reference", "reference", "ci", 10, 5, 50, 10, 27.5))
    return attrs.evolve(run, parallel=collect(artifacts).parallel)


def test_every_suite_s_faults_are_collected_and_round_trip(tmp_path):
    artifacts = _artifacts(tmp_path)
    written = json.loads((artifacts / "wire-faults" / "parallel-journal-wire-faults.json").read_text())
    assert written == {"seed": "4242/program-3", "kinds": PARALLEL_KINDS, "system": "journal"}  # the writer names it
    run = collect(artifacts)
    assert not run.artifact_errors
    assert run.wire_faults is not None
    assert run.wire_faults.entries == (
        WireFaultEntry("stateful", "JournalMachine", None, None, STATEFUL_KINDS, "stateful/JournalMachine.json"),
        WireFaultEntry("races", "journal", "journal", None, RACE_KINDS["journal"], "wire-faults/races.json"),
        WireFaultEntry("races", "lantern", "lantern", None, RACE_KINDS["lantern"], "wire-faults/races.json"),
        WireFaultEntry("parallel", "journal-wire-faults", "journal", "4242/program-3", PARALLEL_KINDS,
                       "wire-faults/parallel-journal-wire-faults.json"),
    )
    data = json.loads(json.dumps(run.to_json()))
    assert data["wireFaults"]["status"] == "collected"
    assert data["wireFaults"]["entries"][3] == {
        "suite": "parallel", "name": "journal-wire-faults", "system": "journal", "seed": "4242/program-3",
        "kinds": PARALLEL_KINDS, "path": "wire-faults/parallel-journal-wire-faults.json"}
    assert Run.from_json(data) == run


def test_markdown_and_html_show_kinds_counts_and_the_seed(tmp_path):
    run = _with_parallel_run(passing_run(collect(_artifacts(tmp_path))), tmp_path)
    text = render_markdown(run)
    assert "\n\n**Wire faults:**\n\n- stateful: " in text and "(seed `4242/program-3`)\n\n" in text  # a list
    assert "- stateful: `JournalMachine` fail-response Commit 4, reject Commit 7" in text
    assert ("- races: `journal` cut-stream BatchGetDocuments 2, fail-response Commit 3; `lantern` delay Commit 1"
            in text)
    assert ("- parallel: `journal-wire-faults (journal)` fail BeginTransaction 5, fail-response Commit 6 "
            "(seed `4242/program-3`)") in text
    assert "none recorded" not in text
    page = render_html(run)
    assert 'id="wire-faults"' in page and 'href="#wire-faults"' in page
    assert "cut-stream BatchGetDocuments 2, fail-response Commit 3" in page and "4242/program-3" in page
    verdict = judge(run)
    assert verdict.status == "pass" and not [w for w in verdict.warnings if w.startswith("wire faults")]


def test_a_suite_that_ran_without_faults_is_a_warning_not_a_failure(tmp_path):
    run = _with_parallel_run(passing_run(collect(copy_fixture(tmp_path))), tmp_path)  # nothing recorded
    verdict = judge(run)
    assert verdict.status == "pass"
    assert [w for w in verdict.warnings if w.startswith("wire faults")] == [
        "wire faults: none recorded for the stateful suite",
        "wire faults: none recorded for the races suite",
        "wire faults: none recorded for the parallel suite",
    ]
    text = render_markdown(run)
    assert "- stateful: none recorded\n- races: none recorded\n- parallel: none recorded" in text
    assert "races: none recorded." in render_html(run)


def test_without_any_wire_file_the_section_is_not_run(tmp_path):
    run = attrs.evolve(passing_run(collect(copy_fixture(tmp_path))), stateful=None, wire_faults=None)
    data = run.to_json()
    assert data["wireFaults"] == {"status": NOT_RUN} and Run.from_json(data).wire_faults is None
    assert "no wireFaults artifacts (not run)" in judge(run).warnings
    assert "**Wire faults:** none recorded (by races)" in render_markdown(run)


def test_an_evidence_file_written_before_the_section_reads_as_not_run(tmp_path):
    data = json.loads(json.dumps(collect(_artifacts(tmp_path)).to_json()))
    del data["wireFaults"]
    assert Run.from_json(data).wire_faults is None


def test_a_parallel_file_without_a_system_is_read_by_its_name(tmp_path):
    artifacts = copy_fixture(tmp_path)
    write_json(artifacts / "wire-faults" / "parallel-reference.json", {"seed": 7, "kinds": {"delay Commit": 1}})
    write_json(artifacts / "wire-faults" / "parallel-lantern-wire-faults.json", {"seed": "s", "kinds": {}})
    run = collect(artifacts)
    assert not run.artifact_errors
    parallel = [(e.name, e.system, e.seed) for e in run.wire_faults.entries if e.suite == "parallel"]
    assert parallel == [("lantern-wire-faults", "lantern", "s"), ("reference", "journal", "7")]


def test_malformed_files_are_artifact_errors_naming_the_file(tmp_path):
    artifacts = _artifacts(tmp_path)
    write_json(artifacts / "wire-faults" / "races.json", {"journal": {"fail-response Commit": True}})
    write_json(artifacts / "wire-faults" / "parallel-journal-wire-faults.json",
               {"seed": 4242, "kinds": {}, "system": "nosuch"})
    write_json(artifacts / "wire-faults" / "parallel-old.json", {"kinds": {}})
    race = artifacts / "races" / RACE_FILE
    data = json.loads(race.read_text())
    race.write_text(json.dumps({**data, "wireFaults": {"seed": None, "kinds": {"reject Commit": "2"}}}))
    write_stateful_summary(artifacts, machine="JournalMachine", profile="gate", examples=1, steps=1, seconds=1.0,
                           wire_faults={"reject Commit": -1})
    run = collect(artifacts)
    assert sorted(e.path for e in run.artifact_errors) == [
        f"races/{RACE_FILE}", "stateful/JournalMachine.json", "wire-faults/parallel-journal-wire-faults.json",
        "wire-faults/parallel-old.json", "wire-faults/races.json"]
    assert "fail-response Commit" in next(e.message for e in run.artifact_errors if e.path.endswith("races.json"))
    assert judge(run).status == "fail"


def test_a_race_result_s_own_wire_faults_are_accepted(tmp_path):
    artifacts = copy_fixture(tmp_path)
    race = artifacts / "races" / RACE_FILE
    data = json.loads(race.read_text())
    race.write_text(json.dumps({**data, "wireFaults": {"seed": None, "kinds": {"reject Commit": 2}}}))
    run = collect(artifacts)
    assert not run.artifact_errors and any(s.run_id == RACE_FILE.removesuffix(".json") for s in run.races.scenarios)
