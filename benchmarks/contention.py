"""Measure the reference's transaction runner under N-way contention on one command.

Two shapes, at each width (default 2, 8, 24):
- create: N identical registrations of an absent command (all try to create the same pair);
- update: N distinct holders take over one expired lease (all try to rewrite the same lifecycle).

Prints, per run: definite outcomes, the outcome distribution, attempts, aborts and wall time; and checks
the safety facts that must hold whatever the timing (one registered_new; one takeover; one audit per
mutation). Uses FIRESTORE_EMULATOR_HOST when set, otherwise starts (and stops) its own emulator.

    python benchmarks/contention.py --widths 2 8 24 --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import reference  # noqa: E402
from fencecheck.emulator.lifecycle import emulator_from_environment  # noqa: E402
from reference.journal import runner as runner_module  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _command(command_id: str) -> dict:
    return {
        "environment": "test",
        "caller_scope": {"kind": "internal_system", "value": "bench"},
        "command_id": command_id,
        "command_type": "bench_command",
        "endpoint_schema_version": 1,
        "payload": {"n": 1},
    }


def _race(calls):
    """Run the zero-argument calls in threads released together; return (results, logs, wall seconds)."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)
    logs = [reference.AttemptLog() for _ in calls]

    def worker(index: int) -> None:
        barrier.wait()
        try:
            results[index] = calls[index](logs[index]).to_json()["outcome"]
        except reference.CommandJournalError as error:
            results[index] = error.code

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(calls))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, logs, time.perf_counter() - started


def run_create(db, width: int) -> dict:
    command = _command(str(uuid.uuid4()))
    calls = [
        (lambda log: reference.register_commerce_command(db=db, **command, clock=lambda: T0, attempt_log=log))
        for _ in range(width)
    ]
    results, logs, wall = _race(calls)
    counts = Counter(results)
    assert counts["registered_new"] <= 1, counts  # safety, whatever the timing
    return _summary("create", width, counts, logs, wall)


def run_update(db, width: int) -> dict:
    command = _command(str(uuid.uuid4()))
    reference.register_commerce_command(db=db, **command, clock=lambda: T0)
    reference.acquire_commerce_command_lease(db=db, **command, lease_id=str(uuid.uuid4()), clock=lambda: T0)
    later = T0 + timedelta(seconds=120)

    def acquire_as(lease_id: str):
        return lambda log: reference.acquire_commerce_command_lease(
            db=db, **command, lease_id=lease_id, clock=lambda: later, attempt_log=log
        )

    calls = [acquire_as(str(uuid.uuid4())) for _ in range(width)]
    results, logs, wall = _race(calls)
    counts = Counter(results)
    assert counts["lease_acquired"] <= 1, counts
    return _summary("update", width, counts, logs, wall)


def _summary(shape: str, width: int, counts: Counter, logs, wall: float) -> dict:
    definite = sum(n for outcome, n in counts.items() if outcome != "journal_unavailable")
    return {
        "shape": shape,
        "width": width,
        "definite": definite,
        "outcomes": dict(counts),
        "attempts": sum(log.attempts for log in logs),
        "aborts": sum(log.aborts for log in logs),
        "looks": sum(log.looks for log in logs),
        "max_attempts": max(log.attempts for log in logs),
        "wall_s": round(wall, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[2, 8, 24])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write all runs to this file")
    parser.add_argument("--shapes", nargs="+", default=["create", "update"], choices=["create", "update"])
    parser.add_argument(
        "--no-look", action="store_true", help="experiment: skip the lock-free look before each retry"
    )
    parser.add_argument(
        "--look-interval", type=float, help="experiment: seconds between looks during a pause (0: one look at its end)"
    )
    parser.add_argument("--retry-round", type=float, help="experiment: seconds between the runner's retry rounds")
    args = parser.parse_args(argv)
    if args.retry_round is not None:
        runner_module.RETRY_ROUND_SECONDS = args.retry_round
    if args.look_interval is not None:
        runner_module.LOOK_INTERVAL_SECONDS = args.look_interval
    if args.no_look:
        runner_module._look = lambda db, look, log: runner_module.NEEDS_WRITE
    rows = []
    with emulator_from_environment() as emulator:
        db = emulator.client(f"demo-bench-{uuid.uuid4().hex[:8]}")
        for run in [{"create": run_create, "update": run_update}[shape] for shape in args.shapes]:
            for width in args.widths:
                for _ in range(args.runs):
                    row = run(db, width)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        lock_timeouts = emulator.lock_timeout_count()
    print(f"\n{'shape':7} {'width':>5} {'definite':>12} {'aborts(med)':>11} {'wall med':>8} {'wall max':>8}")
    for shape in args.shapes:
        for width in args.widths:
            runs = [r for r in rows if r["shape"] == shape and r["width"] == width]
            definite = sum(r["definite"] for r in runs)
            print(
                f"{shape:7} {width:>5} {definite:>5}/{width * len(runs):<6} "
                f"{statistics.median(r['aborts'] for r in runs):>11} "
                f"{statistics.median(r['wall_s'] for r in runs):>7.2f}s {max(r['wall_s'] for r in runs):>7.2f}s"
            )
    print(f"emulator lock timeouts reported during the run: {lock_timeouts}")
    if args.json:
        args.json.write_text(json.dumps({"runs": rows, "lock_timeouts": lock_timeouts}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
