"""The gate's "what failed" summary (fencecheck/report/failures.py) and the system resolver
(fencecheck/plugin/specs.py)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin.specs import ENV_SYSTEM, configured_implementation, describe_system
from fencecheck.report import Run, failures
from fencecheck.report.render_html import render_html
from fencecheck.report.render_markdown import render_markdown
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE, resolve_system
from tests.unit.report_support import fixture_run

ROOT = Path("/work/project")

RACE_JUNIT = """<testsuites><testsuite>
<testcase classname="race_tests.test_race_reference" name="test_race[r0-journal-preseeded_next_audit]" time="2.0">
<failure message="AssertionError: preseeded_next_audit: the history is not linearizable">scenario = x
E       AssertionError: preseeded_next_audit: the history is not linearizable (history saved to \
/work/project/counterexamples/race-preseeded_next_audit-98597bd041.json)
E         illegal: 1 of 1 command key(s) are not linearizable.
E         command key f7e962fa is not linearizable.
E         Longest linearizable prefix (2 calls):
E       assert 'illegal' == 'ok'
</failure></testcase>
<testcase classname="race_tests.test_race_reference" name="test_race[r0-journal-identical_registrations]" time="1.0"/>
<testcase classname="race_tests.test_race_reference" name="test_race[r0-journal-expired_takeover]" time="1.0">
<error message="failed on setup with &quot;Failed: EmulatorStartError: no emulator&quot;">EmulatorStartError: no \
emulator</error></testcase>
</testsuite></testsuites>
"""


def test_race_failure_names_scenario_verdict_and_the_saved_history():
    found = failures.from_junit(RACE_JUNIT, "races", ROOT)
    assert [f.test for f in found] == [
        "race_tests.test_race_reference::test_race[r0-journal-preseeded_next_audit]",
        "race_tests.test_race_reference::test_race[r0-journal-expired_takeover]",
    ]
    race, error = found
    assert race.summary == (
        "AssertionError: preseeded_next_audit: the history is not linearizable (history saved to "
        "/work/project/counterexamples/race-preseeded_next_audit-98597bd041.json)",
        "illegal: 1 of 1 command key(s) are not linearizable.",
        "command key f7e962fa is not linearizable.",
    )
    assert race.counterexamples == ("counterexamples/race-preseeded_next_audit-98597bd041.json",)
    assert race.replay_commands == (
        ".venv/bin/python -m fencecheck replay counterexamples/race-preseeded_next_audit-98597bd041.json",
    )
    assert error.summary == ('failed on setup with "Failed: EmulatorStartError: no emulator"',)
    assert error.counterexamples == ()


def test_summary_stops_where_the_context_starts():
    text = ("fencecheck.runners.lockstep.LockstepMismatch: lockstep mismatch at step 2: complete(x)\n"
            "  implementation answered 'lease_rejected'\nmodel state after the step (as the model predicts it):\n  ...")
    assert failures.summarize(text) == ("LockstepMismatch: lockstep mismatch at step 2: complete(x)",
                                        "implementation answered 'lease_rejected'")
    assert failures.summarize("") == ("(no failure message)",)
    assert len(failures.summarize("x" * 1000)[0]) == failures.MAX_LINE


def test_paths_outside_the_project_stay_absolute_and_duplicates_go():
    text = ("see /elsewhere/counterexamples/race-a-1.json and counterexamples/M-2.py, "
            "again counterexamples/M-2.py")
    assert failures.counterexample_paths(text, ROOT) == ("/elsewhere/counterexamples/race-a-1.json",
                                                         "counterexamples/M-2.py")


def test_the_report_carries_the_section_before_its_footer(tmp_path):
    found = tuple(failures.from_junit(RACE_JUNIT, "races", ROOT))
    section = failures.markdown_section(found, "known_bad.journal:x", known_bad=True)
    assert section.startswith("**What failed:**\n- system under test: `known_bad.journal:x`")
    assert "- known-bad verdict: **" in section
    replay = "`.venv/bin/python -m fencecheck replay counterexamples/race-preseeded_next_audit-98597bd041.json`"
    assert replay in section
    run = attrs.evolve(fixture_run(tmp_path), failed_tests=found, system_under_test="known_bad.journal:x",
                       system_is_known_bad=True)
    lines = render_markdown(run).splitlines()
    start = lines.index("**What failed:**")
    assert lines[start + 1 : start + 2] == ["- system under test: `known_bad.journal:x` (a variant of a known-bad "
                                            "catalogue: fencecheck gate --known-bad)"]
    assert start < next(i for i, line in enumerate(lines) if line.startswith("<sub>"))
    assert Run.from_json(run.to_json()) == run  # evidence.json keeps them: failedTests, systemUnderTest
    page = render_html(run)
    assert 'id="what-failed"' in page and "race-preseeded_next_audit-98597bd041.json" in page


def test_another_implementation_has_the_run_s_verdict_and_no_known_bad_verdict(tmp_path):
    """`gate --system` with a stranger's implementation: nothing failed is no "survived", and it is not called a
    known-bad variant (only `gate --known-bad` runs have a known-bad verdict)."""
    section = failures.markdown_section([], "journal:theirs.journal")
    assert section == ("**What failed:** nothing\n- system under test: `journal:theirs.journal` (named by "
                       "fencecheck gate --system)\n")
    run = attrs.evolve(fixture_run(tmp_path), failed_tests=(), system_under_test="journal:theirs.journal")
    assert "known-bad verdict" not in render_markdown(run) and "known-bad" not in render_html(run).split(
        'id="what-failed"')[1].split("</section>")[0]


def test_nothing_failed_against_the_reference_adds_nothing(tmp_path):
    assert failures.markdown_section([], None) == ""
    assert failures.markdown_section([], "known_bad.journal:x").startswith("**What failed:** nothing")
    run = attrs.evolve(fixture_run(tmp_path), failed_tests=(), system_under_test=None)
    assert "What failed" not in render_markdown(run)


def test_markdown_escapes_html_and_backticks():
    failure = failures.Failure("unit", "t::a", ("<script>`x`</script>",), ())
    section = failures.markdown_section([failure])
    assert "<script>" not in section and "`` &lt;script&gt;`x`&lt;/script&gt; ``" in section


def test_sidecar_round_trip(tmp_path):
    failures.save_sidecar(tmp_path, "known_bad.journal:x", [], known_bad=True)
    assert failures.load_system(tmp_path) == "known_bad.journal:x" and failures.load_known_bad(tmp_path)
    failures.save_sidecar(tmp_path, "journal:theirs.journal", [])
    assert failures.load_system(tmp_path) == "journal:theirs.journal" and not failures.load_known_bad(tmp_path)
    (tmp_path / failures.SIDECAR).write_text("{not json")
    assert failures.load_system(tmp_path) is None
    assert failures.load_system(tmp_path / "missing") is None


def test_collect_skips_suites_without_junit(tmp_path):
    (tmp_path / "junit").mkdir()
    (tmp_path / "junit" / "races.xml").write_text(RACE_JUNIT)
    (tmp_path / "junit" / "unit.xml").write_text("<not xml")
    assert len(failures.collect(tmp_path, ["unit", "rules", "races"], ROOT)) == 2


# --- systems ------------------------------------------------------------------------------------------


def test_reference_is_the_reference_object():
    for spec in (None, "", "reference", "  reference  "):
        assert resolve_system(spec) is REFERENCE
    assert configured_implementation(JOURNAL, {}) is REFERENCE
    assert describe_system(REFERENCE) == "the reference"


def test_known_bad_spec_builds_the_variant():
    system = configured_implementation(JOURNAL, {ENV_SYSTEM: "known_bad.journal:earlier-clock-finishes"})
    assert system.module == "known_bad.journal:earlier-clock-finishes" and system is not REFERENCE
    assert system.error_type is not REFERENCE.error_type  # an isolated copy


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("known_bad.journal:nope", "no known-bad variant 'nope'; known: "),
        ("nowhere.at.all", "module 'nowhere.at.all' cannot be imported"),
        ("json", "has no attribute 'register_commerce_command'"),
        ("json:x", "json has no system(name) function"),
    ],
)
def test_bad_specs_say_what_was_expected(spec, message):
    with pytest.raises(SystemNotFoundError, match="journal system") as caught:
        resolve_system(spec)
    assert message in str(caught.value)
    assert isinstance(caught.value, ImportError)
