"""evidence.html in a real headless Chromium: it renders the verdict, the coverage table and the race
timelines, its script runs, nothing is loaded from anywhere but the file itself, and the console stays
clean. Leaves a screenshot of the whole page at artifacts/report-screenshot.png.

Chromium is Debian's package (`./run tests` installs it when it can); without it this test fails, never skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fencecheck.report import collect, write_reports
from model.journal import TRANSITIONS
from model.lantern import TRANSITIONS as LANTERN_TRANSITIONS
from tests.browser.cdp import CHROMIUM, Browser
from tests.unit.report_support import ILLEGAL_RUN, copy_fixture, passing_run

pytestmark = pytest.mark.browser

SCREENSHOT = Path(__file__).resolve().parents[2] / "artifacts" / "report-screenshot.png"


@pytest.fixture
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: `./run setup` installs it (as root), or `sudo apt-get install chromium`",
                    pytrace=False)
    session = Browser()
    try:
        yield session
    finally:
        session.close()


def _open(browser: Browser, page: Path) -> None:
    browser.open(page.resolve().as_uri())
    assert browser.evaluate("document.documentElement.dataset.ready") == "true", "the page's script did not run"


def _assert_self_contained_and_clean(browser: Browser, page: Path) -> None:
    assert browser.requested_urls() == [page.resolve().as_uri()]
    assert browser.console_errors() == []


def test_failing_report_in_chromium(tmp_path, browser):
    artifacts = copy_fixture(tmp_path)
    run = collect(artifacts)
    page = write_reports(run, artifacts)[2]
    _open(browser, page)

    verdict = browser.evaluate("document.querySelector('#verdict h1').textContent")
    assert verdict == "fencecheck: FAIL"
    assert "checker verdict illegal" in browser.evaluate("document.querySelector('#verdict ul').textContent")

    for system, table in (("journal", TRANSITIONS), ("lantern", LANTERN_TRANSITIONS)):  # one table per system
        rows = browser.evaluate(
            f"Array.from(document.querySelectorAll('#coverage-table-{system} tbody tr'), r => r.dataset.transition)"
        )
        assert rows == [row.id for row in table]
    # The page's filter: only the unexercised reachable rows stay visible.
    browser.evaluate("document.getElementById('only-unexercised').click()")
    visible = browser.evaluate(
        "Array.from(document.querySelectorAll('.coverage-table tbody tr'))"
        ".filter(r => r.offsetParent !== null).map(r => r.dataset.transition)"
    )
    assert visible == list(run.coverage.of("journal").unexercised_reachable)  # the lantern's are all exercised
    browser.evaluate("document.getElementById('only-unexercised').click()")

    timelines = browser.evaluate("Array.from(document.querySelectorAll('svg.timeline'), s => s.dataset.run)")
    assert sorted(timelines) == sorted(s.run_id for s in run.races.scenarios)
    failing = browser.evaluate(
        f"(() => {{ const g = document.querySelector('svg[data-run=\"{ILLEGAL_RUN}\"] g.failing');"
        " const r = g.querySelector('rect').getBoundingClientRect();"
        " return {id: g.dataset.callId, fill: getComputedStyle(g.querySelector('rect')).fill,"
        " visible: r.width > 0 && r.height > 0}; })()"
    )
    bad = next(s for s in run.races.scenarios if s.run_id == ILLEGAL_RUN)
    assert failing == {"id": str(bad.failing_call), "fill": "rgb(209, 36, 47)", "visible": True}
    bars = browser.evaluate(f"document.querySelectorAll('svg[data-run=\"{ILLEGAL_RUN}\"] g.call').length")
    assert bars == len(bad.history)

    _assert_self_contained_and_clean(browser, page)
    browser.screenshot(SCREENSHOT)
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_passing_report_in_chromium(tmp_path, browser):
    run = passing_run(collect(copy_fixture(tmp_path)))
    page = write_reports(run, tmp_path / "out")[2]
    _open(browser, page)
    assert browser.evaluate("document.querySelector('#verdict').dataset.verdict") == "pass"
    background = browser.evaluate("getComputedStyle(document.querySelector('#verdict')).backgroundColor")
    assert background == "rgb(26, 127, 55)"
    # Passing races start folded; "expand / collapse all" opens them.
    assert browser.evaluate("document.querySelectorAll('details.race[open]').length") == 0
    browser.evaluate("document.getElementById('expand-races').click()")
    assert browser.evaluate("document.querySelectorAll('details.race[open]').length") == len(run.races.scenarios)
    _assert_self_contained_and_clean(browser, page)


def test_the_harness_sees_console_errors_and_loads(tmp_path, browser):
    """Negative control: the checks above would notice an error or a load (one to loopback's discard port)."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><img src='http://127.0.0.1:9/x.png'>"
        "<script>document.documentElement.dataset.ready = 'true'; console.error('seen');"
        " setTimeout(() => { throw new Error('boom'); });</script></body></html>"
    )
    _open(browser, page)
    browser.evaluate("new Promise(resolve => setTimeout(resolve, 100))")
    errors = browser.console_errors()
    assert any("seen" in e for e in errors) and any("boom" in e for e in errors)
    assert "http://127.0.0.1:9/x.png" in browser.requested_urls()
