"""Lockstep throughput over the implementation process protocol against the in-process reference, in one run.

    .venv/bin/python benchmarks/protocol_throughput.py [--commands 20] [--rounds 4]
        [--exec "node implementations/node-journal/main.js"]

Both figures run the same lockstep program through `fencecheck.runners.lockstep.Lockstep` (model and implementation in
lockstep, every answer and the stored documents compared, with the read-back the stateful machines do): per
command, register, register again, acquire, acquire again (the holder's own lease), a second holder (busy),
complete, the exact terminal retry, and an acquire that observes the terminal state: 8 operations. "in-process"
calls the Python reference; "protocol" the `journal:exec:` implementation, whose process for the round's project
is started and greeted before the clock runs (a suite pays that once per project). The two are measured in
`--rounds` interleaved rounds (in-process, protocol, ...), each on a fresh project, so a busy machine slows both
alike; each figure is its total operations over its total time. Prints the figures and their ratio; asserts
nothing about timing. The emulator is the one in FIRESTORE_EMULATOR_HOST, else a private one started and stopped
here.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fencecheck.emulator.lifecycle import (  # noqa: E402
    close_client,
    emulator_from_environment,
    new_run_token,
    project_id_for,
)
from fencecheck.plugin.registry import plugin  # noqa: E402
from fencecheck.plugin.specs import resolve_implementation  # noqa: E402
from fencecheck.runners.lockstep import Lockstep  # noqa: E402
from fencecheck.systems.journal.exec import pool_of  # noqa: E402
from model.journal import Acquire, CommandRef, Complete, Register  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STEP = timedelta(seconds=1)
FINGERPRINT = "a" * 64


def program(commands: int) -> list[Any]:
    ops: list[Any] = []
    now = T0
    for n in range(commands):
        command = CommandRef.from_inputs(
            environment="test",
            caller_scope={"kind": "internal_system", "value": "bench"},
            command_id=f"{n:08x}-c0de-4000-8000-000000000000",
            command_type="create_checkout_session",
            endpoint_schema_version=1,
            payload={"n": n},
        )
        holder, other = f"{n:08x}-1ea5-4000-8000-000000000001", f"{n:08x}-1ea5-4000-8000-000000000002"
        for make, *rest in (
            (Register, ()), (Register, ()), (Acquire, (holder,)), (Acquire, (holder,)), (Acquire, (other,)),
            (Complete, (holder, 1, FINGERPRINT)), (Complete, (holder, 1, FINGERPRINT)), (Acquire, (other,)),
        ):
            now += STEP
            ops.append(make(command, *rest[0], now))
    return ops


def timed_run(db: Any, system: Any, ops: list[Any]) -> float:
    """Seconds for the whole program in lockstep, ending with a whole-project read-back."""
    lockstep = Lockstep(db, plugin=plugin("journal"), system=system, epoch=T0)
    started = time.perf_counter()
    for op in ops:
        lockstep.run(op)
    lockstep.check_project()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=20, help="commands per round (8 operations each)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--exec", dest="command", default="node implementations/node-journal/main.js")
    args = parser.parse_args(argv)
    spec = f"journal:exec:{args.command}"
    systems = {"in-process": plugin("journal").reference, "protocol": resolve_implementation(spec)}
    ops = program(args.commands)
    token = new_run_token()
    totals = dict.fromkeys(systems, 0.0)
    with emulator_from_environment() as emulator:
        warm = emulator.client(project_id_for(token, "protobench", 0))
        timed_run(warm, systems["in-process"], ops)  # a cold emulator JVM is slower for its first requests
        close_client(warm)
        for round_ in range(args.rounds):
            for label, system in systems.items():
                project = project_id_for(token, f"protobench-{label[:2]}", round_ + 1)
                db = emulator.client(project)
                if label == "protocol":
                    pool_of(spec).process_for(emulator.host, project)  # started and greeted, not timed
                seconds = timed_run(db, system, ops)
                totals[label] += seconds
                print(f"round {round_ + 1}: {label:10s} {len(ops) / seconds:7.1f} operations/s", flush=True)
                close_client(db)
        pool_of(spec).close()
    count = len(ops) * args.rounds
    in_process, protocol = count / totals["in-process"], count / totals["protocol"]
    print(f"in-process reference: {in_process:.1f} operations/s")
    print(f"over the protocol:    {protocol:.1f} operations/s ({args.command})")
    print(f"ratio protocol / in-process: {protocol / in_process:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
