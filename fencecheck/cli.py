"""Command line: `fencecheck gate` runs every suite against one emulator and writes the evidence report;
`fencecheck report ARTIFACTS_DIR` renders the report again from an artifacts directory.

The gate is wiring only: it owns the emulator for the run (or uses $FIRESTORE_EMULATOR_HOST), runs each
suite as its own pytest process (so one suite's crash cannot hide another's result), records what only it
knows (artifacts/run.json), and hands the artifacts directory to the report (fencecheck.report).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import report
from .emulator import emulator_from_environment
from .errors import FencecheckError, UsageError
from .junit import SuiteCounts, parse_junit
from .report.model import PASS

PROFILES = ("ci", "thorough", "gate")
NO_TESTS_COLLECTED = 5


@dataclass(frozen=True)
class Suite:
    name: str
    args: tuple[str, ...]


SUITES = (
    Suite("unit", ("tests/unit",)),
    Suite("rules", ("tests/emulator/test_rules.py",)),
    Suite("emulator", ("tests/emulator", "--ignore=tests/emulator/test_rules.py")),
    Suite("stateful", ("stateful_tests",)),
    Suite("races", ("race_tests",)),
)


def _run_suite(suite: Suite, artifacts: Path, profile: str, workers: str) -> tuple[str, SuiteCounts, float]:
    junit_path = artifacts / "junit" / f"{suite.name}.xml"
    junit_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pytest", *suite.args, "-q", "-n", workers, "-p", "no:cacheprovider",
        f"--junitxml={junit_path}", f"--hypothesis-profile={profile}",
    ]
    started = time.monotonic()
    returncode = subprocess.run(command, check=False).returncode
    elapsed = time.monotonic() - started
    if returncode == NO_TESTS_COLLECTED:
        return "empty", SuiteCounts(), elapsed
    counts = parse_junit(junit_path.read_text()) if junit_path.exists() else SuiteCounts()
    status = "passed" if returncode == 0 else "failed"
    return status, counts, elapsed


def gate(args: argparse.Namespace) -> int:
    if args.profile not in PROFILES:
        raise UsageError(f"unknown profile {args.profile!r}: expected one of {', '.join(PROFILES)}")
    artifacts = Path(args.artifacts)
    artifacts.mkdir(parents=True, exist_ok=True)
    selected = [s for s in SUITES if not args.suite or s.name in args.suite]
    record = report.GateRecord.begin(
        profile=args.profile, workers=args.workers, selected=tuple(s.name for s in selected)
    )
    record.save(artifacts)  # a gate killed mid-run still leaves a record: the report says "incomplete"
    interrupted = False
    with emulator_from_environment(log_dir=artifacts / "emulator") as emulator:
        os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host  # the suites' processes share this emulator
        record = record.with_emulator(version=emulator.emulator_version(), java=emulator.java_version())
        try:
            for index, suite in enumerate(selected, 1):
                print(f"[{index}/{len(selected)}] {suite.name} ...", flush=True)
                status, counts, elapsed = _run_suite(suite, artifacts, args.profile, args.workers)
                record = record.with_suite(suite.name, status, elapsed)
                record.save(artifacts)
                print(f"[{index}/{len(selected)}] {suite.name}: {status}, {counts.passed} passed, "
                      f"{counts.failed + counts.errors} failed, {elapsed:.1f} s", flush=True)
        except KeyboardInterrupt:
            interrupted = True
            print("interrupted: stopping the emulator and writing what was collected", file=sys.stderr)
        lock_timeouts = emulator.lock_timeout_count()
    record = record.finish(interrupted=interrupted, lock_timeouts=lock_timeouts)
    record.save(artifacts)
    run = report.collect(artifacts, suites=[s.name for s in SUITES], record=record)
    paths = report.write_reports(run, artifacts)
    print(f"verdict: {run.verdict.status}  ({', '.join(str(p) for p in paths)})", flush=True)
    if interrupted:
        return 130
    return 0 if run.verdict.status == PASS else 1


def report_command(args: argparse.Namespace) -> int:
    artifacts = Path(args.artifacts_dir)
    if not artifacts.is_dir():
        raise UsageError(f"{artifacts}: not a directory")
    run = report.collect(artifacts, suites=[s.name for s in SUITES])
    output = Path(args.output) if args.output else artifacts
    paths = report.write_reports(run, output, artifacts=artifacts)
    print(f"verdict: {run.verdict.status}  ({', '.join(str(p) for p in paths)})", flush=True)
    return 0 if run.verdict.status == PASS else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fencecheck", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gate_parser = commands.add_parser("gate", help="run every suite and write the evidence report")
    gate_parser.add_argument("--profile", default="gate", help=f"Hypothesis profile: {', '.join(PROFILES)}")
    gate_parser.add_argument("--artifacts", default="artifacts", help="where reports and logs go")
    gate_parser.add_argument("--workers", default="auto", help="pytest-xdist workers per suite")
    gate_parser.add_argument("--suite", action="append", choices=[s.name for s in SUITES],
                             help="run only this suite (repeatable)")
    gate_parser.set_defaults(handler=gate)
    report_parser = commands.add_parser(
        "report",
        help="render evidence.json/.md/.html again from an artifacts directory",
        description="Render the evidence report from ARTIFACTS_DIR (exit 0 when the verdict is pass, 1 when it "
        "is fail or incomplete, 2 on a usage error).",
    )
    report_parser.add_argument("artifacts_dir", metavar="ARTIFACTS_DIR", help="a gate's artifacts directory")
    report_parser.add_argument("--output", help="where the three files go (default: ARTIFACTS_DIR)")
    report_parser.set_defaults(handler=report_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except FencecheckError as error:
        print(f"fencecheck: {error}", file=sys.stderr)
        return 2
