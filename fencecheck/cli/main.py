"""Command line: `fencecheck gate` runs every suite against one emulator and writes the evidence report;
`fencecheck report ARTIFACTS_DIR` renders the report again from an artifacts directory; `fencecheck replay PATH`
runs a saved counterexample again; `fencecheck emulator start|stop|status` keeps one emulator running between
commands.

The gate is wiring only: it owns the emulator for the run (or uses $FIRESTORE_EMULATOR_HOST), runs each
suite as its own pytest process (so one suite's crash cannot hide another's result) in its own process group
(fencecheck.gate.process: SIGINT or SIGTERM to the gate stops it whole), some of them beside the stateful suite
in a second lane (`schedule`), prints progress while they run (fencecheck.suites.progress), records what only it knows
(artifacts/run.json), and hands the artifacts directory to the report (fencecheck.report).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from fencecheck import report
from fencecheck.emulator.lifecycle import emulator_from_environment
from fencecheck.errors import FencecheckError, UsageError
from fencecheck.gate import process as gate_process
from fencecheck.gate import replay as gate_replay
from fencecheck.gate.suites import (  # re-exported: the gate's tests read them here
    NOT_HARNESS,
    SUITES,
    TAKES_THE_SYSTEM,
    WORK_STEALING,
    Suite,
    suite_args,
)
from fencecheck.plugin.registry import ENV_PLUGINS, SYSTEM_NAMES, add_to_environment
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.plugin.specs import ENV_SYSTEM, check_configured, spellings, system_of_spec
from fencecheck.protocol.process import VERSIONS, describe_exec, exec_command_of
from fencecheck.report import failures
from fencecheck.report.junit import SuiteCounts, parse_junit
from fencecheck.report.model import INCOMPLETE, PASS
from fencecheck.suites import ENV_ARTIFACTS, progress

PROFILES = ("ci", "thorough", "gate")
NO_TESTS_COLLECTED = 5


# The suites run one after another, except these: beside the stateful suite (the longest, with idle time of its
# own: lost answers, emulator round trips), in a second lane, one after another in this order. First the races
# and parallel suites, whose tests mostly wait for the reference runner's wall-clock retry rounds (3 s after an
# abort: both cores were half idle while they ran alone); then the unit suite, which needs no emulator and takes
# the cores the stateful suite's last long tests leave idle.
BESIDE = "stateful"
LANE = ("races", "parallel", "unit")


def schedule(selected: list[Suite]) -> list[tuple[Suite, tuple[Suite, ...]]]:
    """The gate's steps, in order: each runs one suite and, started with it in a second lane, the suites listed
    with it one after another (`LANE`, beside the stateful suite). Without the stateful suite selected, every
    suite runs alone, in order."""
    if BESIDE not in {suite.name for suite in selected}:
        return [(suite, ()) for suite in selected]
    lane = tuple(suite for name in LANE for suite in selected if suite.name == name)
    return [(suite, lane if suite.name == BESIDE else ()) for suite in selected if suite.name not in LANE]


def known_bad_names(system: str) -> list[str]:
    """The variants of a system's known-bad catalogue, as its plug-in lists them."""
    return list(plugin_named(system).known_bad_variants())


def known_bad_system(name: str) -> str:
    """`known_bad.<system>:<name>` for a variant of a catalogue; a usage error listing the names otherwise."""
    for system in SYSTEM_NAMES:
        spec = plugin_named(system).known_bad_variants().get(name)
        if spec is not None:
            return spec
    every = "; ".join(f"{system} (known_bad/{system}/): {', '.join(known_bad_names(system))}"
                      for system in SYSTEM_NAMES if known_bad_names(system))
    raise UsageError(f"unknown known-bad variant {name!r}: expected one of {every}")


