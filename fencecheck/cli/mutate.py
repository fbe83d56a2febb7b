"""`fencecheck mutate --system S`: each mutant of a system's reference (fencecheck.mutation.mutants) run through the
suites that take an implementation (stateful, races, parallel: `main.TAKES_THE_SYSTEM`), as `gate --known-bad`
runs a variant, and judged by the same rule (fencecheck.checker.known_bad_verdict).

For each mutant, in the work directory (default `artifacts/mutation/<system>/`):
1. its package is written under `packages/` and the suites run against its spec (`<system>:<package>`) with
   `-x`, one suite after another, stopping at the first that fails;
2. a failing suite's failures are replayed against the mutant and against the reference, as the gate does for a
   known-bad variant, and `failures.known_bad_verdict` decides caught, timeout or error; no failing suite is
   survived. A suite that exits non-zero without a failing test recorded is an error: a crash is never a kill;
3. a mutant whose suites outlive the time limit (a multiple of the unmutated copy's time, measured first) is a
   timeout: its process groups are stopped;
4. its outcome is appended to `results/<k>-of-<n>.jsonl`, and the Stryker report (`mutation-report.json`) is
   rewritten from every results file in the directory.

`--shard K/N` takes every N-th mutant; a run started again skips the mutants its directory has decided.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from fencecheck.checker.known_bad_verdict import CAUGHT, ERROR, SURVIVED, TIMEOUT
from fencecheck.emulator.lifecycle import emulator_from_environment
from fencecheck.errors import UsageError
from fencecheck.gate import process as gate_process
from fencecheck.gate import replay as gate_replay
from fencecheck.gate.suites import SUITES, TAKES_THE_SYSTEM, WORK_STEALING, Suite, suite_args
from fencecheck.mutation import equivalents, outcomes, stryker
from fencecheck.mutation import mutants as mutation
from fencecheck.plugin.registry import SYSTEM_NAMES
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.plugin.specs import ENV_SYSTEM
from fencecheck.report import failures
from fencecheck.suites import ENV_ARTIFACTS

REPORT = "mutation-report.json"
PACKAGES = "packages"
DEFAULT_PROFILE = "mutate"  # fencecheck.suites.hypothesis_profiles
NO_TESTS_COLLECTED = 5
POLL_SECONDS = 1.0


class _OutOfTime(Exception):
    """A mutant's suites ran past its time limit."""


@attrs.frozen
class Settings:
    system: str
    work: Path
    profile: str
    workers: str
    timeout_factor: float
    timeout: float | None  # seconds per mutant; None: timeout_factor x the unmutated copy's time


# The gate's suites that take an implementation, in the gate's order.
MUTANT_SUITES = tuple(suite for suite in SUITES if suite.name in TAKES_THE_SYSTEM)


def _command(suite: Suite, spec: str, junit: Path, settings: Settings) -> list[str]:
    return [sys.executable, "-m", "pytest", *suite_args(suite, spec), "-x", "-q", "-n", settings.workers,
            *WORK_STEALING, "-p", "no:cacheprovider", f"--junitxml={junit}", f"--hypothesis-profile={settings.profile}"]


def run_mutant(mutant: mutation.Mutant, settings: Settings, emulator, limit: float | None) -> outcomes.Outcome:
    """Run the suites against one mutant and judge it (the module docstring)."""
    packages = settings.work / PACKAGES
    mutation.materialize(mutant, packages)
    here = settings.work / "mutants" / mutant.id
    shutil.rmtree(here, ignore_errors=True)
    (here / failures.JUNIT_DIR).mkdir(parents=True)
    spec = f"{settings.system}:{mutant.package_name}"
    env = dict(os.environ)
    env[ENV_SYSTEM] = spec
    env[ENV_ARTIFACTS] = str(here.resolve())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(packages.resolve()), env.get("PYTHONPATH"))))
    started = time.monotonic()
    deadline = None if limit is None else started + limit

    def tick() -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise _OutOfTime()

    def outcome(status: str, reason: str, suite: str | None = None, test: str | None = None) -> outcomes.Outcome:
        return outcomes.Outcome(mutant.id, status, reason, round(time.monotonic() - started, 1), suite, test)

    try:
        for suite in MUTANT_SUITES:
            junit = here / failures.JUNIT_DIR / f"{suite.name}.xml"
            with (here / f"{suite.name}.log").open("wb") as log:
                try:
                    code = gate_process.run_suite(_command(suite, spec, junit, settings), env, tick=tick,
                                                  poll_seconds=POLL_SECONDS, output=log)
                except _OutOfTime:
                    return outcome(TIMEOUT, f"the {suite.name} suite was still running after {limit:.0f} s (the "
                                            "time limit per mutant): stopped, nothing decided", suite.name)
            if code == 0:
                continue
            if code == NO_TESTS_COLLECTED:
                return outcome(ERROR, f"the {suite.name} suite collected no test against the mutant", suite.name)
            found = failures.collect(here, [suite.name])
            if not found:
                return outcome(ERROR, f"the {suite.name} suite exited {code} without a failing test recorded (a "
                                      f"crash of the suite, not a property of the contract): see {here / suite.name}"
                                      ".log", suite.name)
            with _importable(packages):
                found = gate_replay.replay_catch(found, spec, emulator, say=lambda _line: None)
            verdict = failures.known_bad_verdict(found)
            _keep_counterexamples(found, here)
            first = next((f.test for f in found if f.contract), found[0].test)
            return outcome(verdict.status, verdict.reason, suite.name, first)
        return outcome(SURVIVED, "every suite passed against it: nothing they check tells it from the reference")
    finally:
        mutation.remove(mutant, packages)


