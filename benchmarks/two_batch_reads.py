"""Can a transaction's two batches of reads see two states? Two emulator experiments (docs/journal-decisions.md,
"Two-batch reads"), shaped like the journal's reads: `z` stands for the lifecycle (`checkoutRequests/...`), `b`
for the next audit (`auditEvents/...`, which sorts first, so a commit writing both locks it first).

- timeout: R (read-write) reads z; W (older) reads z; holders H0..H5, committing every 0.4 s, keep b locked while
  they wait on a lock an idle reader holds; R then reads [z, b] and waits past its 2 s lock timeout, and W's commit
  {z v2, b} lands about when R's wait ends. Prints what R's read answered (ABORTED, or the documents: `b` present
  beside z v1 would be the mixed pair) and how far W's commit was from it.
- looks: read-only transactions reading [z] then [b] in a loop while a contended commit {z v2, create b} waits
  on a lock and lands. Prints the (z, b present) pairs seen; (1, True) would be the mixed pair.

Uses FIRESTORE_EMULATOR_HOST when set, otherwise starts (and stops) its own emulator. Uses the client's private
transaction calls (_begin, _commit, _rollback) to hold transactions open across threads.

    python benchmarks/two_batch_reads.py --runs 15 --rounds 10
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fencecheck.emulator.lifecycle import close_client, emulator_from_environment  # noqa: E402

HOLDERS, STAGGER, READ_AT, COMMIT_AT = 6, 0.4, 0.3, 1.0


def _pair(client: Any) -> tuple[Any, Any, Any]:
    collection = f"twobatch{uuid.uuid4().hex[:8]}"
    return tuple(client.document(f"{collection}/{name}") for name in ("z", "b", "q"))


def timeout_run(client: Any) -> tuple[str, float | None]:
    z, b, q = _pair(client)
    z.set({"v": 1})
    q.set({"v": 1})
    events: dict[str, float] = {}
    w = client.transaction(max_attempts=1)
    w._begin()
    list(client.get_all([z], transaction=w))
    holders = [client.transaction(max_attempts=1) for _ in range(HOLDERS)]
    for holder in holders:
        holder._begin()
    idle = client.transaction(max_attempts=1)
    idle._begin()
    list(client.get_all([q], transaction=idle))  # holds q: every holder waits on it, keeping b locked
    r = client.transaction(max_attempts=1)
    r._begin()
    list(client.get_all([z], transaction=r))
    started = time.monotonic()

    def hold(i: int) -> None:
        time.sleep(STAGGER * i)
        holders[i].set(b, {"h": i})
        holders[i].set(q, {"h": i})
        try:
            holders[i]._commit()
        except Exception:  # the expected lock timeout
            pass

    def write() -> None:
        time.sleep(COMMIT_AT)
        w.set(z, {"v": 2})
        w.set(b, {"w": 2})
        try:
            w._commit()
            events["w"] = time.monotonic()
        except Exception:
            pass

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(HOLDERS)] + [threading.Thread(target=write)]
    for thread in threads:
        thread.start()
    time.sleep(max(0.0, READ_AT - (time.monotonic() - started)))
    try:
        seen = {s.reference.id: s.to_dict() for s in client.get_all([z, b], transaction=r)}
        answer = f"documents z={seen['z']} b={seen['b']}"
    except Exception as error:
        answer = type(error).__name__
    events["r"] = time.monotonic()
    for thread in threads:
        thread.join()
    for transaction in (r, idle):
        try:
            transaction._rollback()
        except Exception:  # already aborted
            pass
    gap = events["w"] - events["r"] if "w" in events else None
    return answer, gap


def looks_round(client: Any, readers: int, hold: float, counts: collections.Counter) -> None:
    z, b, _ = _pair(client)
    z.set({"v": 1})
    r = client.transaction(max_attempts=1)
    r._begin()
    list(client.get_all([z], transaction=r))
    w = client.transaction(max_attempts=1)
    w._begin()
    list(client.get_all([z], transaction=w))
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            t = client.transaction(read_only=True)
            t._begin()
            try:
                (sz,) = client.get_all([z], transaction=t)
                (sb,) = client.get_all([b], transaction=t)
                t._commit()
                counts[(sz.to_dict()["v"], sb.exists)] += 1
            except Exception as error:
                counts[type(error).__name__] += 1

    threads = [threading.Thread(target=look) for _ in range(readers)]
    for thread in threads:
        thread.start()
    w.set(z, {"v": 2})
    w.create(b, {"v": 2})
    committing = threading.Thread(target=w._commit)
    committing.start()
    time.sleep(hold)  # W waits on R's lock meanwhile
    r._commit()
    committing.join()
    time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timeout experiment runs")
    parser.add_argument("--rounds", type=int, default=10, help="look experiment rounds")
    parser.add_argument("--readers", type=int, default=4)
    args = parser.parse_args()
    with emulator_from_environment(quiet=True) as emulator:
        client = emulator.client("demo-two-batch-reads")
        answers: collections.Counter = collections.Counter()
        gaps = []
        for _ in range(args.runs):
            answer, gap = timeout_run(client)
            answers[answer] += 1
            if gap is not None:
                gaps.append(gap)
        print(f"timeout: R's second read answered {dict(answers)}")
        if gaps:
            print(f"timeout: W committed {min(gaps) * 1000:+.0f} .. {max(gaps) * 1000:+.0f} ms from R's answer "
                  f"({len(gaps)} of {args.runs} runs)")
        counts: collections.Counter = collections.Counter()
        for _ in range(args.rounds):
            looks_round(client, args.readers, 0.5, counts)
        print(f"looks: (z, b present) pairs seen {dict(counts)}; mixed (1, True): {counts[(1, True)]}")
        close_client(client)


if __name__ == "__main__":
    main()