def _run_suite(
    suite: Suite, artifacts: Path, profile: str, workers: str, system: str | None, label: str | None = None, *,
    stop: threading.Event | None = None, output: IO[bytes] | None = None,
) -> tuple[str, SuiteCounts, float]:
    junit_path = artifacts / "junit" / f"{suite.name}.xml"
    junit_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pytest", *suite_args(suite, system), "-q", "-n", workers, *WORK_STEALING,
        "-p", "no:cacheprovider",
        f"--junitxml={junit_path}", f"--hypothesis-profile={profile}",
    ]
    env = dict(os.environ)
    env.pop(ENV_SYSTEM, None)  # a gate never runs against a system it was not asked for
    if system is not None:
        env[ENV_SYSTEM] = system
    progress_dir = artifacts / "progress" / suite.name  # the suite's pytest writes its progress here
    shutil.rmtree(progress_dir, ignore_errors=True)
    progress_dir.mkdir(parents=True)
    env[progress.ENV_REQUEST] = str(progress_dir)
    env[ENV_ARTIFACTS] = str(artifacts.resolve())  # the suites write their evidence where this gate reads it
    ticker = progress.Ticker(progress.interval(), time.monotonic)

    def tick() -> None:
        if ticker.due():
            line = progress.format_line(label or suite.name, progress.snapshot(progress_dir), ticker.elapsed())
            print(line, flush=True)

    returncode = gate_process.run_suite(command, env, tick=tick, poll_seconds=ticker.poll_seconds(), stop=stop,
                                        output=output)
    elapsed = ticker.elapsed()
    if returncode == NO_TESTS_COLLECTED:
        return "empty", SuiteCounts(), elapsed
    counts = parse_junit(junit_path.read_text()) if junit_path.exists() else SuiteCounts()
    status = "passed" if returncode == 0 else "failed"
    return status, counts, elapsed


def _result_line(label: str, status: str, counts: SuiteCounts, elapsed: float) -> str:
    line = f"{label}: {status}, {counts.passed} passed, {counts.failed + counts.errors} failed, {elapsed:.1f} s"
    return "\n".join([line, *drives_lines(counts)])


def drives_lines(counts: SuiteCounts) -> list[str]:
    """What a suite run against one implementation drove (its tests' `fencecheck_drives`): nothing for a suite
    that was not, so a reader sees how many of its tests put the named implementation to the test."""
    if not (counts.drove_implementation or counts.reference_only or counts.no_implementation):
        return []
    lines = [f"  {counts.drove_implementation} tests drove the implementation under test, "
             f"{len(counts.reference_only)} only the reference, {counts.no_implementation} no implementation "
             "(checks of the suite's parts)"]
    lines += [f"  reference-only: {name}" for name in counts.reference_only]
    return lines


LANE_OUTPUT = "output"


def suite_log(artifacts: Path, suite: Suite) -> Path:
    return artifacts / LANE_OUTPUT / f"{suite.name}.log"


class _Lane(threading.Thread):
    """Suites run one after another beside the main thread's suite (`schedule`), for the length of a `with`
    block. Each one's pytest output goes to `suite_log` (printed whole when the block ends, not interleaved with
    the other suite's output); its result line is printed as soon as it ends (by `run`). Leaving the block by an
    exception stops the running suite's process group; either way the block waits for the lane, then hands each
    finished suite to `done` and raises what crashed the lane."""

    def __init__(self, suites: tuple[Suite, ...], run: Callable[..., tuple[str, SuiteCounts, float]],
                 artifacts: Path, labels: dict[str, str], done: Callable[[Suite, str, float], None]) -> None:
        super().__init__(name="fencecheck-gate-lane", daemon=True)
        self.suites, self._run, self._artifacts, self._labels, self._done = suites, run, artifacts, labels, done
        self.stop = threading.Event()
        self.results: dict[str, tuple[str, SuiteCounts, float]] = {}
        self.crash: BaseException | None = None

    def run(self) -> None:
        try:
            for suite in self.suites:
                if self.stop.is_set():
                    return
                log = suite_log(self._artifacts, suite)
                log.parent.mkdir(parents=True, exist_ok=True)
                with log.open("wb") as output:
                    self.results[suite.name] = self._run(suite, stop=self.stop, output=output)
        except gate_process.Stopped:
            pass
        except BaseException as crash:  # handed to the main thread, which raises it
            self.crash = crash

    def __enter__(self) -> _Lane:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None:
            self.stop.set()
        try:
            self._finish()
        finally:
            for suite in self.suites:
                self._report(suite)
        if exc_type is None and self.crash is not None:
            raise self.crash

    def _finish(self) -> None:
        """Wait for the lane to end. An interruption while waiting (a signal reaches the main thread between
        joins) stops it, and waits for its running suite's group to be stopped."""
        try:
            while self.is_alive():
                self.join(0.2)
        except BaseException:
            self.stop.set()
            self.join()
            raise

    def _report(self, suite: Suite) -> None:
        """Print a suite's kept output and hand over its result (none, for one the lane did not finish)."""
        log = suite_log(self._artifacts, suite)
        if log.exists():
            print(f"{self._labels[suite.name]}: its output ({log}):", flush=True)
            sys.stdout.write(log.read_text(errors="replace"))
            sys.stdout.flush()
        if suite.name in self.results:
            status, _counts, elapsed = self.results[suite.name]  # its result line was printed when it ended
            self._done(suite, status, elapsed)


