"""The run's data model and its JSON and Markdown forms (the HTML form comes with the full report)."""

from __future__ import annotations

import json
import platform
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from .junit import SuiteCounts

SCHEMA_VERSION = 1


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@dataclass
class RunRecord:
    profile: str
    started_at: str
    environment: dict[str, Any]
    suites: list[dict[str, Any]] = field(default_factory=list)
    lock_timeouts: int | None = None
    finished_at: str | None = None
    interrupted: bool = False

    @classmethod
    def begin(cls, *, profile: str) -> RunRecord:
        status = _git("status", "--porcelain")
        return cls(
            profile=profile,
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            environment={
                "commit": _git("rev-parse", "HEAD"),
                "dirty": bool(status) if status is not None else None,
                "python": platform.python_version(),
                "hypothesis": _version("hypothesis"),
                "google-cloud-firestore": _version("google-cloud-firestore"),
                "pytest": _version("pytest"),
            },
        )

    def add_suite(self, name: str, status: str, counts: SuiteCounts, elapsed: float) -> None:
        self.suites.append({"name": name, "status": status, "wallSeconds": round(elapsed, 2), **counts.to_json()})

    def finish(self, *, interrupted: bool) -> None:
        self.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        self.interrupted = interrupted

    @property
    def verdict(self) -> str:
        if self.interrupted:
            return "incomplete"
        return "fail" if any(s["status"] == "failed" for s in self.suites) else "pass"

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": SCHEMA_VERSION,
            "verdict": self.verdict,
            "profile": self.profile,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "environment": self.environment,
            "suites": self.suites,
            "emulatorLockTimeouts": self.lock_timeouts,
        }


def render_markdown(data: dict[str, Any]) -> str:
    lines = [f"**fencecheck verdict: {data['verdict'].upper()}** (profile `{data['profile']}`)", ""]
    lines += ["| suite | status | passed | failed | skipped | wall s |", "| --- | --- | --- | --- | --- | --- |"]
    for suite in data["suites"]:
        lines.append(
            f"| {suite['name']} | {suite['status']} | {suite['passed']} | {suite['failed'] + suite['errors']} "
            f"| {suite['skipped']} | {suite['wallSeconds']} |"
        )
    failing = [name for suite in data["suites"] for name in suite["failing"]]
    if failing:
        lines += ["", "Failing:", *[f"- `{name}`" for name in failing[:20]]]
    env = data["environment"]
    lines += [
        "",
        f"Commit `{(env.get('commit') or 'unknown')[:12]}`{' (dirty)' if env.get('dirty') else ''}; "
        f"emulator lock timeouts during the run: {data['emulatorLockTimeouts']}.",
    ]
    return "\n".join(lines) + "\n"


def write_reports(run: RunRecord, artifacts: Path) -> list[Path]:
    data = run.to_json()
    json_path = artifacts / "evidence.json"
    md_path = artifacts / "evidence.md"
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    md_path.write_text(render_markdown(data))
    return [json_path, md_path]
