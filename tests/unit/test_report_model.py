"""fencecheck.report: the data model, its JSON form, the verdict, the collector and the `report` command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs
import pytest

import fencecheck.cli.main as cli
from fencecheck.report import GateRecord, Run, collect, judge
from fencecheck.report.artifacts import known_bad_recorder, write_known_bad_result, write_stateful_summary
from fencecheck.report.codec import camel, decode, encode
from fencecheck.report.model import (
    NOT_RUN,
    SCHEMA_VERSION,
    ArtifactError,
    Coverage,
    CoverageSection,
    Environment,
    KnownBadCatalogue,
    KnownBadResult,
    RaceSection,
    RulesSummary,
    Settings,
    SuiteResult,
)
from fencecheck.report.record import RUN_FORMAT
from fencecheck.runners.contest_results import contest_result, save_result
from fencecheck.runners.contest_simulation import simulate_contest
from fencecheck.suites import hypothesis_profiles
from fencecheck.systems.lantern.plugin import LANTERN
from model.journal import TRANSITIONS
from model.lantern import TRANSITIONS as LANTERN_TRANSITIONS
from tests.systems.lantern.races import BY_NAME as LANTERN_SCENARIOS
from tests.unit.report_support import ILLEGAL_RUN, copy_fixture, fixture_run, illegal_race, passing_run

# --- codec -------------------------------------------------------------------------------------------


def test_camel_case_keys():
    assert camel("google_cloud_firestore") == "googleCloudFirestore"
    assert camel("count") == "count"


def test_codec_round_trips_nested_records_and_writes_derived_properties():
    catalogue = KnownBadCatalogue((KnownBadResult("v", "r", False, "survived", None, None, None, None),))
    data = encode(catalogue)
    assert data["breakdown"] == {"caught": 0, "survived": 1, "timeout": 0, "error": 0}
    assert data["variants"][0]["secondsToDetection"] is None
    assert decode(KnownBadCatalogue, json.loads(json.dumps(data))) == catalogue


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x", "status": "passed", "extra": 1}, "unknown keys"),
        ({"status": "passed"}, "missing key 'name'"),
        ({"name": "x", "status": "passed", "tests": "3"}, "expected int"),
        ({"name": "x", "status": "passed", "tests": True}, "expected int"),
        ({"name": "x", "status": "sideways"}, "unknown status"),
    ],
)
def test_codec_is_strict(data, message):
    with pytest.raises(ValueError, match=message):
        decode(SuiteResult, data)


# --- Run JSON ----------------------------------------------------------------------------------------


def test_run_json_round_trip(tmp_path):
    run = fixture_run(tmp_path)
    data = json.loads(json.dumps(run.to_json()))
    again = Run.from_json(data)
    assert again == run
    assert again.to_json() == data


def test_run_json_carries_schema_version_verdict_and_every_section(tmp_path):
    data = fixture_run(tmp_path).to_json()
    assert data["schemaVersion"] == SCHEMA_VERSION
    assert data["verdict"]["status"] == "fail"
    for key in ("stateful", "coverage", "races", "lockTimeouts", "rules", "knownBad"):
        assert data[key]["status"] == "collected", key
    assert data["environment"]["googleCloudFirestore"] == "2.34.1"
    assert data["seeds"]["hypothesis"] == "derandomized"
    assert data["seeds"]["races"][ILLEGAL_RUN] == 1102
    assert data["knownBad"]["breakdown"] == {"caught": 5, "survived": 1, "timeout": 1, "error": 0}
    assert data["lockTimeouts"]["count"] == 74


def test_sections_not_run_are_written_as_such():
    run = Run("ci", None, None, False, Environment(), Settings(), (SuiteResult("unit", "passed", 1, 1),))
    data = run.to_json()
    for key in ("stateful", "coverage", "races", "lockTimeouts", "rules", "knownBad"):
        assert data[key] == {"status": NOT_RUN}
    assert Run.from_json(data) == run


def test_other_schema_versions_are_refused(tmp_path):
    data = fixture_run(tmp_path).to_json()
    data["schemaVersion"] = 1
    with pytest.raises(ValueError, match="schemaVersion"):
        Run.from_json(data)


def test_derived_values_are_recomputed_not_trusted(tmp_path):
    data = fixture_run(tmp_path).to_json()
    data["verdict"] = {"status": "pass", "reasons": [], "warnings": []}
    assert Run.from_json(data).verdict.status == "fail"


# --- verdict -----------------------------------------------------------------------------------------


def _clean(tmp_path) -> Run:
    return passing_run(fixture_run(tmp_path))


def test_clean_run_passes(tmp_path):
    assert judge(_clean(tmp_path)).status == "pass"


def test_a_failed_suite_fails(tmp_path):
    run = _clean(tmp_path)
    suites = tuple(attrs.evolve(s, status="failed", failed=2) if s.name == "races" else s for s in run.suites)
    run = attrs.evolve(run, suites=suites)
    verdict = judge(run)
    assert verdict.status == "fail" and "suite races failed (2 failing tests)" in verdict.reasons


@pytest.mark.parametrize("verdict", ["illegal", "unknown"])
def test_an_illegal_or_unknown_race_fails(tmp_path, verdict):
    run = _clean(tmp_path)
    first = attrs.evolve(run.races.scenarios[0], verdict=verdict)
    run = attrs.evolve(run, races=RaceSection((first, *run.races.scenarios[1:])))
    assert judge(run).status == "fail"
    assert any(verdict in reason for reason in judge(run).reasons)


def test_race_problems_fail_even_with_an_ok_verdict(tmp_path):
    run = _clean(tmp_path)
    first = attrs.evolve(run.races.scenarios[0], problems=("audit 3 missing",))
    assert judge(attrs.evolve(run, races=RaceSection((first,)))).status == "fail"


def test_a_surviving_known_bad_variant_fails_timeouts_and_errors_warn(tmp_path):
    run = _clean(tmp_path)
    survived = KnownBadResult("v", "acquire.first", False, "survived")
    timeout = KnownBadResult("t", "acquire.first", False, "timeout")
    assert judge(attrs.evolve(run, known_bad=KnownBadCatalogue((survived,)))).status == "fail"
    verdict = judge(attrs.evolve(run, known_bad=KnownBadCatalogue((timeout,))))
    assert verdict.status == "pass" and "known-bad t: timeout" in verdict.warnings


def test_unexercised_transitions_fail_only_a_thorough_profile(tmp_path):
    run = _clean(tmp_path)
    journal = run.coverage.of("journal")
    rows = tuple(attrs.evolve(r, count=0) if r.id == "acquire.first" else r for r in journal.rows)
    gap = attrs.evolve(run, coverage=CoverageSection((Coverage(rows, 1, "journal"), run.coverage.of("lantern"))))
    assert judge(gap).status == "pass" and "1 reachable journal transitions unexercised" in judge(gap).warnings
    thorough = attrs.evolve(gap, profile="thorough")
    assert judge(thorough).status == "fail"
    assert judge(attrs.evolve(thorough, coverage=None)).reasons == (
        "profile thorough: no transition coverage was collected",
    )


def test_unreachable_rows_never_count_as_unexercised(tmp_path):
    run = attrs.evolve(_clean(tmp_path), profile="thorough")
    systems = []
    for coverage in run.coverage.systems:
        unreachable = [r for r in coverage.rows if not r.reachable]
        assert unreachable and all(not r.unexercised for r in unreachable)
        rows = tuple(attrs.evolve(r, count=0) if not r.reachable else r for r in coverage.rows)
        systems.append(attrs.evolve(coverage, rows=rows))
    assert judge(attrs.evolve(run, coverage=CoverageSection(tuple(systems)))).status == "pass"


def test_interrupted_or_nothing_run_is_incomplete(tmp_path):
    run = _clean(tmp_path)
    assert judge(attrs.evolve(run, interrupted=True)).status == "incomplete"
    nothing = tuple(SuiteResult(s.name, NOT_RUN) for s in run.suites)
    assert judge(attrs.evolve(run, suites=nothing)).status == "incomplete"


def test_unreadable_artifacts_and_an_open_rules_boundary_fail(tmp_path):
    run = _clean(tmp_path)
    assert judge(attrs.evolve(run, artifact_errors=(ArtifactError("races/x-0.json", "bad"),))).status == "fail"
    open_rules = attrs.evolve(run.rules, boundary_holds=False, deviations=("member-get-root",))
    assert judge(attrs.evolve(run, rules=open_rules)).status == "fail"


# --- collect -----------------------------------------------------------------------------------------


def test_collect_reads_every_section_of_the_fixture(tmp_path):
    run = fixture_run(tmp_path)
    assert [s.name for s in run.suites] == ["unit", "rules", "emulator", "stateful", "races", "parallel"]
    assert [s.status for s in run.suites] == ["passed", "passed", "passed", "passed", "failed", NOT_RUN]
    assert run.suites[-2].failing == (
        "race_tests.test_race_reference::test_race[r1-journal-distinct_holder_first_acquire]",)
    assert [c.system for c in run.coverage.systems] == ["journal", "lantern"]
    assert [r.id for r in run.coverage.of("lantern").rows] == [t.id for t in LANTERN_TRANSITIONS]
    assert not run.coverage.of("lantern").unexercised_reachable
    assert [r.id for r in run.coverage.of("journal").rows] == [t.id for t in TRANSITIONS]
    assert run.coverage.of("journal").unexercised_reachable == (
        "acquire.first_clock_before_registration",
        "fail.clock_earlier.exact_retry",
    )
    assert len(run.races.scenarios) == 5
    assert isinstance(run.rules, RulesSummary) and run.rules.boundary_holds and not run.rules.deviations
    assert run.stateful.examples == 100 and run.stateful.steps == 7912
    assert run.environment.source == "gate" and run.profile == "gate"
    assert not run.artifact_errors and not run.notes


def test_collect_rechecks_races_for_the_linearization(tmp_path):
    run = fixture_run(tmp_path)
    for scenario in run.races.scenarios:
        placed = sorted(c.order for c in scenario.history if c.order is not None)
        assert placed == list(range(1, len(placed) + 1)), scenario.run_id
        if scenario.verdict == "ok":
            assert scenario.linearization == "found" and scenario.failing_call is None
            assert all(c.order is not None for c in scenario.history if c.definite)
    bad = illegal_race(run)
    assert bad.linearization == "prefix"
    failing = next(c for c in bad.history if c.failing)
    assert failing.caller == "holder-13" and failing.outcome == "lease_acquired@1" and failing.order is None
    assert bad.counterexample in [c.path for c in run.counterexamples if c.exists]


def test_race_times_are_relative_to_the_first_invocation(tmp_path):
    for scenario in fixture_run(tmp_path).races.scenarios:
        assert min(c.invoked_ms for c in scenario.history) == 0
        assert all(c.returned_ms is None or c.returned_ms >= c.invoked_ms for c in scenario.history)
        assert set(scenario.lanes) == {c.caller for c in scenario.history}


def test_a_recorded_verdict_the_checker_disagrees_with_is_noted(tmp_path):
    artifacts = copy_fixture(tmp_path)
    path = artifacts / "races" / f"{ILLEGAL_RUN}.json"
    data = json.loads(path.read_text())
    data["verdict"] = "ok"
    path.write_text(json.dumps(data))
    run = collect(artifacts)
    assert any("re-checking the history gave illegal" in note for note in run.notes)
    assert illegal_race(run).linearization == "none"


def test_missing_sections_are_not_run(tmp_path):
    (tmp_path / "junit").mkdir()
    (tmp_path / "junit" / "unit.xml").write_text(
        '<testsuites><testsuite><testcase classname="t" name="a" time="0.1"/></testsuite></testsuites>'
    )
    run = collect(tmp_path)
    assert [(s.name, s.status) for s in run.suites] == [
        ("unit", "passed"),
        ("rules", NOT_RUN),
        ("emulator", NOT_RUN),
        ("stateful", NOT_RUN),
        ("races", NOT_RUN),
        ("parallel", NOT_RUN),
    ]
    for name in ("stateful", "coverage", "races", "lock_timeouts", "rules", "known_bad"):
        assert run.section_status(name) == NOT_RUN
    assert run.environment.source == "report"
    assert judge(run).status == "pass"
    assert "suite races not run" in judge(run).warnings and "no races artifacts (not run)" in judge(run).warnings


def test_an_empty_directory_is_incomplete_not_a_pass(tmp_path):
    assert judge(collect(tmp_path)).status == "incomplete"


def test_a_suite_that_ran_no_test_is_a_warning_and_suites_that_all_ran_none_are_incomplete(tmp_path):
    run = passing_run(fixture_run(tmp_path))
    one_empty = attrs.evolve(run, suites=(*run.suites, SuiteResult("extra", "empty")))
    assert judge(run).status == judge(one_empty).status == "pass"
    assert "suite extra ran no test" in judge(one_empty).warnings
    none_ran = attrs.evolve(run, suites=tuple(SuiteResult(suite.name, "empty") for suite in run.suites))
    assert judge(none_ran).status == "incomplete" and judge(none_ran).reasons[0] == "no suite ran a test"


def test_unreadable_files_are_reported_and_fail(tmp_path):
    artifacts = copy_fixture(tmp_path)
    (artifacts / "races" / "journal_expired_takeover-0.json").write_text("{ not json")
    (artifacts / "junit" / "unit.xml").write_text("<testsuites><unclosed>")
    run = collect(artifacts)
    assert sorted(e.path for e in run.artifact_errors) == ["junit/unit.xml", "races/journal_expired_takeover-0.json"]
    assert judge(run).status == "fail"
    assert "journal_expired_takeover-0" not in [s.run_id for s in run.races.scenarios]


def test_files_older_than_the_gate_record_are_ignored(tmp_path):
    artifacts = copy_fixture(tmp_path)
    old = artifacts / "races" / "journal_expired_takeover-0.json"
    os.utime(old, (1_000_000_000, 1_000_000_000))  # 2001: long before the record's start
    run = collect(artifacts)
    assert "journal_expired_takeover-0" not in [s.run_id for s in run.races.scenarios]
    assert any("races/journal_expired_takeover-0.json" in note for note in run.notes)


def test_a_gate_record_without_finish_is_an_incomplete_run(tmp_path):
    artifacts = copy_fixture(tmp_path)
    record = GateRecord.load(artifacts)
    attrs.evolve(record, finished_at=None).save(artifacts)
    assert judge(collect(artifacts)).status == "incomplete"


def test_known_bad_and_stateful_writers_match_the_collector(tmp_path):
    write_known_bad_result(tmp_path, name="a/b", rule="complete.exact", status="caught", seconds_to_detection=1.5,
                           shrunk_steps=3, counterexample=None, failing_property="p")
    write_stateful_summary(tmp_path, machine="M", profile="ci", examples=3, steps=20, seconds=1.0,
                           failures=[{"message": "boom", "counterexample": "counterexamples/M-1.py"}])
    run = collect(tmp_path)
    assert run.known_bad.variants == (KnownBadResult("a/b", "complete.exact", True, "caught", 1.5, 3, None, "p"),)
    assert run.stateful.failure_count == 1
    assert run.stateful.machines[0].wire_faults == {}  # no wire: the key is left out of the file
    write_stateful_summary(tmp_path, machine="M", profile="ci", examples=3, steps=20, seconds=1.0,
                           wire_faults={"reject Commit": 2, "fail-response Commit": 5})
    assert collect(tmp_path).stateful.machines[0].wire_faults == {"fail-response Commit": 5, "reject Commit": 2}
    assert [(c.kind, c.path, c.exists) for c in run.counterexamples] == [("stateful", "counterexamples/M-1.py", False)]
    with pytest.raises(ValueError, match="status"):
        write_known_bad_result(tmp_path, name="x", rule="r", status="killed", seconds_to_detection=None,
                               shrunk_steps=None, counterexample=None, failing_property=None)


def test_a_known_bad_recorder_writes_each_status_and_what_caught_it(tmp_path):
    record = known_bad_recorder(tmp_path, name="v", rule="r", failing_property="node: the pinned property")
    record("error")
    assert collect(tmp_path).known_bad.variants == (
        KnownBadResult("v", "r", False, "error", None, None, None, "node: the pinned property"),
    )
    with pytest.raises(RuntimeError, match="already written"):  # once, after every check
        record("caught")
    record = known_bad_recorder(tmp_path, name="v", rule="r", failing_property="node: the pinned property")
    record("caught", seconds=2.5, steps=4, counterexample="counterexamples/v.py", found="node: another property",
           warnings=("the shrunk program's length: 14 (expected at most 12; shrinking is time-capped)",))
    run = collect(tmp_path)
    assert run.known_bad.variants == (
        KnownBadResult("v", "r", True, "caught", 2.5, 4, "counterexamples/v.py", "node: another property",
                       ("the shrunk program's length: 14 (expected at most 12; shrinking is time-capped)",)),
    )
    # A bound that did not hold is a warning of the verdict, never a reason.
    assert "known-bad v: the shrunk program's length: 14 (expected at most 12; shrinking is time-capped)" in (
        run.verdict.warnings
    )
    assert not any("known-bad v" in reason for reason in run.verdict.reasons)


def test_contradictory_known_bad_file_and_bare_failure_count(tmp_path):
    (tmp_path / "known_bad").mkdir()
    (tmp_path / "known_bad" / "v.json").write_text(json.dumps(
        {"name": "v", "rule": "r", "caught": True, "status": "survived", "secondsToDetection": None,
         "shrunkSteps": None, "counterexample": None, "failingProperty": None}))
    (tmp_path / "stateful").mkdir()
    (tmp_path / "stateful" / "M.json").write_text(json.dumps(
        {"machine": "M", "profile": "ci", "examples": 5, "steps": 9, "seconds": 1.0, "failures": 2}))
    run = collect(tmp_path)
    assert [e.path for e in run.artifact_errors] == ["known_bad/v.json"]
    assert run.stateful.failure_count == 2


def test_lock_timeouts_from_emulator_sessions(tmp_path):
    (tmp_path / "emulator").mkdir()
    for worker, count in (("controller", 7), ("main", None)):
        (tmp_path / "emulator" / f"session-{worker}.json").write_text(json.dumps(
            {"worker": worker, "lock_timeout_count": count, "java_version": "17.0.15", "emulator_version": "1.19.9"}))
    run = collect(tmp_path)
    assert run.lock_timeouts.count == 7
    assert [s.source for s in run.lock_timeouts.sources] == ["pytest session controller", "pytest session main"]
    assert (run.environment.java, run.environment.emulator) == ("17.0.15", "1.19.9")


def test_gate_record_round_trip(tmp_path):
    record = GateRecord.begin(profile="ci", workers="2", selected=("unit",))
    record = record.with_suite("unit", "passed", 1.234).finish(interrupted=False, lock_timeouts=3)
    path = record.save(tmp_path)
    assert json.loads(path.read_text())["format"] == RUN_FORMAT
    assert GateRecord.load(tmp_path) == record
    assert record.settings.hypothesis["max_examples"] == hypothesis_profiles.PROFILES["ci"]["max_examples"]
    assert record.environment.python


# --- the `report` command ----------------------------------------------------------------------------


def test_report_command_renders_the_three_files(tmp_path, capsys):
    artifacts = copy_fixture(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["report", str(artifacts), "--output", str(out)]) == 1  # the fixture's verdict is fail
    assert sorted(p.name for p in out.iterdir()) == ["evidence.html", "evidence.json", "evidence.md"]
    assert "verdict: fail" in capsys.readouterr().out
    assert Run.from_json(json.loads((out / "evidence.json").read_text())).verdict.status == "fail"


def test_report_command_exit_codes(tmp_path):
    assert cli.main(["report", str(tmp_path / "missing")]) == 2
    (tmp_path / "junit").mkdir()
    (tmp_path / "junit" / "unit.xml").write_text(
        '<testsuites><testsuite><testcase classname="t" name="a" time="0.1"/></testsuite></testsuites>'
    )
    assert cli.main(["report", str(tmp_path)]) == 0
    assert Path(tmp_path / "evidence.md").read_text().startswith("**fencecheck: PASS**")


def test_race_runs_of_both_systems_are_collected_and_rechecked(tmp_path):
    """A journal run and a lantern contest's run, in one format: the saved history says which plug-in judges it
    again."""
    artifacts = copy_fixture(tmp_path)
    journal = json.loads((artifacts / "races" / "journal_complete_versus_fail-0.json").read_text())
    assert (journal["system"], journal["implementation"]) == ("journal", "reference")
    lantern_run = simulate_contest(LANTERN_SCENARIOS["double_extinguish"].contest(), plugin=LANTERN)
    save_result(contest_result(lantern_run), lantern_run, artifacts / "races")
    run = collect(artifacts)
    assert not run.artifact_errors
    lantern = next(s for s in run.races.scenarios if s.system == "lantern")
    assert (lantern.scenario, lantern.verdict, lantern.linearization) == ("lantern_double_extinguish", "ok", "found")
    assert all(call.order is not None for call in lantern.history)
    assert {s.system for s in run.races.scenarios} == {"journal", "lantern"}


def test_a_race_result_of_format_1_is_an_artifact_error_that_says_how_to_regenerate(tmp_path):
    artifacts = copy_fixture(tmp_path)
    path = artifacts / "races" / "journal_expired_takeover-0.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "format": "fencecheck.race-result/1"}))
    run = collect(artifacts)
    (error,) = [e for e in run.artifact_errors if e.path == "races/journal_expired_takeover-0.json"]
    assert "'fencecheck.race-result/1', which this fencecheck no longer reads" in error.message
    assert "Run the race suite again to regenerate it" in error.message
    assert "journal_expired_takeover-0" not in [s.run_id for s in run.races.scenarios]


def _with_definite(scenario, definite: int):
    return attrs.evolve(scenario, definite_callers=definite)


def test_a_race_run_whose_callers_were_all_unavailable_fails_for_contention(tmp_path):
    run = _clean(tmp_path)
    first = run.races.scenarios[0]
    assert first.verdict == "ok" and first.contention is None
    starved = _with_definite(first, 0)
    assert not starved.passed
    verdict = judge(attrs.evolve(run, races=RaceSection((starved, *run.races.scenarios[1:]))))
    assert verdict.status == "fail"
    assert f"race {starved.run_id}: contention: only 0 of {first.width} callers had a definite answer" in " ".join(
        verdict.reasons
    )
    assert any("this is not a contract verdict" in reason for reason in verdict.reasons)
    assert not any("checker verdict" in reason or "promise" in reason for reason in verdict.reasons)


def test_a_scenario_needs_99_percent_over_its_repeats_in_the_report(tmp_path):
    run = _clean(tmp_path)
    first, width = run.races.scenarios[0], 24
    # ten 24-way repeats, each above 90 %; 3 unanswered callers of 240 fall below 99 %
    missing = {0: 2, 1: 1}
    repeats = [attrs.evolve(first, repeat=n, width=width, definite_callers=width - missing.get(n, 0))
               for n in range(10)]
    assert all(r.contention is None for r in repeats)
    verdict = judge(attrs.evolve(run, races=RaceSection(tuple(repeats))))
    assert verdict.status == "fail"
    assert any(r.startswith(f"race {first.scenario}: contention: only {10 * width - 3} of {10 * width} callers over "
                            "10 repeats") for r in verdict.reasons)
    repeats[1] = attrs.evolve(repeats[1], definite_callers=width)  # 238 of 240: 99.2 %
    assert judge(attrs.evolve(run, races=RaceSection(tuple(repeats)))).status == "pass"


def test_callers_with_the_model_s_own_unavailable_answer_are_not_contention(tmp_path):
    run = _clean(tmp_path)
    first = attrs.evolve(run.races.scenarios[0], width=24, definite_callers=20)
    assert first.contention is not None
    excused = attrs.evolve(first, contract_unavailable_callers=4)
    assert excused.contention is None
    assert judge(attrs.evolve(run, races=RaceSection((excused,)))).status == "pass"