def gate(args: argparse.Namespace) -> int:
    with gate_process.SignalGuard() as guard:  # SIGINT/SIGTERM to the gate alone stop its suites and emulator
        code = _gate(args, guard)
    # Ended by a signal: 130 (SIGINT) or 143 (SIGTERM), as a shell reports a process the signal ended.
    return code if guard.received is None else 128 + guard.received


def _gate(args: argparse.Namespace, guard: gate_process.SignalGuard) -> int:
    if args.profile not in PROFILES:
        raise UsageError(f"unknown profile {args.profile!r}: expected one of {', '.join(PROFILES)}")
    if args.known_bad and args.system:
        raise UsageError("--known-bad and --system both name what the suites run against: give one of them")
    system = known_bad_system(args.known_bad) if args.known_bad else _external_system(args.system)
    artifacts = Path(args.artifacts)
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / failures.SIDECAR).unlink(missing_ok=True)  # an earlier run's must not describe this one
    shutil.rmtree(artifacts / LANE_OUTPUT, ignore_errors=True)  # so are its lane suites' logs
    selected = [s for s in SUITES if not args.suite or s.name in args.suite]
    # pytest-xdist reports a test path that does not exist as "no tests collected", which would read as an empty
    # suite: the gate checks them first.
    absent = [f"{suite.name}: {path}" for suite in selected for path in suite.paths if not Path(path).exists()]
    if absent:
        raise UsageError(f"the gate runs the suites of a fencecheck checkout from its root, and these test paths are "
                         f"not under {Path.cwd()}: {'; '.join(absent)}. Run it from the checkout's root (./run gate).")
    if system is not None:
        name = system_of_spec(system)
        what = f"the known-bad variant {args.known_bad} ({system})" if args.known_bad else system
        if plugin_named(name).resolve(system) is plugin_named(name).reference:
            what += f", the {name}'s reference"
        else:
            what += ", not the reference"
        others = ", ".join(other for other in SYSTEM_NAMES if other != name)
        print(f"running against {what}: the {', '.join(TAKES_THE_SYSTEM)} suites take it, "
              f"without their known-bad catalogues and the tests of the other systems ({others}); the other "
              "suites test the reference as always", flush=True)
    record = report.GateRecord.begin(
        profile=args.profile, workers=args.workers, selected=tuple(s.name for s in selected)
    )
    record.save(artifacts)  # a gate killed mid-run still leaves a record: the report says "incomplete"
    interrupted, lock_timeouts = False, None
    replayed: list[failures.Failure] | None = None
    try:
        with emulator_from_environment(log_dir=artifacts / "emulator") as emulator:
            os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host  # the suites' processes share this emulator
            record = record.with_emulator(version=emulator.emulator_version(), java=emulator.java_version())
            if system is not None:  # an exec: implementation greets first: one that cannot start fails here
                record = record.with_implementation(_describe_implementation(system, emulator.host))
                record.save(artifacts)
                print(f"implementation under test: {record.environment.implementation}", flush=True)
            if any(NOT_HARNESS in arg for suite in selected for arg in suite.args):
                print("the tests of the harness's own processes (marked harness: gate, replay, emulator service, "
                      "progress) are deselected here; ./run tests runs them", flush=True)

            def done(suite: Suite, status: str, elapsed: float) -> None:
                nonlocal record  # kept up to date: an interrupted gate records the suites that ended
                record = record.with_suite(suite.name, status, elapsed)
                record.save(artifacts)

            try:
                _run_suites(selected, artifacts, done, functools.partial(
                    _run_suite, artifacts=artifacts, profile=args.profile, workers=args.workers, system=system))
                if args.known_bad:  # a would-be catch is replayed while this emulator is still up
                    found = failures.collect(artifacts, [s.name for s in selected])
                    replayed = gate_replay.replay_catch(found, system, emulator)
            except KeyboardInterrupt:
                interrupted = True
                print("interrupted: stopping the emulator and writing what was collected", file=sys.stderr)
            guard.hold()  # from here on a signal is noted, not raised: the evidence gets written
            lock_timeouts = emulator.lock_timeout_count()
    except KeyboardInterrupt:  # while the emulator started (the suites' clean-up holds later signals)
        interrupted = True
        print("interrupted: writing what was collected", file=sys.stderr)
    guard.hold()
    record = record.finish(interrupted=interrupted, lock_timeouts=lock_timeouts)
    record.save(artifacts)
    found = failures.collect(artifacts, [s.name for s in selected]) if replayed is None else replayed
    failures.save_sidecar(artifacts, system, found, known_bad=bool(args.known_bad))
    for line in failures.terminal_lines(found, system):
        print(line, flush=True)
    known_bad = failures.known_bad_verdict(found) if args.known_bad else None
    if known_bad is not None and not interrupted:
        print(f"the known-bad variant {args.known_bad} {known_bad.status.upper()}: {known_bad.reason}", flush=True)
    run = report.collect(artifacts, suites=[s.name for s in SUITES], record=record)  # replays: from the sidecar
    paths = report.write_reports(run, artifacts)
    print(f"verdict: {run.verdict.status}  ({', '.join(str(p) for p in paths)})", flush=True)
    if interrupted:
        return 130
    if known_bad is not None:  # the question was "is it caught?": 0 only when it was, by the contract
        return 0 if known_bad.caught and run.verdict.status != INCOMPLETE else 1
    return 0 if run.verdict.status == PASS else 1


