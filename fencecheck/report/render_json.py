"""evidence.json: `Run.to_json()` with a stable layout (keys in schema order, two-space indent, UTF-8)."""

from __future__ import annotations

import json

from fencecheck.report.model import Run


def render_json(run: Run) -> str:
    return json.dumps(run.to_json(), indent=2, ensure_ascii=False) + "\n"
