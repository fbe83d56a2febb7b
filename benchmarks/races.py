"""Benchmark the race suite: every scenario R times against one emulator, with the issue's targets.

Per scenario it prints the median and maximum race wall time (first invocation to last answer, whole-call
retries included), the share of callers holding a definite answer after at most 2 whole-call retries, the
outcome distribution over all repetitions, medians of transaction attempts and aborts per run, the
checker's time and the verdict counts; each target figure is marked MET or MISSED:

    median wall <= 10 s, max wall <= 30 s, definite share >= 99 %   (24-way scenarios)

plus the emulator's lock-timeout count for the whole run. Repetitions run round-robin over the scenarios
(r0 of every scenario, then r1, ...), one at a time, each in a fresh project with fresh ids. The summary
goes to `artifacts/races/benchmark.json`, each run's full result (history included) to
`artifacts/races/bench/journal_<scenario>-<repeat>.json`; a run whose verdict is not ok also leaves a
counterexample in `counterexamples/`. Uses $FIRESTORE_EMULATOR_HOST when set, otherwise starts (and stops)
its own emulator.

    .venv/bin/python benchmarks/races.py [--repeat 10] [--scenario NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fencecheck.emulator.lifecycle import (  # noqa: E402
    close_client,
    emulator_from_environment,
    new_run_token,
    project_id_for,
)
from fencecheck.runners.contest_results import ScenarioResult, write_json  # noqa: E402
from tests.systems.journal.races import BY_NAME, SCENARIOS, execute  # noqa: E402

MEDIAN_TARGET_S = 10.0
MAX_TARGET_S = 30.0
DEFINITE_TARGET = 0.99
TARGET_WIDTH = 24


def _mark(ok: bool, applies: bool) -> str:
    return ("MET" if ok else "MISSED") if applies else "n/a"


def summarize(name: str, results: list[ScenarioResult]) -> dict:
    walls = [r.race_seconds for r in results]
    callers = sum(r.callers for r in results)
    definite = sum(r.definite_callers for r in results)
    outcomes: Counter[str] = Counter()
    for r in results:
        outcomes.update(r.outcomes)
    width = results[0].width
    applies = width >= TARGET_WIDTH
    median_wall, max_wall = statistics.median(walls), max(walls)
    share = definite / callers
    return {
        "scenario": name,
        "width": width,
        "runs": len(results),
        "wall_median_s": round(median_wall, 3),
        "wall_max_s": round(max_wall, 3),
        "wall_min_s": round(min(walls), 3),
        "total_median_s": round(statistics.median(r.total_seconds for r in results), 3),
        "definite_share": round(share, 5),
        "callers": callers,
        "indefinite_callers": callers - definite,
        "whole_call_retries": sum(r.whole_call_retries for r in results),
        "outcomes": dict(sorted(outcomes.items())),
        "attempts_median": statistics.median(r.attempts for r in results),
        "aborts_median": statistics.median(r.aborts for r in results),
        "max_attempts_per_call": max(r.max_attempts for r in results),
        "checker_ms_median": round(statistics.median(r.checker_ms for r in results), 3),
        "checker_ms_max": round(max(r.checker_ms for r in results), 3),
        "verdicts": dict(Counter(r.verdict for r in results)),
        "failed_runs": sum(1 for r in results if not r.passed),
        "targets": {
            "wall_median": _mark(median_wall <= MEDIAN_TARGET_S, applies),
            "wall_max": _mark(max_wall <= MAX_TARGET_S, applies),
            "definite_share": _mark(share >= DEFINITE_TARGET, applies),
        },
    }


def print_table(summaries: list[dict], lock_timeouts: int | None, elapsed: float) -> None:
    print()
    header = (
        f"{'scenario':31} {'N':>3} {'wall median':>17} {'wall max':>17} {'definite':>16} "
        f"{'att/abort med':>13} {'checker ms':>11}  verdicts"
    )
    print(header)
    print("-" * len(header))
    for s in summaries:
        t = s["targets"]
        print(
            f"{s['scenario']:31} {s['width']:>3} "
            f"{s['wall_median_s']:7.2f}s {t['wall_median']:>7}  "
            f"{s['wall_max_s']:7.2f}s {t['wall_max']:>7}  "
            f"{100 * s['definite_share']:6.2f}% {t['definite_share']:>7}  "
            f"{s['attempts_median']:>6g}/{s['aborts_median']:<6g} "
            f"{s['checker_ms_median']:>6.2f}/{s['checker_ms_max']:<5.1f} "
            f"{' '.join(f'{k}={v}' for k, v in s['verdicts'].items())}"
            + (f"  FAILED RUNS: {s['failed_runs']}" if s["failed_runs"] else "")
        )
    print()
    print("outcome distribution (all runs; final answer per caller) and whole-call retries:")
    for s in summaries:
        outcomes = ", ".join(f"{k} {v}" for k, v in s["outcomes"].items())
        print(f"  {s['scenario']:31} {outcomes}; retries {s['whole_call_retries']}, "
              f"still indefinite {s['indefinite_callers']}/{s['callers']}")
    missed = [f"{s['scenario']}:{k}" for s in summaries for k, v in s["targets"].items() if v == "MISSED"]
    print()
    print(f"targets (24-way): median wall <= {MEDIAN_TARGET_S:g} s, max wall <= {MAX_TARGET_S:g} s, "
          f"definite >= {100 * DEFINITE_TARGET:g}% -> " + ("ALL MET" if not missed else "MISSED: " + ", ".join(missed)))
    print(f"emulator lock timeouts during the run: {lock_timeouts if lock_timeouts is not None else 'unknown'}; "
          f"elapsed {elapsed:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs per scenario (default 10)")
    parser.add_argument("--scenario", action="append", choices=sorted(BY_NAME), help="only this one (repeatable)")
    parser.add_argument("--json", default=str(ROOT / "artifacts" / "races" / "benchmark.json"))
    parser.add_argument(
        "--runs-dir",
        default=str(ROOT / "artifacts" / "races" / "bench"),
        help="where each run's full result (history included) is saved as <scenario>-<repeat>.json",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    scenarios = [s for s in SCENARIOS if not args.scenario or s.name in args.scenario]
    token = new_run_token()
    results: dict[str, list[ScenarioResult]] = {s.name: [] for s in scenarios}
    started = time.monotonic()
    counter = 0
    with emulator_from_environment(log_dir=ROOT / "artifacts" / "emulator") as emulator:
        locks_start = emulator.lock_timeout_count()
        for repeat in range(args.repeat):
            for scenario in scenarios:
                counter += 1
                project = project_id_for(token, "bench", counter)
                db = emulator.client(project)
                try:
                    result, _run = execute(
                        db,
                        scenario,
                        repeat=repeat,
                        artifacts_dir=Path(args.runs_dir),
                        counterexamples_dir=ROOT / "counterexamples",
                        emulator=emulator,
                        project_id=project,
                    )
                finally:
                    close_client(db)
                    emulator.reset(project)
                results[scenario.name].append(result)
                flag = "" if result.passed else f"  FAILED ({result.verdict}; {result.counterexample})"
                print(
                    f"[r{repeat} {scenario.name}] wall {result.race_seconds:6.2f} s, definite "
                    f"{result.definite_callers}/{result.callers}, retries {result.whole_call_retries}, "
                    f"attempts {result.attempts}, aborts {result.aborts}, {result.verdict}{flag}",
                    flush=True,
                )
        locks_end = emulator.lock_timeout_count()
    elapsed = time.monotonic() - started
    lock_timeouts = None if locks_start is None or locks_end is None else locks_end - locks_start
    summaries = [summarize(name, runs) for name, runs in results.items()]
    print_table(summaries, lock_timeouts, elapsed)
    write_json(
        Path(args.json),
        {
            "format": "fencecheck.race-benchmark/1",
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "repeat": args.repeat,
            "targets": {
                "wall_median_s": MEDIAN_TARGET_S,
                "wall_max_s": MAX_TARGET_S,
                "definite_share": DEFINITE_TARGET,
            },
            "lock_timeouts": lock_timeouts,
            "elapsed_s": round(elapsed, 1),
            "summaries": summaries,
            "runs": {name: [r.to_json() for r in runs] for name, runs in results.items()},
        },
    )
    print(f"written {args.json}")
    failed = sum(s["failed_runs"] for s in summaries)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