def _run_suites(selected: list[Suite], artifacts: Path, done: Callable[[Suite, str, float], None],
                run_one: Callable[..., tuple[str, SuiteCounts, float]]) -> None:
    """Run the selected suites as `schedule` orders them; `done(suite, status, seconds)` as each result is known
    (a lane suite's once the lane is joined)."""
    steps = schedule(selected)
    order = [each for suite, beside in steps for each in (suite, *beside)]  # numbered as they start
    labels = {suite.name: f"[{index}/{len(order)}] {suite.name}" for index, suite in enumerate(order, 1)}

    def run(suite: Suite, **lane: Any) -> tuple[str, SuiteCounts, float]:
        result = run_one(suite, label=labels[suite.name], **lane)
        if lane:  # a lane suite's result line, as it ends
            print(_result_line(labels[suite.name], *result), flush=True)
        return result

    for suite, beside in steps:
        for other in beside:
            print(f"{labels[other.name]} ... (beside {suite.name}: its output is printed when it ends, and kept "
                  f"in {suite_log(artifacts, other)})", flush=True)
        print(f"{labels[suite.name]} ...", flush=True)
        with _Lane(beside, run, artifacts, labels, done) if beside else contextlib.nullcontext():
            status, counts, elapsed = run(suite)
            done(suite, status, elapsed)
            print(_result_line(labels[suite.name], status, counts, elapsed), flush=True)


