"""Stateful lockstep throughput against raw emulator throughput, measured in one run on one emulator.

    .venv/bin/python benchmarks/stateful_throughput.py [--warmup 300] [--transactions 300] [--calls 300] [--examples 50]
        [--steps 80] [--rounds 5] [--profile cprofile.out]

(a) raw transactions/s: one thread, a loop of read-then-write transactions on one document
    (`google.cloud.firestore.transactional`), no journal code;
(b) raw reference calls/s: the reference journal on one registered and leased command, with one fixed
    clock, alternating an acquire recovery (same holder, active lease) and a registration of the existing
    command (both read-only transactions of the full read set);
(c) stateful steps/s: `JournalMachine` (real reference) under `--examples` derandomized examples of at
    most `--steps` steps, counting Hypothesis's steps (each rule it ran, as `stateful_step_count` counts
    them: every rule that applies an operation to model and reference, and the rules that only grow a
    Bundle or move the trusted clock), divided by the wall time of the whole run: Hypothesis, the model,
    the reference calls, every document read-back and the project reset between examples included. The
    read-back is what `fencecheck.runners.lockstep` documents: after each operation one batched get of the
    operation's key; the whole project before the first step, every `FULL_CHECK_EVERY` (16) operations
    and at the end of each example.
(c') operations/s, the stricter figure: the same run, counting only the operations the Lockstep applied
    (a two-call rule counts two), so that rules touching no document do not count.

After `--warmup` unmeasured transactions (a cold emulator JVM is up to twice slower for its first few
hundred requests), the three are measured in `--rounds` interleaved rounds (a, b, c, a, b, c, ...), so
that a busy machine slows all three alike; each figure is its total count over its total time. Prints the
figures, the ratio (c)/(a) against the target (>= 0.6), MET or MISSED, with the ratio of each round,
and the ratios (c')/(a) and (b)/(a) beside it. The emulator is the one in FIRESTORE_EMULATOR_HOST, else a
private one started and stopped here.
With `--profile FILE`, part (c) also runs under cProfile and the top functions by cumulative time print.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.cloud import firestore  # noqa: E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from hypothesis.stateful import invariant  # noqa: E402

import reference  # noqa: E402
from fencecheck.emulator.lifecycle import (  # noqa: E402
    close_client,
    emulator_from_environment,
    new_run_token,
    project_id_for,
)
from stateful_tests import machine_runner  # noqa: E402
from stateful_tests.machine_runner import run_machine  # noqa: E402
from tests.systems.journal.machine import JournalMachine  # noqa: E402

TARGET_RATIO = 0.6
T0 = datetime(2026, 1, 1, tzinfo=UTC)
COMMAND = {
    "environment": "test",
    "caller_scope": {"kind": "internal_system", "value": "bench"},
    "command_id": "00000001-c0de-4000-8000-000000000000",
    "command_type": "bench_command",
    "endpoint_schema_version": 1,
    "payload": {"n": 1},
}
HOLDER = "00000001-1ea5-4000-a000-000000000000"


def raw_transactions(db: Any, count: int) -> float:
    ref = db.document("benchmarks/counter")
    ref.set({"n": 0})

    @firestore.transactional
    def increment(transaction: Any) -> None:
        snapshot = ref.get(transaction=transaction)
        transaction.set(ref, {"n": snapshot.get("n") + 1})

    increment(db.transaction())  # warm up the channel
    started = time.perf_counter()
    for _ in range(count):
        increment(db.transaction())
    elapsed = time.perf_counter() - started
    assert ref.get().get("n") == count + 1
    return count / elapsed


def raw_reference_calls(db: Any, count: int) -> float:
    now = T0 + timedelta(seconds=1)

    def clock() -> datetime:
        return now

    reference.register_commerce_command(db=db, clock=lambda: T0, **COMMAND)
    reference.acquire_commerce_command_lease(db=db, clock=clock, lease_id=HOLDER, **COMMAND)
    started = time.perf_counter()
    for i in range(count):
        if i % 2:
            outcome = reference.register_commerce_command(db=db, clock=clock, **COMMAND).outcome
            assert outcome == "registered_existing", outcome
        else:
            outcome = reference.acquire_commerce_command_lease(db=db, clock=clock, lease_id=HOLDER, **COMMAND).outcome
            assert outcome == "lease_acquired", outcome
    return count / (time.perf_counter() - started)


class CountingMachine(JournalMachine):
    """The machine as it is, counting its steps and the operations each example applied."""

    tally: Counter[str] = Counter()

    @invariant()
    def count_steps(self) -> None:
        # Hypothesis checks the invariants once before the first step and once after every step, so a
        # counting invariant is an exact step counter (the examples' first checks are taken off below)
        # without reaching into Hypothesis's private run loop.
        type(self).tally["checks"] += 1

    def teardown(self) -> None:
        type(self).tally["ops"] += len(self.lockstep.ops)
        type(self).tally["examples"] += 1
        super().teardown()


def stateful_steps(
    emulator: Any, project_id: str, db: Any, examples: int, steps: int, round_: int
) -> tuple[int, int, float]:
    """Run the machine for `examples` derandomized examples; (steps, operations applied, seconds). Each
    round is its own subclass, so derandomization (seeded by the class) gives each round other programs."""
    machine = type(f"CountingMachineRound{round_}", (CountingMachine,), {})
    CountingMachine.tally = Counter()
    run_settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),  # the emulator is slow and the machine draws a lot: expected
    )
    started = time.perf_counter()
    run_machine(machine, settings=run_settings, emulator=emulator, project_id=project_id, db=db)
    elapsed = time.perf_counter() - started
    counts = CountingMachine.tally
    return counts["checks"] - counts["examples"], counts["ops"], elapsed


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=300, help="unmeasured transactions first (JVM warm-up)")
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--examples", type=int, default=50)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=5, help="interleave (a), (b) and (c) in this many rounds")
    parser.add_argument("--profile", metavar="FILE", help="also run part (c) under cProfile, saving stats here")
    args = parser.parse_args(argv)

    token = new_run_token()
    # The machine's run summaries are no evidence about the reference: keep them out of artifacts/.
    with tempfile.TemporaryDirectory() as scratch, emulator_from_environment() as emulator:
        machine_runner.ARTIFACTS = Path(scratch)
        projects = [project_id_for(token, "bench", i) for i in range(3)]
        clients = [emulator.client(project) for project in projects]
        try:
            raw_transactions(clients[0], args.warmup)  # the emulator's JVM warms up (JIT) before any figure
            totals = Counter()
            ratios = []
            for round_, (tx, calls, examples) in enumerate(
                zip(*(_split(n, args.rounds) for n in (args.transactions, args.calls, args.examples)), strict=True)
            ):
                tx_seconds = tx / raw_transactions(clients[0], tx)
                call_seconds = calls / raw_reference_calls(clients[1], calls)
                emulator.reset(projects[1])
                steps, ops, step_seconds = stateful_steps(
                    emulator, projects[2], clients[2], examples, args.steps, round_
                )
                totals.update(tx=tx, tx_s=tx_seconds, calls=calls, calls_s=call_seconds)
                totals.update(steps=steps, ops=ops, machine_s=step_seconds)
                ratios.append((steps / step_seconds) / (tx / tx_seconds))
            tx_rate, call_rate = totals["tx"] / totals["tx_s"], totals["calls"] / totals["calls_s"]
            step_rate, op_rate = totals["steps"] / totals["machine_s"], totals["ops"] / totals["machine_s"]
            ratio = step_rate / tx_rate
            print(f"(a) raw emulator transactions/s (read-then-write, 1 thread): {tx_rate:8.1f}")
            print(f"(b) raw reference calls/s (acquire recovery / register existing): {call_rate:8.1f}")
            print(f"(c) stateful steps/s (JournalMachine, {args.examples} examples, {totals['steps']} steps in "
                  f"{totals['machine_s']:.1f} s): {step_rate:8.1f}")
            print(f"(c') operations/s (the same run, counting the {totals['ops']} operations its steps applied): "
                  f"{op_rate:8.1f}")
            verdict = "MET" if ratio >= TARGET_RATIO else "MISSED"
            print(f"ratio (c)/(a) = {ratio:.2f}  target >= {TARGET_RATIO}: {verdict}"
                  f"   (per round: {', '.join(f'{r:.2f}' for r in ratios)})")
            print(f"ratio (c')/(a) = {op_rate / tx_rate:.2f}  (operations only: the stricter figure)")
            print(f"ratio (b)/(a) = {call_rate / tx_rate:.2f}  (a reference call against a raw transaction: the "
                  "ceiling of (c')/(a))")
            print(f"ratio (c')/(b) = {op_rate / call_rate:.2f}  (the harness's cost per operation on top of the call)")
            if args.profile:
                profiler = cProfile.Profile()
                profiler.enable()
                stateful_steps(emulator, projects[2], clients[2], args.examples, args.steps, 0)
                profiler.disable()
                profiler.dump_stats(args.profile)
                pstats.Stats(args.profile).sort_stats("cumulative").print_stats(40)
        finally:
            for project in projects:
                emulator.reset(project)
            for client in clients:
                close_client(client)
    return 0


if __name__ == "__main__":
    sys.exit(main())
