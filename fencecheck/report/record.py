"""The gate's own record of a run (artifacts/run.json): what only the gate knows.

The suites' artifacts say what was tested; they cannot say which profile and settings the gate chose,
which suites it started and how each process exited, what the environment was, whether the run was
interrupted, or what the gate's own emulator counted. The gate writes this record when it starts (so a
run killed half-way still leaves one, without `finishedAt`: incomplete) and again when it ends;
`fencecheck report` reads it back to re-render exactly that run.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import attrs

from fencecheck.report.artifacts import RUN_FILE, write_json
from fencecheck.report.codec import decode, encode
from fencecheck.report.model import Environment, Settings

RUN_FORMAT = "fencecheck.run/1"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@attrs.frozen
class GateSuite:
    name: str
    status: str  # passed | failed | empty (no tests collected)
    wall_seconds: float


@attrs.frozen
class GateRecord:
    profile: str
    started_at: str
    environment: Environment
    settings: Settings
    suites: tuple[GateSuite, ...] = ()
    finished_at: str | None = None
    interrupted: bool = False
    lock_timeouts: int | None = None  # the gate's emulator; None when it could not read the emulator's log

    @classmethod
    def begin(cls, *, profile: str, workers: str | None, selected: tuple[str, ...]) -> GateRecord:
        return cls(profile, now_iso(), capture_environment(), run_settings(profile, workers, selected))

    def with_suite(self, name: str, status: str, wall_seconds: float) -> GateRecord:
        return attrs.evolve(self, suites=(*self.suites, GateSuite(name, status, round(wall_seconds, 2))))

    def with_emulator(self, *, version: str | None, java: str | None) -> GateRecord:
        return attrs.evolve(self, environment=attrs.evolve(self.environment, emulator=version, java=java))

    def with_implementation(self, described: str) -> GateRecord:
        return attrs.evolve(self, environment=attrs.evolve(self.environment, implementation=described))

    def finish(self, *, interrupted: bool, lock_timeouts: int | None) -> GateRecord:
        return attrs.evolve(self, finished_at=now_iso(), interrupted=interrupted, lock_timeouts=lock_timeouts)

    def save(self, artifacts: Path | str) -> Path:
        return write_json(Path(artifacts) / RUN_FILE, {"format": RUN_FORMAT, **encode(self)})

    @classmethod
    def load(cls, artifacts: Path | str) -> GateRecord | None:
        """The record in `artifacts`, or None when there is none; ValueError when it is malformed."""
        path = Path(artifacts) / RUN_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.pop("format", None) != RUN_FORMAT:
            raise ValueError(f"not a {RUN_FORMAT} file")
        return decode(cls, data)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def capture_environment(*, source: str = "gate") -> Environment:
    """Commit, dirty flag and library versions of this process (Java and emulator come from the emulator)."""
    status = _git("status", "--porcelain")
    return Environment(
        commit=_git("rev-parse", "HEAD"),
        dirty=None if status is None else bool(status),
        python=platform.python_version(),
        hypothesis=_version("hypothesis"),
        google_cloud_firestore=_version("google-cloud-firestore"),
        pytest=_version("pytest"),
        source=source,
    )


def run_settings(profile: str | None, workers: str | None, selected: tuple[str, ...] = ()) -> Settings:
    """The settings the suites run with: the profile's Hypothesis values as the stateful suite applies them."""
    from fencecheck.suites import hypothesis_profiles

    values = dict(hypothesis_profiles.PROFILES.get(profile or "", {}))
    if hypothesis_profiles.derandomize_requested():
        values.update(derandomize=True, database=None)
    repeat = os.environ.get("FENCECHECK_RACE_REPEAT", "1")  # race_tests/conftest.py ENV_REPEAT
    return Settings(
        profile=profile,
        hypothesis=values,
        workers=workers,
        race_repeat=int(repeat) if repeat.isdigit() else None,
        selected_suites=tuple(selected),
    )