def _external_system(spec: str | None) -> str | None:
    """`--system SPEC`, resolved once before anything starts (a spec naming nothing is a usage error)."""
    if spec is None:
        return None
    spec = spec.strip()
    if not spec:
        raise UsageError(f"--system needs a spec, one of: {spellings()}")
    check_configured({ENV_SYSTEM: spec})
    return spec


def _describe_implementation(spec: str, emulator_host: str) -> str:
    command_line = exec_command_of(spec)
    if command_line is None:
        return f"{spec} (in-process)"
    # Any version the harness offers, for the description: the suites' processes hold it to the plug-in's versions.
    return describe_exec(command_line, emulator_host, system_of_spec(spec) or "", accepted=VERSIONS)


def report_command(args: argparse.Namespace) -> int:
    artifacts = Path(args.artifacts_dir)
    if not artifacts.is_dir():
        raise UsageError(f"{artifacts}: not a directory")
    run = report.collect(artifacts, suites=[s.name for s in SUITES])
    output = Path(args.output) if args.output else artifacts
    paths = report.write_reports(run, output, artifacts=artifacts)
    print(f"verdict: {run.verdict.status}  ({', '.join(str(p) for p in paths)})", flush=True)
    return 0 if run.verdict.status == PASS else 1


def replay_command(args: argparse.Namespace) -> int:
    import fencecheck.cli.replay as replay

    # Everything that can be wrong with the file (or --system) is found before an emulator starts.
    prepared = replay.prepare(Path(args.path), args.system)
    with emulator_from_environment(log_dir=Path("artifacts") / "emulator") as emulator:
        outcome = replay.run_prepared(prepared, emulator, args.repeat)
    for line in outcome.lines:
        print(line, flush=True)
    return 1 if outcome.still_fails else 0


def check_command(args: argparse.Namespace) -> int:
    import fencecheck.cli.check as checking

    budget = checking.DEFAULT_BUDGET if args.budget is None else args.budget
    return checking.main(args.path, full=args.full, budget=budget, processes=args.processes)


def _count(text: str, least: int = 0) -> int:
    if not text.isdigit() or int(text) < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {least}")
    return int(text)


def emulator_command(args: argparse.Namespace) -> int:
    import fencecheck.cli.emulator as service

    directory = service.state_dir()
    if args.action == "start":
        done = service.start(directory, port=args.port)
    elif args.action == "stop":
        done = service.stop(directory)
    else:
        done = service.status(directory)
    # Messages for people on stderr, shell lines on stdout: eval "$(fencecheck emulator start)" works.
    for line in done.messages:
        print(f"fencecheck: {line}", file=sys.stderr, flush=True)
    for line in done.shell:
        print(line, flush=True)
    return done.exit_code


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (expected 1-65535)")
    return int(text)


