"""The evidence report's parallel section (fencecheck/report/parallel.py), from artifact files to all three
renderings and the verdict. Built on the report fixture (tests/fixtures/report), which has no parallel files
of its own: each test writes them into a private copy with the suite's own writers.
"""

from __future__ import annotations

import json

import attrs

from fencecheck.report import collect, judge, render_html, render_markdown
from fencecheck.report.model import NOT_RUN, Run
from fencecheck.report.parallel import (
    ParallelRun,
    ParallelVariant,
    write_parallel_run,
    write_parallel_variant,
)
from tests.unit.report_support import copy_fixture, passing_run

PASSING = ParallelRun("reference", "reference", "ci", 10, 5, 50, 10, 27.5)
LANTERN_PASSING = ParallelRun("lantern-reference", "reference", "ci", 4, 5, 20, 4, 60.6, plugin="lantern")
GATEWAY_PASSING = ParallelRun("gateway-reference", "reference", "ci", 5, 5, 25, 5, 21.0, plugin="gateway")
LANTERN_CAUGHT = ParallelVariant("finding_5_read_then_write_extinguish", "extinguish.ended:concurrent", "caught",
                                 3.1, 1, "fails always", 5, 5, 2, 2, 2,
                                 "counterexamples/parallel-lantern-finding_5-1.json", "p::t[f5]", plugin="lantern")
FAILING = attrs.evolve(PASSING, classification="fails sometimes", failed_repetitions=2, case_repetitions=5,
                       shrunk_branches=2, shrunk_ops=3, counterexample="counterexamples/parallel-reference-1.json",
                       message="illegal")
CAUGHT = ParallelVariant("acquire-checked-outside-transaction", "acquire.active.other_holder:concurrent", "caught",
                         4.5, 3, "fails always", 5, 5, 2, 2, 1, "counterexamples/parallel-a-1.json", "p::t[a]")


def _run(tmp_path, *, runs=(PASSING,), variants=(CAUGHT,)) -> Run:
    artifacts = copy_fixture(tmp_path)
    for run in runs:
        write_parallel_run(artifacts, run)
    for variant in variants:
        write_parallel_variant(artifacts, variant)
    return passing_run(collect(artifacts))


def test_the_section_is_collected_and_round_trips(tmp_path):
    run = _run(tmp_path)
    assert run.parallel is not None and run.parallel.runs == (PASSING,) and run.parallel.variants == (CAUGHT,)
    data = json.loads(json.dumps(run.to_json()))
    assert data["parallel"]["status"] == "collected"
    assert data["parallel"]["breakdown"] == {"caught": 1, "survived": 0, "timeout": 0, "error": 0}
    assert data["parallel"]["variants"][0]["shrunkSteps"] == 3 and data["parallel"]["variants"][0]["caught"]
    assert Run.from_json(data) == run
    assert ("parallel", CAUGHT.name, CAUGHT.counterexample) in [(c.kind, c.source, c.path) for c in run.counterexamples]


def test_a_passing_section_passes(tmp_path):
    assert judge(_run(tmp_path)).status == "pass"


def test_a_failing_reference_run_fails_the_verdict(tmp_path):
    verdict = judge(_run(tmp_path, runs=(FAILING,)))
    assert verdict.status == "fail"
    assert "parallel reference: fails sometimes (2/5 repetitions)" in verdict.reasons


def test_a_surviving_variant_fails_and_a_timeout_warns(tmp_path):
    survived = ParallelVariant("finish-split-transactions", "complete.terminal.conflict:concurrent", "survived")
    timeout = ParallelVariant("audit-id-from-stale-read", "any.corrupt:x", "timeout")
    verdict = judge(_run(tmp_path, variants=(CAUGHT, survived, timeout)))
    assert verdict.status == "fail"
    assert any("finish-split-transactions survived" in reason for reason in verdict.reasons)
    assert "parallel known-bad audit-id-from-stale-read: timeout" in verdict.warnings


def test_an_unreadable_file_is_an_artifact_error(tmp_path):
    artifacts = copy_fixture(tmp_path)
    write_parallel_run(artifacts, PASSING)
    (artifacts / "parallel" / "reference.json").write_text('{"format": "fencecheck.parallel-run/1", "name": 1}')
    run = collect(artifacts)
    assert [e.path for e in run.artifact_errors] == ["parallel/reference.json"]
    assert judge(run).status == "fail"


def test_markdown_and_html_show_the_section(tmp_path):
    run = _run(tmp_path, runs=(FAILING,))
    text = render_markdown(run)
    assert "**Parallel (journal):** 1 run(s), 10 programs, 50 repetitions; failing: `reference fails sometimes`" in text
    assert "**Concurrent known-bad:** 1 variants: 1 caught, 0 survived, 0 timeout, 0 error" in text
    page = render_html(run)
    assert 'id="parallel"' in page and 'href="#parallel"' in page
    assert "acquire-checked-outside-transaction" in page and "fails sometimes, 2 branches, 3 ops" in page


