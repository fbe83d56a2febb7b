"""The evidence report: one data model (`model.Run`), built from an artifacts directory (`collect`),
written as evidence.json, evidence.md and evidence.html (`write_reports`).

docs/report.md documents the schema (every key of evidence.json) and the verdict's rules."""

from __future__ import annotations

from fencecheck.report.collect import DEFAULT_SUITES, collect
from fencecheck.report.model import SCHEMA_VERSION, Run, Verdict, judge
from fencecheck.report.record import GateRecord
from fencecheck.report.render_html import render_html
from fencecheck.report.render_json import render_json
from fencecheck.report.render_markdown import render_markdown
from fencecheck.report.write import write_reports

__all__ = [
    "DEFAULT_SUITES",
    "SCHEMA_VERSION",
    "GateRecord",
    "Run",
    "Verdict",
    "collect",
    "judge",
    "render_html",
    "render_json",
    "render_markdown",
    "write_reports",
]
