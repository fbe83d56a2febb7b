"""The report's three renderings: JSON round trip, Markdown verdict first, self-contained and escaped HTML."""

from __future__ import annotations

import json
import re

import attrs
import pytest

from fencecheck.report import Run, collect, render_html, render_json, render_markdown, write_reports
from fencecheck.report.html_builder import el, esc
from fencecheck.report.model import Environment, RaceSection, Settings, SuiteResult
from fencecheck.report.timeline import render_timeline
from model.journal import TRANSITIONS
from model.lantern import TRANSITIONS as LANTERN_TRANSITIONS
from tests.unit.report_support import copy_fixture, fixture_run, illegal_race, passing_run

HOSTILE = '<script>alert("op")</script>'


@pytest.fixture
def run(tmp_path) -> Run:
    return fixture_run(tmp_path)


def _hostile(run: Run) -> Run:
    """The illegal race with user data that tries to inject markup: an op description and a caller name."""
    bad = illegal_race(run)
    calls = tuple(
        attrs.evolve(c, op=HOSTILE, caller="<img src=x onerror=alert(1)>") if c.failing else c for c in bad.history
    )
    lanes = tuple("<img src=x onerror=alert(1)>" if name == "holder-13" else name for name in bad.lanes)
    bad = attrs.evolve(bad, history=calls, lanes=lanes, explanation=f"explained: {HOSTILE}")
    return attrs.evolve(run, races=RaceSection((bad,)))


# --- JSON --------------------------------------------------------------------------------------------


def test_json_rendering_round_trips(run):
    text = render_json(run)
    assert Run.from_json(json.loads(text)) == run
    assert text.endswith("\n") and json.loads(text)["schemaVersion"] == 4


# --- Markdown ----------------------------------------------------------------------------------------


def test_markdown_puts_the_verdict_on_the_first_line(run):
    lines = render_markdown(run).splitlines()
    assert lines[0].startswith("**fencecheck: FAIL**")
    assert "- race journal_distinct_holder_first_acquire-1: checker verdict illegal" in lines[:6]
    assert render_markdown(passing_run(run)).startswith("**fencecheck: PASS**")
    assert render_markdown(attrs.evolve(run, interrupted=True)).startswith("**fencecheck: INCOMPLETE**")


def test_markdown_summarises_every_section(run):
    text = render_markdown(run)
    for needle in ("**Stateful:**", "**Transition coverage:** journal 36/38", "**Emulator lock timeouts:** 74",
                   "**Rules:** boundary holds", "1 survived", "**Races:** 5 runs",
                   "counterexamples/race-journal_distinct_holder_first_acquire-"):
        assert needle in text, needle


def test_markdown_says_not_run_and_stays_short(run):
    empty = Run("ci", None, None, False, Environment(), Settings(), (SuiteResult("unit", "passed", 1, 1),))
    text = render_markdown(empty)
    for section in ("Stateful", "Transition coverage", "Emulator lock timeouts", "Rules", "Known-bad catalogue",
                    "Races"):
        assert f"**{section}:** not run" in text
    many = tuple(f"tests/t.py::test_{i}|x" for i in range(500))
    noisy = attrs.evolve(run, suites=(SuiteResult("unit", "failed", 500, 0, 500, failing=many),))
    text = render_markdown(noisy)
    assert len(text) < 8000 and "… and 492 more" in text
    assert "| unit | failed |" in text


def test_markdown_cells_cannot_break_the_table(run):
    odd = attrs.evolve(run, suites=(SuiteResult("a|b\nc", "passed", 1, 1),))
    assert "| a\\|b c | passed |" in render_markdown(odd)


# --- HTML --------------------------------------------------------------------------------------------


def test_html_loads_nothing_from_the_network(run):
    page = render_html(run)
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"\bsrc\s*=", page)
    assert "<link" not in page and "@import" not in page
    assert re.findall(r"url\(([^)]*)\)", page) == ["#hatch"] * page.count("url(#hatch)")
    assert "default-src 'none'" in page.replace("&#x27;", "'")


def test_html_escapes_user_data(run):
    page = render_html(_hostile(run))
    assert HOSTILE not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;op&quot;)&lt;/script&gt;" in page
    assert page.count("<script") == 1  # the page's own script only


def test_html_verdict_comes_first(run):
    page = render_html(run)
    body = page[page.index("<body>"):]
    assert body.index('id="verdict"') < body.index("<main>")
    assert 'data-verdict="fail"' in page and "fencecheck: FAIL" in page


def test_html_has_every_coverage_row(run):
    page = render_html(run)
    for row in (*TRANSITIONS, *LANTERN_TRANSITIONS):
        assert f'data-transition="{row.id}"' in page, row.id
    unexercised = re.findall(r'<tr class="unexercised" data-transition="([^"]+)"', page)
    assert unexercised == list(run.coverage.of("journal").unexercised_reachable)


def test_html_highlights_the_failing_race_call(run):
    bad = illegal_race(run)
    svg = render_timeline(bad)
    failing = re.findall(r'<g class="([^"]*)" data-call-id="(\d+)"', svg)
    assert [call_id for classes, call_id in failing if "failing" in classes.split()] == [str(bad.failing_call)]
    assert "cannot be placed" in svg
    page = render_html(run)
    assert f'<details class="race" id="race-{bad.run_id}" open' in page  # failing runs start open
    assert 'class="failing">cannot be placed: call' in page


def test_timeline_draws_one_bar_per_call_with_its_linearization_place(run):
    for scenario in run.races.scenarios:
        svg = render_timeline(scenario)
        assert svg.count('<g class="call ') == len(scenario.history)
        for call in scenario.history:
            if call.order is not None:
                assert f'data-call-id="{call.id}" data-order="{call.order}"' in svg
        assert svg.count('class="lane-label"') == len(scenario.lanes)


def test_timeline_marks_calls_that_never_returned(run):
    scenario = run.races.scenarios[0]
    hung = attrs.evolve(scenario.history[0], returned_ms=None, definite=False, outcome="no_return", order=None)
    svg = render_timeline(attrs.evolve(scenario, history=(hung, *scenario.history[1:])))
    assert 'class="call indefinite no-return"' in svg


def test_html_says_not_run(run):
    page = render_html(attrs.evolve(run, races=None, known_bad=None, rules=None, parallel=None))
    assert page.count("Not run: no artifact files for this section.") == 4


def test_html_links_counterexamples_relative_to_the_report(tmp_path):
    artifacts = copy_fixture(tmp_path)
    paths = write_reports(collect(artifacts), artifacts)
    page = paths[2].read_text()
    assert 'href="../counterexamples/race-journal_distinct_holder_first_acquire-' in page
    assert [p.name for p in paths] == ["evidence.json", "evidence.md", "evidence.html"]


def test_builder_escapes_unless_safe():
    assert esc("<b>") == "&lt;b&gt;"
    assert el("p", "<i>", el("b", "x"), title='"q"') == '<p title="&quot;q&quot;">&lt;i&gt;<b>x</b></p>'
    assert el("input", type="checkbox", checked=True, hidden=False) == '<input type="checkbox" checked>'

