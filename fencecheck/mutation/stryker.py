"""The mutation report in Stryker's mutation-testing-report-schema (version 2 of the report; the schema of the
npm package mutation-testing-report-schema 3.8.4, Apache-2.0, kept as fencecheck/schemas/
mutation-testing-report-schema.json), so any tool that reads Stryker's reports reads ours.

How our statuses map onto Stryker's:

| fencecheck        | Stryker      |
| ----------------- | ------------ |
| caught            | Killed       |
| survived          | Survived     |
| timeout           | Timeout      |
| error             | RuntimeError |
| equivalent        | Ignored      |
| compile-error     | CompileError |
| not run yet       | Pending      |

Stryker's own score counts a Timeout as detected; ours never does (a hang decides nothing), so the score
fencecheck prints and the evidence report shows is killed / (every mutant that compiles and is not
equivalent): `fencecheck.mutation.outcomes.score`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from fencecheck.checker.known_bad_verdict import CAUGHT, ERROR, SURVIVED, TIMEOUT
from fencecheck.mutation.mutants import Mutant
from fencecheck.mutation.outcomes import COMPILE_ERROR, EQUIVALENT, Outcome

SCHEMA = "mutation-testing-report-schema.json"
SCHEMA_VERSION = "2"
STRYKER_STATUS = {CAUGHT: "Killed", SURVIVED: "Survived", TIMEOUT: "Timeout", ERROR: "RuntimeError",
                  EQUIVALENT: "Ignored", COMPILE_ERROR: "CompileError"}
PENDING = "Pending"
THRESHOLDS = {"high": 100, "low": 90}  # issue 24's goals: every decision-module mutant killed, 90% overall


def not_run(mutant: Mutant) -> Outcome | None:
    """The outcome a mutant has without running: equivalent by construction, or not compiling."""
    if mutant.compile_error:
        return Outcome(mutant.id, COMPILE_ERROR, mutant.compile_error)
    if mutant.equivalent:
        return Outcome(mutant.id, EQUIVALENT, mutant.equivalent)
    return None


def outcome_of(mutant: Mutant, outcomes: Mapping[str, Outcome]) -> Outcome | None:
    """Its outcome: the one it has without running first (a triage that marks a mutant equivalent after a run
    judged it overrides that run), else the one recorded, else None (not yet run)."""
    return not_run(mutant) or outcomes.get(mutant.id)


def report(mutants: Iterable[Mutant], outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    """The Stryker report of `mutants`, each with its outcome (Pending without one), files keyed by their path
    from the project root."""
    files: dict[str, dict[str, Any]] = {}
    for mutant in mutants:
        path = f"{mutant.package.replace('.', '/')}/{mutant.module}"
        entry = files.setdefault(path, {"language": "python", "source": mutant.original, "mutants": []})
        outcome = outcome_of(mutant, outcomes)
        record: dict[str, Any] = {
            "id": mutant.id,
            "mutatorName": mutant.operator_short,
            "replacement": mutant.replacement(),
            "description": mutant.diff(),
            "location": {"start": {"line": mutant.start[0], "column": mutant.start[1]},
                         "end": {"line": mutant.end[0], "column": mutant.end[1]}},
            "status": PENDING if outcome is None else STRYKER_STATUS[outcome.status],
        }
        if outcome is not None:
            record["statusReason"] = outcome.reason
            if outcome.seconds:
                record["duration"] = round(outcome.seconds * 1000)
            if outcome.killed and outcome.test:
                record["killedBy"] = [outcome.test]
        entry["mutants"].append(record)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": THRESHOLDS,
        "projectRoot": ".",
        "framework": {"name": "fencecheck mutate", "dependencies": {"cosmic-ray": _version("cosmic-ray")}},
        "files": files,
    }


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


@cache
def schema() -> dict[str, Any]:
    return json.loads(resources.files("fencecheck.schemas").joinpath(SCHEMA).read_text(encoding="utf-8"))


def problems(data: object) -> list[str]:
    """Every way `data` breaks Stryker's schema (draft 7), as "<JSON path>: <what is wrong>"; [] when it is valid."""
    from jsonschema import Draft7Validator

    return sorted(f"{error.json_path}: {error.message}" for error in Draft7Validator(schema()).iter_errors(data))
