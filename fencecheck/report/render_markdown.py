"""evidence.md: short enough for a pull-request comment, verdict on the first line.

It summarises; the HTML page has the detail (timelines, every coverage row, the rules grid). Lists are cut
at a few items with a count of the rest, so a bad run cannot produce a comment too long to post.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from fencecheck.report.failures import markdown_section
from fencecheck.report.model import NOT_RUN, RaceScenario, Run
from fencecheck.report.mutation import mutation_markdown
from fencecheck.report.parallel import parallel_markdown
from fencecheck.report.wire_faults import wire_markdown

MAX_ITEMS = 8


def cell(value: object) -> str:
    """Text safe in a table cell: no pipes or newlines to break the row, no HTML for the renderer."""
    text = "—" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def code(value: object) -> str:
    """An inline code span that survives backticks in the text."""
    text = str(value).replace("\n", " ")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _cut(items: Sequence[str]) -> list[str]:
    shown = list(items[:MAX_ITEMS])
    if len(items) > MAX_ITEMS:
        shown.append(f"… and {len(items) - MAX_ITEMS} more")
    return shown


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _race_rows(scenarios: Sequence[RaceScenario]) -> list[str]:
    by_name: dict[str, list[RaceScenario]] = defaultdict(list)
    for scenario in scenarios:
        by_name[scenario.scenario].append(scenario)
    rows = [
        "| scenario | runs | verdicts | callers | outcomes | txn attempts | aborts | min definite | max checker ms |",
        "| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, runs in by_name.items():
        verdicts = ", ".join(f"{v} {n}" for v, n in Counter(r.verdict for r in runs).items())
        outcomes: Counter[str] = Counter()
        for r in runs:
            outcomes.update(r.outcomes)
        rows.append(
            f"| {cell(name)} | {len(runs)} | {cell(verdicts)} | {runs[0].width} | "
            f"{cell(', '.join(f'{k}×{v}' for k, v in outcomes.most_common(4)))} | {sum(r.attempts for r in runs)} | "
            f"{sum(r.aborts for r in runs)} | {min(r.definite_share for r in runs):.0%} | "
            f"{max(r.checker_ms for r in runs):.1f} |"
        )
    return rows


def render_markdown(run: Run) -> str:
    verdict = run.verdict
    env = run.environment
    commit = (env.commit or "unknown")[:12] + (" (dirty)" if env.dirty else "")
    profile = code(run.profile or "—")
    against = f", against {cell(env.implementation)}" if env.implementation else ""
    lines = [f"**fencecheck: {verdict.status.upper()}** — profile {profile}, commit {code(commit)}{against}", ""]
    lines += [f"- {cell(reason)}" for reason in _cut(verdict.reasons)]
    if verdict.reasons:
        lines.append("")

    lines += ["| suite | status | passed | failed | skipped | wall s |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for s in run.suites:
        wall = "—" if s.wall_seconds is None else f"{s.wall_seconds:.1f}"
        lines.append(f"| {cell(s.name)} | {s.status} | {s.passed} | {s.failed + s.errors} | {s.skipped} | {wall} |")
    driving = [s for s in run.suites if s.against_one]
    if driving:
        lines += ["", "What the suites against the implementation under test drove:"]
        lines += [f"- {cell(s.name)}: {s.drove_implementation} tests drove it, {len(s.reference_only)} only the "
                  f"reference, {s.no_implementation} no implementation (checks of the suite's parts)" for s in driving]
        lines += [f"  - reference-only: {code(name)}" for s in driving for name in _cut(list(s.reference_only))]
    failing = [name for s in run.suites for name in s.failing]
    if failing:
        lines += ["", "Failing tests:", *[f"- {code(name)}" for name in _cut(failing)]]
    lines.append("")

    if run.stateful is None:
        lines.append(f"**Stateful:** {NOT_RUN}")
    else:
        st = run.stateful
        lines.append(f"**Stateful:** {_n(len(st.machines), 'machine')}, {st.examples} examples, {st.steps} steps, "
                     f"{_n(st.failure_count, 'failure')}")
    if run.coverage is None:
        lines.append(f"**Transition coverage:** {NOT_RUN}")
    else:
        parts = []
        for coverage in run.coverage.systems:
            reachable = sum(1 for r in coverage.rows if r.reachable)
            missing = coverage.unexercised_reachable
            part = f"{coverage.system} {reachable - len(missing)}/{reachable} reachable transitions exercised"
            if missing:
                part += " (unexercised: " + ", ".join(code(m) for m in _cut(missing)) + ")"
            parts.append(part)
        lines.append("**Transition coverage:** " + "; ".join(parts))
        for coverage in run.coverage.systems:
            if coverage.near_misses:
                shown = ", ".join(f"{n.name} {n.calls} calls to {len(n.transitions)} transitions"
                                  for n in coverage.near_misses)
                lines.append(f"**Near-miss inputs ({coverage.system}):** {shown}")
    lock = run.lock_timeouts
    count = NOT_RUN if lock is None else "unknown" if lock.count is None else lock.count
    lines.append(f"**Emulator lock timeouts:** {count}")
    if run.rules is None:
        lines.append(f"**Rules:** {NOT_RUN}")
    else:
        status = "holds" if run.rules.boundary_holds else "DOES NOT HOLD"
        lines.append(f"**Rules:** boundary {status} ({len(run.rules.cases)} cases, {len(run.rules.deviations)} "
                     f"deviations)")
    if run.known_bad is None:
        lines.append(f"**Known-bad catalogue:** {NOT_RUN}")
    else:
        breakdown = ", ".join(f"{n} {k}" for k, n in run.known_bad.breakdown.items())
        text = f"**Known-bad catalogue:** {len(run.known_bad.variants)} variants: {breakdown}"
        survived = [v.name for v in run.known_bad.variants if v.status == "survived"]
        if survived:
            text += "; survived: " + ", ".join(code(n) for n in _cut(survived))
        lines.append(text)
    lines += parallel_markdown(run.parallel, code, _cut)
    lines += wire_markdown(run.wire_faults, run.wire_suites_ran(), code, _cut)
    lines += mutation_markdown(run.mutation, code)
    if run.races is None:
        lines += [f"**Races:** {NOT_RUN}"]
    else:
        scenarios = run.races.scenarios
        verdicts = ", ".join(f"{n} {v}" for v, n in Counter(s.verdict for s in scenarios).items())
        lines += ["", f"**Races:** {len(scenarios)} runs ({verdicts})", "", *_race_rows(scenarios)]
    what_failed = markdown_section(run.failed_tests, run.system_under_test, known_bad=run.system_is_known_bad)
    if what_failed:
        lines += ["", *what_failed.rstrip("\n").splitlines()]
    if run.counterexamples:
        lines += ["", "**Counterexamples:**",
                  *[f"- {c.kind} {cell(c.source)}: {code(c.path)}" for c in run.counterexamples[:MAX_ITEMS]]]
        if len(run.counterexamples) > MAX_ITEMS:
            lines.append(f"- … and {len(run.counterexamples) - MAX_ITEMS} more (see evidence.html)")
    if run.artifact_errors:
        lines += ["", "**Unreadable artifacts:**", *[f"- {code(e.path)}: {cell(e.message)}" for e in
                                                     run.artifact_errors[:MAX_ITEMS]]]
    if verdict.warnings:
        lines += ["", "<details><summary>Warnings</summary>", "",
                  *[f"- {cell(w)}" for w in _cut(verdict.warnings)], "", "</details>"]
    lines += [
        "",
        f"<sub>Python {cell(env.python)} · Hypothesis {cell(env.hypothesis)} · google-cloud-firestore "
        f"{cell(env.google_cloud_firestore)} · Java {cell(env.java)} · emulator {cell(env.emulator)} · "
        f"started {cell(run.started_at)} · full report: evidence.html</sub>",
    ]
    return "\n".join(lines) + "\n"
