"""Where the report's inputs live in an artifacts directory, and writers for the formats this package defines.

    run.json                              the gate's own record (record.py)
    junit/<suite>.xml                     pytest --junitxml of each suite (fencecheck.report.junit)
    coverage/journal-transitions-*.json   transition counts per test process (fencecheck.checker.coverage)
    races/<system>_<scenario>-<repeat>.json  one race run each (fencecheck.runners.contest_results,
    "fencecheck.race-result/2") stateful/<machine>.json               one Hypothesis state machine's run
    (STATEFUL_FORMAT, below)
    known_bad/<variant>.json              one known-bad variant of the catalogue (KNOWN_BAD_FORMAT, below)
    rules/matrix.json                     fencecheck.runners.rules_probe.RulesMatrix.to_json()
    emulator/session-<worker>.json        a pytest session that owned an emulator (fencecheck.suites.pytest_plugin)
    wire-faults/races.json, parallel-<name>.json  the fault kinds the races and parallel runs met (wire_faults.py)

Relative paths inside these files (counterexamples) are relative to the project root, the artifacts
directory's parent, where `counterexamples/` lives beside `artifacts/`.

The writers exist so the suites that produce these files and the collector that reads them agree on one
spelling; each writes atomically (temporary file, then rename), so a reader never sees half a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fencecheck.checker.known_bad_verdict import STATUSES as KNOWN_BAD_STATUSES

RUN_FILE = "run.json"
JUNIT_DIR = "junit"
COVERAGE_DIR = "coverage"
RACES_DIR = "races"
STATEFUL_DIR = "stateful"
KNOWN_BAD_DIR = "known_bad"
RULES_FILE = "rules/matrix.json"
EMULATOR_DIR = "emulator"


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _file_name(name: str) -> str:
    """A file name from a machine or variant name (no directory separators, nothing hidden)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).lstrip(".")
    if not safe:
        raise ValueError(f"cannot make a file name from {name!r}")
    return safe + ".json"


def write_rules_matrix(matrix: Any, artifacts: Path | str) -> Path:
    """Save a `RulesMatrix` (anything with `to_json()`) as artifacts/rules/matrix.json."""
    return write_json(Path(artifacts) / RULES_FILE, matrix.to_json())


def write_stateful_summary(
    artifacts: Path | str,
    *,
    machine: str,
    profile: str | None,
    examples: int,
    steps: int,
    seconds: float,
    failures: Sequence[Mapping[str, str | None]] = (),
    wire_faults: Mapping[str, int] | None = None,
) -> Path:
    """artifacts/stateful/<machine>.json:

        {"machine": "JournalMachine", "profile": "ci", "examples": 100, "steps": 8000, "seconds": 93.2,
         "failures": [{"message": "...", "counterexample": "counterexamples/JournalMachine-1a2b.py"}]}

    `examples` is the number of Hypothesis examples (programs) run, `steps` the rule steps over all of them,
    `failures` one object per distinct failure (`counterexample`: path or null).
    """
    data = {
        "machine": machine,
        "profile": profile,
        "examples": examples,
        "steps": steps,
        "seconds": round(seconds, 3),
        "failures": [{"message": f["message"], "counterexample": f.get("counterexample")} for f in failures],
    }
    if wire_faults:  # the wire proxy's fault events during the run, per "kind Method" (left out when none)
        data["wireFaults"] = dict(sorted(wire_faults.items()))
    return write_json(Path(artifacts) / STATEFUL_DIR / _file_name(machine), data)


def write_known_bad_result(
    artifacts: Path | str,
    *,
    name: str,
    rule: str,
    status: str,
    seconds_to_detection: float | None,
    shrunk_steps: int | None,
    counterexample: str | None,
    failing_property: str | None,
    warnings: Sequence[str] = (),
) -> Path:
    """artifacts/known_bad/<name>.json:

        {"name": "skip-fence-check", "rule": "complete.stale_fence", "caught": true, "status": "caught",
         "secondsToDetection": 4.2, "shrunkSteps": 3, "counterexample": "counterexamples/...py",
         "failingProperty": "stateful_tests/...::TestKnownBad::runTest"}

    `status`: caught (a suite failed on it), survived (every suite passed), timeout, error (the variant
    could not be run, or failed by a crash, an unknown verdict or a hang: fencecheck.checker.known_bad_verdict).
    `caught` is `status == "caught"`, kept for readers that want a boolean. `warnings` (written only when there
    are any): bounds that did not hold but decide nothing, e.g. a shrunk program longer than expected.
    """
    if status not in KNOWN_BAD_STATUSES:
        raise ValueError(f"status must be one of {KNOWN_BAD_STATUSES}, not {status!r}")
    data = {
        "name": name,
        "rule": rule,
        "caught": status == "caught",
        "status": status,
        "secondsToDetection": seconds_to_detection,
        "shrunkSteps": shrunk_steps,
        "counterexample": counterexample,
        "failingProperty": failing_property,
    }
    if warnings:
        data["warnings"] = list(warnings)
    return write_json(Path(artifacts) / KNOWN_BAD_DIR / _file_name(name), data)


def known_bad_recorder(artifacts: Path | str, *, name: str, rule: str, failing_property: str) -> Callable[..., Path]:
    """What a known-bad runner calls once it has its verdict (fencecheck.checker.known_bad_verdict): `record(status, *,
    seconds=None, steps=None, counterexample=None, found=None, warnings=())` writes the variant's result
    (`write_known_bad_result`); `found`, the property that caught it when the runner knows it, replaces
    `failing_property`. A second call raises: the result is written once, after every check."""
    written: list[Path] = []

    def record(status: str, *, seconds: float | None = None, steps: int | None = None,
               counterexample: str | None = None, found: str | None = None, warnings: Sequence[str] = ()) -> Path:
        if written:
            raise RuntimeError(f"known-bad {name}: its result was already written ({written[0]})")
        path = write_known_bad_result(
            artifacts, name=name, rule=rule, status=status, seconds_to_detection=seconds, shrunk_steps=steps,
            counterexample=counterexample, failing_property=failing_property if found is None else found,
            warnings=warnings,
        )
        written.append(path)
        return path

    return record
