"""evidence.html: the whole run in one self-contained page, verdict first.

Self-contained means no network: CSS, script and SVG are inline, fonts are the system's, and a
Content-Security-Policy meta tag (`default-src 'none'`) makes the browser refuse any load that slipped in.
Every value goes through `html_builder`, which escapes unless told otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fencecheck.report.failures import kind_text, system_note
from fencecheck.report.html_builder import Safe, el
from fencecheck.report.model import (
    NOT_RUN,
    SCHEMA_VERSION,
    Coverage,
    CoverageSection,
    KnownBadCatalogue,
    RaceScenario,
    RaceSection,
    RulesSummary,
    Run,
    StatefulSummary,
)
from fencecheck.report.mutation import mutation_html
from fencecheck.report.parallel import parallel_html
from fencecheck.report.timeline import hatch_defs, legend, render_timeline
from fencecheck.report.wire_faults import wire_html

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

STYLE = Safe("""
:root { --pass: #1a7f37; --fail: #d1242f; --incomplete: #9a6700; --muted: #667085; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1f2328;
       background: #f6f8fa; }
main { max-width: 1180px; margin: 0 auto; padding: 0 20px 40px; }
header.verdict { padding: 18px 20px; color: #fff; }
header.verdict h1 { margin: 0; font-size: 28px; letter-spacing: .02em; }
header.verdict ul { margin: 8px 0 0; padding-left: 20px; }
.verdict-pass { background: var(--pass); } .verdict-fail { background: var(--fail); }
.verdict-incomplete { background: var(--incomplete); }
header .sub { opacity: .9; }
header .warnings { margin-top: 6px; font-size: 13px; opacity: .92; }
nav { background: #fff; border-bottom: 1px solid var(--line); padding: 8px 20px; position: sticky; top: 0; z-index: 2; }
nav a { margin-right: 14px; color: #0969da; text-decoration: none; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 18px 0; padding: 14px 18px;
          overflow-x: auto; }
h2 { margin: 0 0 10px; font-size: 18px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
#races-table th, #races-table td { padding: 4px 5px; font-size: 13px; }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
td code { overflow-wrap: anywhere; } .nowrap { white-space: nowrap; overflow-wrap: normal; }
pre { background: #f6f8fa; padding: 8px; overflow: auto; max-height: 360px; border-radius: 4px; }
.muted { color: var(--muted); } .not-run { color: var(--incomplete); font-weight: 600; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; }
.b-pass, .b-ok, .b-passed, .b-caught, .b-allowed { background: var(--pass); }
.b-fail, .b-failed, .b-illegal, .b-survived, .b-error, .b-unexercised { background: var(--fail); }
.b-unknown, .b-timeout, .b-empty, .b-incomplete { background: var(--incomplete); }
.b-not-run, .b-denied { background: #57606a; }
tr.unexercised td { background: #ffebe9; } tr.unreachable td { color: var(--muted); }
tr.deviation td { background: #ffebe9; }
details.race { border-top: 1px solid var(--line); padding: 6px 0; }
details.race > summary { cursor: pointer; font-weight: 600; }
.timeline-wrap { overflow-x: auto; }
svg.timeline { display: block; margin: 6px 0; font: 11px system-ui, sans-serif; }
svg.timeline .lane-alt { fill: #f6f8fa; } svg.timeline .grid { stroke: #e4e8ec; }
svg.timeline .tick { fill: var(--muted); font-size: 10px; } svg.timeline .lane-label { fill: #1f2328; }
svg.timeline .order { fill: #fff; font-size: 9px; font-weight: 600; pointer-events: none; }
svg.timeline g.indefinite .order { fill: #4d3800; }
svg.timeline g.no-return rect { stroke: #9a6b00; stroke-dasharray: 3 2; }
svg.timeline g.failing rect { stroke: #6e0b12; stroke-width: 2.5; }
svg.timeline .failing-label { fill: var(--fail); font-weight: 700; }
svg.timeline g.call:hover rect { stroke: #000; stroke-width: 1.5; }
.legend { margin: 4px 0; } .legend .key { margin-right: 14px; white-space: nowrap; }
.legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px; border-radius: 2px;
            vertical-align: -1px; }
.legend i.hatched { background: repeating-linear-gradient(45deg, #f3c969 0 3px, #9a6b00 3px 4px); }
ol.linearization { columns: 2; font-size: 12px; margin: 4px 0; }
ol.linearization li.failing { color: var(--fail); font-weight: 700; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 0 24px; }
.controls { margin: 4px 0 8px; }
footer { color: var(--muted); text-align: center; font-size: 12px; }
""")

# Small conveniences only; the page reads fine with scripts off.
SCRIPT = Safe("""
(function () {
  'use strict';
  function toggleRows(checkbox, selector, keep) {
    document.querySelectorAll(selector).forEach(function (row) {
      row.hidden = checkbox.checked && !row.matches(keep);
    });
  }
  var cov = document.getElementById('only-unexercised');
  if (cov) {
    cov.addEventListener('change', function () {
      toggleRows(cov, '.coverage-table tbody tr', '.unexercised');
    });
  }
  var failingOnly = document.getElementById('only-failing-races');
  if (failingOnly) {
    failingOnly.addEventListener('change', function () {
      document.querySelectorAll('details.race').forEach(function (d) {
        d.hidden = failingOnly.checked && d.dataset.passed === 'true';
      });
    });
  }
  var expand = document.getElementById('expand-races');
  if (expand) {
    expand.addEventListener('click', function () {
      var all = document.querySelectorAll('details.race');
      var open = Array.prototype.some.call(all, function (d) { return !d.open; });
      all.forEach(function (d) { d.open = open; });
    });
  }
  document.documentElement.dataset.ready = 'true';
})();
""")


def badge(status: str) -> Safe:
    return el("span", status, class_=f"badge b-{status.replace(' ', '-')}")


def _table(headers: Sequence[str], rows: Sequence[Any], *, numeric: Sequence[int] = (), **attributes: Any) -> Safe:
    head = el("tr", [el("th", h, class_="num" if i in numeric else None) for i, h in enumerate(headers)])
    return el("table", el("thead", head), el("tbody", rows), **attributes)


def _row(*cells: Any, numeric: Sequence[int] = (), **attributes: Any) -> Safe:
    return el("tr", [el("td", c, class_="num" if i in numeric else None) for i, c in enumerate(cells)], **attributes)


def _section(anchor: str, title: str, status: str | None, *body: Any) -> Safe:
    heading = el("h2", title, " ", badge(status) if status == NOT_RUN else None)
    if status == NOT_RUN:
        body = (el("p", "Not run: no artifact files for this section.", class_="not-run"),)
    return el("section", heading, body, id=anchor)


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


# --- sections ----------------------------------------------------------------------------------------


def _header(run: Run) -> Safe:
    verdict = run.verdict
    commit = (run.environment.commit or "unknown")[:12] + (" (dirty)" if run.environment.dirty else "")
    return el(
        "header",
        el("h1", f"fencecheck: {verdict.status.upper()}"),
        el("div", f"profile {run.profile or '—'} · commit {commit} · started {run.started_at or '—'}", class_="sub"),
        el("ul", [el("li", reason) for reason in verdict.reasons], class_="reasons") if verdict.reasons else None,
        el("div", "Warnings: ", "; ".join(verdict.warnings), class_="warnings") if verdict.warnings else None,
        id="verdict",
        class_=f"verdict verdict-{verdict.status}",
        data_verdict=verdict.status,
    )


def _nav() -> Safe:
    links = [("suites", "Suites"), ("what-failed", "What failed"), ("races", "Races"), ("parallel", "Parallel"),
             ("wire-faults", "Wire faults"), ("mutation", "Mutation"), ("coverage", "Coverage"),
             ("known-bad", "Known-bad"), ("rules", "Rules"), ("stateful", "Stateful"),
             ("counterexamples", "Counterexamples"), ("run", "Run"), ("notes", "Notes")]
    return el("nav", [el("a", label, href=f"#{anchor}") for anchor, label in links])


def _run_section(run: Run) -> Safe:
    env = run.environment
    environment = [
        ("commit", env.commit), ("dirty", env.dirty), ("Python", env.python), ("Hypothesis", env.hypothesis),
        ("google-cloud-firestore", env.google_cloud_firestore), ("pytest", env.pytest), ("Java", env.java),
        ("emulator", env.emulator), ("captured by", env.source),
        ("implementation under test", env.implementation or "the references"),
    ]
    settings = run.settings
    seeds = run.seeds()
    config = [
        ("profile", run.profile), ("started", run.started_at), ("finished", run.finished_at),
        ("interrupted", run.interrupted), ("Hypothesis settings", ", ".join(f"{k}={v}" for k, v in
                                                                           settings.hypothesis.items()) or "—"),
        ("workers", settings.workers), ("race repetitions", settings.race_repeat),
        ("suites selected", ", ".join(settings.selected_suites) or "all"),
        ("Hypothesis seed", seeds["hypothesis"]),
        ("race id seeds", [el("div", f"{k}: {v}") for k, v in seeds["races"].items()] or "—"),
    ]
    def pairs(items: list[tuple[str, Any]]) -> Safe:
        cells = [(k, v if isinstance(v, list) else _fmt(v)) for k, v in items]
        return el("table", el("tbody", [el("tr", el("th", k), el("td", v)) for k, v in cells]))

    return _section(
        "run",
        "Run",
        None,
        el("div", el("div", el("h3", "Environment"), pairs(environment)),
           el("div", el("h3", "Profile, settings and seeds"), pairs(config)), class_="grid2"),
    )


def _suites_section(run: Run) -> Safe:
    rows = [
        _row(s.name, badge(s.status), s.tests, s.passed, s.failed + s.errors, s.skipped, _fmt(s.seconds),
             _fmt(s.wall_seconds), el("pre", "\n".join(s.failing[:10])) if s.failing else "",
             numeric=(2, 3, 4, 5, 6, 7))
        for s in run.suites
    ]
    table = _table(["suite", "status", "tests", "passed", "failed", "skipped", "test s", "wall s", "failing"],
                   rows, numeric=(2, 3, 4, 5, 6, 7), id="suites-table")
    driving = [s for s in run.suites if s.against_one]
    if not driving:
        return _section("suites", "Suites", None, table)
    drove = _table(
        ["suite", "drove the implementation under test", "reference only", "no implementation", "reference-only tests"],
        [_row(s.name, s.drove_implementation, len(s.reference_only), s.no_implementation,
              el("pre", "\n".join(s.reference_only)) if s.reference_only else "", numeric=(1, 2, 3))
         for s in driving],
        numeric=(1, 2, 3), id="suites-drove-table")
    return _section("suites", "Suites", None, el("div", table, el("h3", "What each test drove"), drove))


def _stateful_section(stateful: StatefulSummary | None) -> Safe:
    if stateful is None:
        return _section("stateful", "Stateful machines", NOT_RUN)
    rows = [
        _row(m.machine, m.profile or "—", m.examples, m.steps, _fmt(m.seconds, 1), len(m.failures),
             el("ul", [el("li", f.message, " ", el("code", f.counterexample) if f.counterexample else None)
                       for f in m.failures]) if m.failures else "", numeric=(2, 3, 4, 5))
        for m in stateful.machines
    ]
    total = el("p", f"{stateful.examples} examples, {stateful.steps} steps, {stateful.failure_count} failure(s) "
                    f"over {len(stateful.machines)} machine(s).")
    table = _table(["machine", "profile", "examples", "steps", "seconds", "failures", "details"], rows,
                   numeric=(2, 3, 4, 5))
    return _section("stateful", "Stateful machines", None, total, table)


def _coverage_section(section: CoverageSection | None) -> Safe:
    if section is None:
        return _section("coverage", "Transition coverage", NOT_RUN)
    controls = el("label", el("input", type="checkbox", id="only-unexercised"), " show only unexercised reachable",
                  class_="controls")
    return _section("coverage", "Transition coverage", None, controls,
                    [_system_coverage(coverage) for coverage in section.systems])


def _system_coverage(coverage: Coverage) -> list[Safe]:
    reachable = [r for r in coverage.rows if r.reachable]
    missing = coverage.unexercised_reachable
    summary = el("p", el("strong", coverage.system), ": ",
                 f"{len(reachable) - len(missing)} of {len(reachable)} reachable transitions exercised "
                 f"({len(coverage.rows)} rows in the model's table, {coverage.files} coverage files merged).",
                 " Unexercised: " if missing else None,
                 [el("code", m, " ") for m in missing])
    rows = []
    for r in coverage.rows:
        state = "unexercised" if r.unexercised else "unreachable" if not r.reachable else "exercised"
        rows.append(_row(el("code", r.id, class_="nowrap"), r.operation, r.from_state, r.condition, r.outcome or "—",
                         "yes" if r.writes else "", "yes" if r.reachable else "no", r.count,
                         badge("unexercised") if r.unexercised else "", numeric=(7,),
                         class_=state, data_transition=r.id))
    table = _table(["transition", "op", "from", "condition", "outcome", "writes", "reachable", "count", ""], rows,
                   numeric=(7,), id=f"coverage-table-{coverage.system}", class_="coverage-table")
    if not coverage.near_misses:
        return [summary, table]
    near = _table(["near-miss class", "what it is", "calls", "transitions reached"],
                  [_row(el("code", n.name), n.description, n.calls,
                        [el("code", f"{transition}×{count}", " ") for transition, count in n.transitions] or
                        badge("never drawn"), numeric=(2,))
                   for n in coverage.near_misses],
                  numeric=(2,), id=f"near-miss-table-{coverage.system}")
    return [summary, table, el("h3", f"Near-miss inputs: {coverage.system}"), near]


def _race_summary_row(s: RaceScenario) -> Safe:
    outcomes = ", ".join(f"{k}×{v}" for k, v in s.outcomes.items())
    return _row(
        el("a", s.run_id, href=f"#race-{s.run_id}"), badge(s.verdict), s.width, outcomes, s.attempts, s.aborts,
        f"{s.definite_share:.0%}", s.whole_call_retries, _fmt(s.checker_ms, 1), _fmt(s.race_seconds * 1000, 1),
        s.lock_timeouts if s.lock_timeouts is not None else "—",
        len(s.problems) + len(s.promise_problems) + (s.contention is not None), numeric=(2, 4, 5, 6, 7, 8, 9, 10, 11),
    )


def _race_detail(s: RaceScenario) -> Safe:
    by_order = sorted((c for c in s.history if c.order is not None), key=lambda c: c.order)
    failing = next((c for c in s.history if c.failing), None)
    kind = {"found": "Linearization found", "prefix": "Longest linearizable prefix", "none": "No linearization"}
    order_items = [el("li", f"call {c.id} ({c.caller}) {c.op} → {c.outcome}") for c in by_order]
    if failing is not None:
        order_items.append(el("li", f"cannot be placed: call {failing.id} ({failing.caller}) {failing.op} → "
                                    f"{failing.outcome}", class_="failing"))
    problems = [*s.problems, *s.promise_problems, *([s.contention, s.degree] if s.contention else [])]
    summary = el("summary", f"{s.run_id} ", badge(s.verdict),
                 f" — {s.width} callers, {len(s.history)} calls, checker {_fmt(s.checker_ms, 1)} ms")
    return el(
        "details",
        summary,
        legend(s),
        el("div", render_timeline(s), class_="timeline-wrap"),
        el("h3", f"{kind[s.linearization]} ({len(by_order)} calls)"),
        el("ol", order_items, class_="linearization") if order_items else None,
        el("h3", "Problems") if problems else None,
        el("ul", [el("li", p) for p in problems]) if problems else None,
        el("h3", "Checker explanation") if s.explanation else None,
        el("pre", s.explanation) if s.explanation else None,
        el("p", "Counterexample: ", el("code", s.counterexample)) if s.counterexample else None,
        class_="race",
        id=f"race-{s.run_id}",
        open=not s.passed,
        data_passed="true" if s.passed else "false",
    )


def _races_section(races: RaceSection | None, run: Run) -> Safe:
    lock = run.lock_timeouts
    lock_text = "Emulator lock timeouts during the run: " + (
        "not run" if lock is None else
        f"{_fmt(lock.count)} ({'; '.join(f'{s.source}: {_fmt(s.count)}' for s in lock.sources)})"
    )
    if races is None:
        return _section("races", "Races", NOT_RUN, el("p", lock_text))
    table = _table(
        ["run", "verdict", "callers", "outcomes", "txn attempts", "aborts", "definite", "retries", "checker ms",
         "race ms", "lock timeouts", "problems"],
        [_race_summary_row(s) for s in races.scenarios],
        numeric=(2, 4, 5, 6, 7, 8, 9, 10, 11),
        id="races-table",
    )
    controls = el("div", el("label", el("input", type="checkbox", id="only-failing-races"), " only failing runs"),
                  " ", el("button", "expand / collapse all", type="button", id="expand-races"), class_="controls")
    return _section("races", "Races", None, el("p", lock_text, id="lock-timeouts"), table, controls,
                    [_race_detail(s) for s in races.scenarios])


def _known_bad_section(catalogue: KnownBadCatalogue | None) -> Safe:
    if catalogue is None:
        return _section("known-bad", "Known-bad catalogue", NOT_RUN)
    breakdown = el("p", [el("span", badge(k), f" {v}  ") for k, v in catalogue.breakdown.items()],
                   id="known-bad-breakdown")
    rows = [
        _row(el("span", v.name, class_="nowrap"), el("code", v.rule, class_="nowrap"), badge(v.status),
             _fmt(v.seconds_to_detection, 1), _fmt(v.shrunk_steps),
             el("code", v.failing_property) if v.failing_property else "—",
             el("code", v.counterexample) if v.counterexample else "—", numeric=(3, 4),
             class_=f"kb-{v.status}")
        for v in catalogue.variants
    ]
    table = _table(["variant", "rule", "status", "s to detection", "shrunk steps", "failing property",
                    "counterexample"], rows, numeric=(3, 4))
    return _section("known-bad", "Known-bad catalogue", None, breakdown, table)


def _rules_section(rules: RulesSummary | None) -> Safe:
    if rules is None:
        return _section("rules", "Rules matrix", NOT_RUN)
    operations = list(dict.fromkeys(c.operation for c in rules.cases))
    cell = {(c.identity, c.target, c.operation): c for c in rules.cases}
    deviations = set(rules.deviations)
    rows = []
    for identity in rules.identities:
        for target in rules.targets:
            cells = []
            for operation in operations:
                case = cell.get((identity, target, operation))
                cells.append("" if case is None else badge(case.outcome))
            deviating = any(f"{identity}-{op}-{target}" in deviations for op in operations)
            rows.append(_row(identity, target, *cells, class_="deviation" if deviating else None))
    status = "holds" if rules.boundary_holds else "does NOT hold"
    summary = el("p", f"Boundary {status}: {len(rules.cases)} cases, {len(rules.deviations)} deviations; documents "
                      f"unchanged after the browser identities: {_fmt(rules.documents_unchanged)}.")
    return _section("rules", "Rules matrix", None, summary, _table(["identity", "target", *operations], rows))


def _failures_section(run: Run) -> Safe:
    """What failed: each failing test's property, its counterexamples and the command that replays each."""
    system = run.system_under_test
    intro = el("p", "System under test: ", el("code", system), f" ({system_note(run.system_is_known_bad)}).") \
        if system else None
    if not run.failed_tests:
        return _section("what-failed", "What failed", None, intro, el("p", "Nothing.", class_="muted"))
    items = []
    for failure in run.failed_tests:
        replays = [el("li", "counterexample ", el("code", path), ", replay: ", el("code", command))
                   for path, command in zip(failure.counterexamples, failure.replay_commands, strict=True)]
        items.append(el("li", f"{failure.suite}: ", el("code", failure.test), f" ({kind_text(failure)})",
                        el("pre", "\n".join(failure.summary)), el("ul", replays) if replays else None))
    return _section("what-failed", "What failed", None, intro, el("ul", items, class_="failures"))


def _counterexamples_section(run: Run, link_base: Path | None, artifacts: Path | None) -> Safe:
    if not run.counterexamples:
        return _section("counterexamples", "Counterexamples", None, el("p", "None saved.", class_="muted"))
    items = []
    for ce in run.counterexamples:
        target = _href(ce.path, link_base, artifacts)
        link = el("a", ce.path, href=target) if target and ce.exists else el("code", ce.path)
        items.append(el("li", f"{ce.kind} {ce.source}: ", link, "" if ce.exists else " (file missing)"))
    return _section("counterexamples", "Counterexamples", None, el("ul", items))


def _href(path: str, link_base: Path | None, artifacts: Path | None) -> str | None:
    """A relative link from the report's directory; None when the report's location is unknown."""
    if link_base is None or artifacts is None:
        return None
    absolute = Path(path) if Path(path).is_absolute() else artifacts.parent / path
    return Path(os.path.relpath(absolute, link_base)).as_posix()


def _notes_section(run: Run) -> Safe:
    items = [el("li", badge("error"), f" {e.path}: {e.message}") for e in run.artifact_errors]
    items += [el("li", note) for note in run.notes]
    return _section("notes", "Notes", None, el("ul", items) if items else el("p", "None.", class_="muted"))


# --- the page ----------------------------------------------------------------------------------------


def render_html(run: Run, *, link_base: Path | None = None, artifacts: Path | None = None) -> str:
    """The page. With `link_base` (where the file will be written) and `artifacts` (the directory the
    counterexample paths are relative to the parent of), counterexamples become relative links."""
    verdict = run.verdict.status
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", http_equiv="Content-Security-Policy", content=CSP),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("title", f"fencecheck evidence: {verdict.upper()}"),
        el("style", STYLE),
    )
    body = el(
        "body",
        _header(run),
        _nav(),
        hatch_defs(),
        el(
            "main",
            # What a reviewer decides on first; the run's metadata after the evidence.
            _suites_section(run),
            _failures_section(run),
            _races_section(run.races, run),
            parallel_html(run.parallel),
            wire_html(run.wire_faults, run.wire_suites_ran()),
            mutation_html(run.mutation),
            _coverage_section(run.coverage),
            _known_bad_section(run.known_bad),
            _rules_section(run.rules),
            _stateful_section(run.stateful),
            _counterexamples_section(run, link_base, artifacts),
            _run_section(run),
            _notes_section(run),
            el("footer", f"fencecheck evidence schema {SCHEMA_VERSION}"),
        ),
        el("script", SCRIPT),
    )
    return "<!DOCTYPE html>\n" + el("html", head, body, lang="en") + "\n"