def test_not_run_is_said_everywhere(tmp_path):
    run = attrs.evolve(_run(tmp_path), parallel=None)
    assert "**Parallel:** not run" in render_markdown(run)
    assert "no parallel artifacts (not run)" in judge(run).warnings
    data = run.to_json()
    assert data["parallel"] == {"status": NOT_RUN}
    assert Run.from_json(data).parallel is None


def test_a_contended_reference_run_fails_the_verdict_for_contention(tmp_path):
    contended = attrs.evolve(PASSING, contended_repetitions=2, contention="contention: only 1 of 4 callers ...")
    assert contended.classification == "passes" and not contended.passed
    verdict = judge(_run(tmp_path, runs=(contended,)))
    assert verdict.status == "fail"
    assert verdict.reasons == (
        "parallel reference: contention: 2 repetition(s) had fewer than 90% definite answers; this is not a "
        "contract verdict",
    )


# --- every system ------------------------------------------------------------------------------------------


def test_each_system_s_runs_and_variants_are_collected_and_shown(tmp_path, no_system_environment):
    # The built-in systems' runs, and no system from outside registered (its programs would be "not run").
    run = _run(tmp_path, runs=(PASSING, LANTERN_PASSING, GATEWAY_PASSING), variants=(CAUGHT, LANTERN_CAUGHT))
    section = run.parallel
    assert section.systems == ("gateway", "journal", "lantern")
    assert [(r.name, r.plugin) for r in section.runs] == [
        ("gateway-reference", "gateway"), ("lantern-reference", "lantern"), ("reference", "journal")]
    data = json.loads(json.dumps(run.to_json()))
    assert [(r["name"], r["plugin"]) for r in data["parallel"]["runs"]] == [
        ("gateway-reference", "gateway"), ("lantern-reference", "lantern"), ("reference", "journal")]
    assert {v["name"]: v["plugin"] for v in data["parallel"]["variants"]}[LANTERN_CAUGHT.name] == "lantern"
    assert Run.from_json(data) == run
    verdict = judge(run)
    assert verdict.status == "pass" and not [w for w in verdict.warnings if w.startswith("parallel")]
    text = render_markdown(run)
    assert "**Parallel (journal):** 1 run(s), 10 programs, 50 repetitions; all linearizable" in text
    assert "**Parallel (lantern):** 1 run(s), 4 programs, 20 repetitions; all linearizable" in text
    assert "**Parallel (gateway):** 1 run(s), 5 programs, 25 repetitions; all linearizable" in text
    assert "**Concurrent known-bad:** 2 variants: 2 caught" in text
    page = render_html(run)
    assert "lantern-reference" in page and LANTERN_CAUGHT.name in page and "parallel-lantern-finding_5-1.json" in page
    assert ("parallel", LANTERN_CAUGHT.name, LANTERN_CAUGHT.counterexample) in [
        (c.kind, c.source, c.path) for c in run.counterexamples]


def test_a_failing_lantern_run_fails_the_verdict(tmp_path):
    failing = attrs.evolve(LANTERN_PASSING, classification="fails always", failed_repetitions=5, case_repetitions=5)
    verdict = judge(_run(tmp_path, runs=(PASSING, failing)))
    assert verdict.status == "fail" and "parallel lantern-reference: fails always (5/5 repetitions)" in verdict.reasons


def test_a_system_without_a_run_is_a_warning(tmp_path):
    verdict = judge(_run(tmp_path, runs=(PASSING,)))
    assert verdict.status == "pass" and "parallel: no run of the lantern's programs (not run)" in verdict.warnings
    assert "parallel: no run of the gateway's programs (not run)" in verdict.warnings
    assert "**Parallel (lantern):** no run" in render_markdown(_run(tmp_path / "v", runs=(PASSING,),
                                                                       variants=(LANTERN_CAUGHT,)))


def test_files_written_before_systems_were_named_are_the_journal_s(tmp_path):
    artifacts = copy_fixture(tmp_path)
    path = write_parallel_run(artifacts, PASSING)
    data = json.loads(path.read_text())
    del data["plugin"]
    path.write_text(json.dumps(data))
    variant = write_parallel_variant(artifacts, CAUGHT)
    data = json.loads(variant.read_text())
    del data["plugin"]
    variant.write_text(json.dumps(data))
    section = collect(artifacts).parallel
    assert section.runs == (PASSING,) and section.variants == (CAUGHT,) and section.systems == ("journal",)