def _add_plugin_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE:ATTRIBUTE",
                        help="register one more system for this run: the SystemPlugin object at MODULE:ATTRIBUTE "
                        f"(repeatable; exported as ${ENV_PLUGINS}, so the processes the run starts have it too; "
                        "docs/plugins-from-your-package.md)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fencecheck", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gate_parser = commands.add_parser("gate", help="run every suite and write the evidence report")
    gate_parser.add_argument("--profile", default="gate", help=f"Hypothesis profile: {', '.join(PROFILES)}")
    gate_parser.add_argument("--artifacts", default="artifacts", help="where reports and logs go")
    gate_parser.add_argument("--workers", default="auto", help="pytest-xdist workers per suite")
    gate_parser.add_argument("--suite", action="append", choices=[s.name for s in SUITES],
                             help="run only this suite (repeatable)")
    gate_parser.add_argument("--system", metavar="SPEC",
                             help="run the stateful, race and parallel suites against this implementation instead of "
                             "the reference: <system>:<module> (journal, lantern, gateway or a --plugin system), a "
                             "bare journal module, or journal:exec:<command line> for a journal in another process "
                             "(docs/implementation-protocol.md); the evidence names it")
    gate_parser.add_argument("--known-bad", metavar="NAME",
                             help="run the stateful, race and parallel suites against this variant of a registered "
                             "system's known-bad catalogue instead of its reference (known_bad/<system>/); they "
                             "should fail, and the gate replays the failure to confirm the catch")
    _add_plugin_option(gate_parser)
    gate_parser.set_defaults(handler=gate)
    import fencecheck.cli.mutate as mutate

    mutate.add_parser(commands)
    report_parser = commands.add_parser(
        "report",
        help="render evidence.json/.md/.html again from an artifacts directory",
        description="Render the evidence report from ARTIFACTS_DIR (exit 0 when the verdict is pass, 1 when it "
        "is fail or incomplete, 2 on a usage error).",
    )
    report_parser.add_argument("artifacts_dir", metavar="ARTIFACTS_DIR", help="a gate's artifacts directory")
    report_parser.add_argument("--output", help="where the three files go (default: ARTIFACTS_DIR)")
    report_parser.set_defaults(handler=report_command)
    replay_parser = commands.add_parser(
        "replay",
        help="run a saved counterexample again and say whether it still fails",
        description="Replay a counterexample against the emulator ($FIRESTORE_EMULATOR_HOST, else one started for "
        "the run): a lockstep program (.py) with pytest, or a race (.json): its saved history re-checked, then "
        "the same setup and calls raced again; or a generated concurrent program (.json), run --repeat times. "
        "Exit 1 when it still fails, 0 when it no longer does, 2 on a "
        "usage error.",
    )
    replay_parser.add_argument(
        "path", metavar="PATH", help="counterexamples/<Machine>-<id>.py, a race .json or a parallel-*.json program"
    )
    replay_parser.add_argument(
        "--repeat", type=int, default=5, help="runs of a concurrent program (default 5): interleavings vary"
    )
    replay_parser.add_argument(
        "--system", metavar="SPEC", help="replay against this implementation instead of the one the file names: "
        "'reference' (the reference of the file's system), known_bad.<system>:<variant> or <system>:<module>"
    )
    _add_plugin_option(replay_parser)
    replay_parser.set_defaults(handler=replay_command)
    check_parser = commands.add_parser(
        "check",
        help="judge a saved history with the linearizability checker and explain the verdict",
        description="Check the history in a saved file (a history, a race result or counterexample, a parallel "
        "counterexample, a checker fixture) of any system, from the model state after its setup. The verdict comes "
        "first: it stops once a partition is illegal unless --full. Exit 0 ok, 1 illegal, 3 unknown (budget ran "
        "out), 2 usage error.",
    )
    check_parser.add_argument("path", metavar="HISTORY.json", help="the saved history")
    check_parser.add_argument("--full", action="store_true", help="check every partition, not only up to the "
                              "first illegal one")
    check_parser.add_argument("--budget", type=_count, default=None, metavar="N",
                              help="placement attempts per partition (default 1,000,000)")
    check_parser.add_argument("--processes", type=lambda text: _count(text, 1), default=1, metavar="N",
                              help="search partitions in N processes (default 1)")
    _add_plugin_option(check_parser)
    check_parser.set_defaults(handler=check_command)
    emulator_parser = commands.add_parser(
        "emulator",
        help="start, stop or query a Firestore emulator that keeps running between commands",
        description="start prints `export FIRESTORE_EMULATOR_HOST=...` (eval \"$(fencecheck emulator start)\"); "
        "state is kept in $FENCECHECK_STATE_DIR or .fencecheck/. status exits 0 when it runs and answers, 1 when "
        "it runs but does not answer, 3 when it does not run.",
    )
    emulator_parser.add_argument("action", choices=("start", "stop", "status"))
    emulator_parser.add_argument("--port", type=_port, help="start: listen on this port (default: a free one)")
    emulator_parser.set_defaults(handler=emulator_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        # Registered in this process's environment: the gate's suites and a replay's pytest inherit it.
        for where in getattr(args, "plugin", ()):
            add_to_environment(where)
        return args.handler(args)
    except FencecheckError as error:
        print(f"fencecheck: {error}", file=sys.stderr)
        return 2
