"""Raw transaction throughput through the wire fault proxy against direct, measured in one run on one emulator.

    .venv/bin/python benchmarks/wire_overhead.py [--warmup 300] [--transactions 600] [--rounds 6]

Both figures are the loop of `benchmarks/stateful_throughput.py` part (a): one thread, read-then-write
transactions on one document (`google.cloud.firestore.transactional`), each one BeginTransaction,
BatchGetDocuments and Commit. "direct" talks to the emulator, "proxied" to a `fencecheck.wire.WireProxy` in
front of it with no fault plan, in this process (its forwarding threads share the interpreter with the
client, as they will in the harness). After `--warmup` unmeasured transactions on each path (a cold emulator
JVM is up to twice slower at first), the two are measured in `--rounds` interleaved rounds (direct, proxied,
direct, ...), so that a busy machine slows both alike; each figure is its total count over its total time.
Prints the figures and their ratio; asserts nothing about timing. The emulator is the one in
FIRESTORE_EMULATOR_HOST, else a private one started and stopped here.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.cloud import firestore  # noqa: E402

from fencecheck.emulator.lifecycle import (  # noqa: E402
    close_client,
    emulator_from_environment,
    new_run_token,
    project_id_for,
)
from fencecheck.wire import WireProxy  # noqa: E402


def raw_transactions(db: Any, count: int) -> float:
    """Seconds for ``count`` read-then-write transactions on one document (checked: the counter moved)."""
    ref = db.document("benchmarks/counter")
    start = ref.get().get("n") if ref.get().exists else 0

    @firestore.transactional
    def increment(transaction: Any) -> None:
        snapshot = ref.get(transaction=transaction)
        transaction.set(ref, {"n": (snapshot.get("n") if snapshot.exists else 0) + 1})

    started = time.perf_counter()
    for _ in range(count):
        increment(db.transaction())
    elapsed = time.perf_counter() - started
    assert ref.get().get("n") == start + count
    return elapsed


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=300, help="unmeasured transactions first, on each path")
    parser.add_argument("--transactions", type=int, default=600, help="measured transactions on each path")
    parser.add_argument("--rounds", type=int, default=6, help="interleave direct and proxied in this many rounds")
    args = parser.parse_args(argv)

    token = new_run_token()
    with emulator_from_environment() as emulator, WireProxy(emulator.host) as proxy:
        projects = [project_id_for(token, "wirebench", i) for i in range(2)]
        direct, proxied = emulator.client(projects[0]), proxy.client(projects[1])
        try:
            raw_transactions(direct, args.warmup)
            raw_transactions(proxied, args.warmup)
            totals: Counter[str] = Counter()
            ratios = []
            for count in _split(args.transactions, args.rounds):
                direct_s, proxied_s = raw_transactions(direct, count), raw_transactions(proxied, count)
                totals.update(tx=count, direct_s=direct_s, proxied_s=proxied_s)
                ratios.append(direct_s / proxied_s)
            direct_rate, proxied_rate = totals["tx"] / totals["direct_s"], totals["tx"] / totals["proxied_s"]
            print(f"direct transactions/s (read-then-write, 1 thread):  {direct_rate:8.1f}")
            print(f"proxied transactions/s (through the wire proxy):     {proxied_rate:8.1f}")
            print(f"ratio proxied/direct = {proxied_rate / direct_rate:.2f}"
                  f"   (per round: {', '.join(f'{r:.2f}' for r in ratios)})")
            calls = proxy.call_counts()
            print("calls through the proxy: " + ", ".join(f"{name} {n}" for name, n in sorted(calls.items())))
            if proxy.log.events():
                print(f"unexpected fault events: {len(proxy.log.events())}")
                return 1
        finally:
            for project in projects:
                emulator.reset(project)
            for client in (direct, proxied):
                close_client(client)
    return 0


if __name__ == "__main__":
    sys.exit(main())