@contextlib.contextmanager
def _importable(packages: Path) -> Iterator[None]:
    """The mutant importable by the replays: in this process (sys.path) and in the processes they start."""
    where = str(packages.resolve())
    before = os.environ.get("PYTHONPATH")
    sys.path.insert(0, where)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (where, before)))
    try:
        yield
    finally:
        sys.path.remove(where)
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def _keep_counterexamples(found: Sequence[failures.Failure], here: Path) -> None:
    """Move the counterexamples a mutant's failures saved out of counterexamples/ into its own directory: they
    describe a mutant, not the reference, and a mutation run must not bury the project's own under hundreds."""
    kept = here / "counterexamples"
    for shown in {path for failure in found for path in failure.counterexamples}:
        path = Path(shown) if Path(shown).is_absolute() else failures.PROJECT_ROOT / shown
        if path.is_file():
            kept.mkdir(exist_ok=True)
            shutil.move(str(path), kept / path.name)


def _baseline(mutant: mutation.Mutant, settings: Settings, emulator) -> float:
    """Seconds the suites take against an unmutated copy, which must pass: else no mutant could be judged."""
    copy = attrs.evolve(mutant, id="baseline00000", mutated=mutant.original)
    result = run_mutant(copy, settings, emulator, None)
    if result.status != SURVIVED:
        raise UsageError(f"the suites fail against an unmutated copy of the reference ({result.status}: "
                         f"{result.reason}), so no mutant can be judged: fix that first (see "
                         f"{settings.work / 'mutants' / copy.id})")
    return result.seconds


def write_report(settings: Settings, every: Sequence[mutation.Mutant]) -> Path:
    data = stryker.report(every, outcomes.load(settings.work))
    path = settings.work / REPORT
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def summary_lines(every: Sequence[mutation.Mutant], decided: dict[str, outcomes.Outcome]) -> list[str]:
    lines = []
    for module in dict.fromkeys(m.module for m in every):
        found = [stryker.outcome_of(m, decided) for m in every if m.module == module]
        known = [o for o in found if o is not None]
        killed, counted = outcomes.score(known)
        pending = len(found) - len(known)
        counts = {status: sum(o.status == status for o in known) for status in outcomes.OUTCOME_STATUSES}
        shown = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        score = f"{100 * killed / counted:.1f}%" if counted else "-"
        lines.append(f"{module}: score {score} ({killed}/{counted}); {shown}" + (f"; {pending} not run" if pending
                                                                                 else ""))
    return lines


def _chosen(every: list[mutation.Mutant], ids: Sequence[str] | None) -> list[mutation.Mutant]:
    """The mutants `--mutant` names (all of them when it is not given); the report still covers every mutant."""
    if not ids:
        return every
    unknown = sorted(set(ids) - {mutant.id for mutant in every})
    if unknown:
        raise UsageError(f"--mutant {', '.join(unknown)}: no such mutant among those of this --system, --module and "
                         "--operator; `fencecheck mutate --list` shows their ids")
    return [mutant for mutant in every if mutant.id in ids]


def mutate_command(args: argparse.Namespace) -> int:
    """SIGINT or SIGTERM stops the running mutant's suites (their process groups), replays and emulator, keeps
    what was decided, and exits 128 + the signal's number, as the gate does."""
    with gate_process.SignalGuard() as guard:
        try:
            return _mutate(args)
        except gate_process.Interrupted:
            guard.hold()
            print(f"mutate: stopped by {signal.Signals(guard.received).name}; the mutants decided so far are kept, "
                  "and the same command resumes after them", file=sys.stderr, flush=True)
    return 128 + guard.received


