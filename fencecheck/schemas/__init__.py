"""JSON Schemas (draft 2020-12) of fencecheck's file formats, shipped as package data (pyproject.toml's
`[tool.setuptools.package-data]`), so a tool outside this repository can validate what the harness writes.

- `history.schema.json`: a saved history, format `fencecheck.history/1` (docs/history-format.md), as
  `fencecheck.checker.history.History.to_json` writes it and `fencecheck check` reads it.

The schema describes the format; `History.from_json` stays the reader, and the schema never replaces it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

HISTORY_SCHEMA = "history.schema.json"


@cache
def history_schema() -> dict[str, Any]:
    """The history format's JSON Schema, parsed (read once)."""
    return json.loads(resources.files(__package__).joinpath(HISTORY_SCHEMA).read_text(encoding="utf-8"))


def _deepest(error: Any) -> Any:
    # A failed oneOf/anyOf only says "not valid under any of the given schemas"; the alternative that got
    # furthest says which key is wrong (jsonschema's best_match picks it).
    from jsonschema.exceptions import best_match

    while error.context:
        error = best_match(error.context)
    return error


def history_problems(data: object) -> list[str]:
    """Every way `data` breaks the history schema, each as "<JSON path>: <what is wrong>" naming the key (e.g.
    "$.calls[0]: 'outcome' is a required property"), in path order; [] when it validates."""
    from jsonschema import Draft202012Validator  # only a caller that validates needs jsonschema loaded

    validator = Draft202012Validator(history_schema())
    found = (_deepest(error) for error in validator.iter_errors(data))
    return sorted(f"{error.json_path}: {error.message}" for error in found)