def _mutate(args: argparse.Namespace) -> int:
    system = args.system
    if system not in SYSTEM_NAMES:
        raise UsageError(f"--system {system!r}: expected one of {', '.join(SYSTEM_NAMES)}")
    targets = plugin_named(system).mutation
    every, stale = equivalents.apply(
        mutation.mutants_of(targets, tuple(args.module) if args.module else None, args.operator),
        equivalents.load(targets))
    for entry in stale:
        print(f"warning: {equivalents.describe_stale(entry)}", file=sys.stderr, flush=True)
    settings = Settings(system, Path(args.work or f"artifacts/mutation/{system}"), args.profile, args.workers,
                        args.timeout_factor, args.timeout)
    settings.work.mkdir(parents=True, exist_ok=True)
    shard = outcomes.Shard.parse(args.shard)
    chosen = _chosen(every, args.mutant)
    if args.list:
        for mutant in shard.take(chosen):
            state = mutant.compile_error or (mutant.equivalent or "").partition(":")[0] or "to run"
            print(f"{mutant.id}  {mutant.module}:{mutant.start[0]}  {mutant.operator_short}  ({state})")
        return 0
    decided = outcomes.load(settings.work)
    todo = [m for m in shard.take(chosen) if m.id not in decided and stryker.not_run(m) is None]
    if args.limit is not None:
        todo = todo[:args.limit]
    print(f"mutate {system}: {len(every)} mutants of {', '.join(dict.fromkeys(m.module for m in every))} "
          f"(cosmic-ray), shard {shard.index}/{shard.count}; {len(todo)} to run now, the others decided before or "
          f"not run (equivalent by construction, or not compiling); work directory {settings.work}", flush=True)
    if todo:
        results = outcomes.results_path(settings.work, shard)
        with emulator_from_environment(log_dir=settings.work / "emulator") as emulator:
            os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host
            limit = settings.timeout
            if limit is None:
                base = _baseline(todo[0], settings, emulator)
                limit = settings.timeout_factor * base + 60
                print(f"the suites pass against an unmutated copy in {base:.0f} s: each mutant gets {limit:.0f} s",
                      flush=True)
            for number, mutant in enumerate(todo, 1):
                result = run_mutant(mutant, settings, emulator, limit)
                outcomes.append(results, result)
                where = f" by {result.suite}: {result.test}" if result.test else ""
                print(f"[{number}/{len(todo)}] {mutant.id} {mutant.module}:{mutant.start[0]} {mutant.operator_short}"
                      f": {result.status.upper()}{where} ({result.seconds:.0f} s)", flush=True)
                if result.status not in (CAUGHT, SURVIVED):
                    print(f"    {result.reason[:400]}", flush=True)
    path = write_report(settings, every)
    problems = stryker.problems(json.loads(path.read_text(encoding="utf-8")))
    if problems:  # our own writer broke the schema: a bug of ours, said as such
        raise RuntimeError(f"{path} does not validate against Stryker's schema: {problems[:3]}")
    decided = outcomes.load(settings.work)
    for line in summary_lines(every, decided):
        print(line, flush=True)
    print(f"report: {path} (Stryker's mutation-testing-report-schema)", flush=True)
    return 0


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "mutate", help="mutate a system's reference and measure which mutants the suites catch",
        description="Mutate a system's reference with cosmic-ray's operators and run the stateful, race and "
        "parallel suites against each mutant, judged as gate --known-bad judges a variant (docs/mutation.md). "
        "Exit 0 when the run finished (whatever the score), 2 on a usage error.")
    parser.add_argument("--system", required=True, help=f"the system whose reference to mutate: "
                        f"{', '.join(SYSTEM_NAMES)}")
    parser.add_argument("--module", action="append", metavar="FILE",
                        help="mutate only this file of the reference package (repeatable; default: every target "
                        "the plug-in names)")
    parser.add_argument("--operator", action="append", metavar="NAME",
                        help="make mutants with this cosmic-ray operator only (repeatable; e.g. core/AddNot; "
                        "default: every operator that takes no arguments)")
    parser.add_argument("--mutant", action="append", metavar="ID",
                        help="run (or list) only this mutant, by the id --list shows (repeatable); one decided "
                        "before runs again only in a fresh --work directory")
    parser.add_argument("--work", metavar="DIR", help="work directory: results, packages, logs, the report "
                        "(default artifacts/mutation/<system>)")
    parser.add_argument("--shard", default="1/1", metavar="K/N", help="run every N-th mutant, starting at the K-th")
    parser.add_argument("--limit", type=int, metavar="N", help="run at most N mutants now (the rest stay pending)")
    parser.add_argument("--profile", default=DEFAULT_PROFILE, help="Hypothesis profile of the suites")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers per suite")
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="time limit per mutant: this many times the unmutated copy's time, plus 60 s")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="time limit per mutant (skips the "
                        "unmutated copy's run)")
    parser.add_argument("--list", action="store_true", help="list the mutants of the shard and exit")
    parser.set_defaults(handler=mutate_command)
