"""Time the linearizability checker (fencecheck/checker/linearizability.py) on generated histories.

Histories come from the model itself (`fencecheck.checker.history.simulate` or a small discrete-event simulation of
workers), so they are linearizable by construction; the illegal variants mutate one answer. Figures are the
median of several runs of `check`, with the targets of the issue next to them:

- contested: one command, one registration, then 24 distinct holders' first acquires overlapping (one
  winner, 20 busy, 3 journal_unavailable); target <= 50 ms;
- partitioned: 1,000 calls over 40 command keys (5 workers per key: acquire, complete or fail with the
  fence they hold, stalls past expiry, takeovers, stale fences, lost answers); target <= 2 s.

Then verdict first against the full report (issue 13): 2,000-call histories of 50 clients over 10 keys, a
read/write register per key (the test system `tests/register_plugin.py`, through the plug-in interface) and
the journal (10 keys x 5 workers), each linearizable and with some keys broken. For each: the time and
placement attempts to the first verdict (`check`, which stops after the first round with an illegal key),
to the full report (`check(full=True)`, every key) and the full report in 2 processes. Targets: the first
verdict in under 1 s, and no key of a linearizable history exhausting its budget. Wall and CPU time are
both printed: the target is judged on wall time, which a loaded machine inflates.

    .venv/bin/python benchmarks/checker.py [--runs 7] [--seed 1]
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fencecheck.checker.history import Call, Definite, History, Indefinite, Planned, simulate  # noqa: E402
from fencecheck.checker.linearizability import DEFAULT_BUDGET, check  # noqa: E402
from fencecheck.systems.journal.plugin import JOURNAL  # noqa: E402
from model.journal import Acquire, CommandRef, Complete, Fail, JournalState, Register, documents_for, step  # noqa: E402
from tests.register_plugin import REGISTER, break_reads, register_history  # noqa: E402

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MS = 1_000_000  # ns


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _command(rng: random.Random, index: int) -> CommandRef:
    return CommandRef("test", "internal_system", f"bench-{index}", _uuid4(rng), "bench_command", 1, '{"n":1}')


def contested(seed: int = 1) -> History:
    """Registration, then 24 overlapping first acquires by distinct holders; one wins, 3 answers are lost."""
    rng = random.Random(seed)
    ref = _command(rng, 0)
    plans = [Planned("client", Register(ref, T0), 0, 2 * MS, 1 * MS)]
    spans = []
    for _k in range(24):
        invoked = 3 * MS + rng.randrange(5 * MS)
        completed = invoked + 20 * MS + rng.randrange(30 * MS)
        spans.append((invoked, completed, rng.randrange(invoked, completed + 1)))
    winner = min(range(24), key=lambda k: spans[k][2])
    lost = set(rng.sample([k for k in range(24) if k != winner], 3))  # the winner's grant is observed
    for k, (invoked, completed, effect) in enumerate(spans):
        op = Acquire(ref, _uuid4(rng), T0 + timedelta(seconds=1, microseconds=rng.randrange(1000)))
        plans.append(
            Planned(f"worker-{k}", op, invoked, completed, effect, lost="journal_unavailable" if k in lost else None)
        )
    history, _state = simulate(plans, plugin=JOURNAL)
    return history


def _mutate_double_grant(history: History) -> History:
    """A busy answer replaced by the winner's grant: a second fence-1 lease."""
    calls = list(history.calls)
    granted = next(c for c in calls if c.outcome.definite and c.outcome.observed.get("outcome") == "lease_acquired")
    busy_index = next(
        i for i, c in enumerate(calls) if c.outcome.definite and c.outcome.observed.get("outcome") == "lease_busy"
    )
    calls[busy_index] = attrs.evolve(calls[busy_index], outcome=Definite(granted.outcome.observed))
    return History(calls, history.final_documents, system=history.system)


def _mutate_late_answer(history: History) -> History:
    """The last definite answer of the history that is not lease_rejected becomes lease_rejected."""
    calls = list(history.calls)
    index = max(i for i, c in enumerate(calls) if c.outcome.definite and c.outcome.observed != "lease_rejected")
    calls[index] = attrs.evolve(calls[index], outcome=Definite("lease_rejected"))
    return History(calls, history.final_documents, system=history.system)


def _workers_history(rng: random.Random, keys: int, calls_per_key: int, workers: int = 5) -> History:
    """Discrete-event simulation: per key, `workers` workers each acquire, then complete or fail with the fence
    they were granted; calls overlap; one model second passes per simulated millisecond, and some workers
    stall past the 60 s lease so others take over and stale fences get rejected. About 8% of answers are
    lost (indefinite), half of those having applied."""
    events: list[tuple[int, int, int, object]] = []  # (time, kind: 0 effect / 1 complete / 2 invoke, seq, data)
    seq = 0
    state = JournalState.empty()
    calls: list[Call] = []
    budget: dict[int, int] = {}
    refs = [_command(rng, k) for k in range(keys)]

    def push(moment: int, kind: int, data: object) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (moment, kind, seq, data))

    knowledge: dict[tuple[int, int], dict] = {}
    for k in range(keys):
        budget[k] = calls_per_key
        for w in range(workers):
            knowledge[k, w] = {
                "lease": _uuid4(rng),
                "reference": f"{rng.getrandbits(256):064x}",
                "fence": None,
                "registered": w != 0,
            }
            push(rng.randrange(5 * MS) + (0 if w == 0 else 15 * MS), 2, (k, w))
    next_id = 0
    while events:
        moment, kind, _seq, data = heapq.heappop(events)
        if kind == 2:
            k, w = data
            if budget[k] == 0:
                continue
            budget[k] -= 1
            know = knowledge[k, w]
            now = T0 + timedelta(microseconds=moment // 1000 * 1000)  # 1 ms simulated = 1 s of model clock
            ref = refs[k]
            if not know["registered"]:
                op = Register(ref, now)
            elif know["fence"] is None or rng.random() < 0.6:
                op = Acquire(ref, know["lease"], now)  # first try, retry or renewal check
            elif rng.random() < 0.85:
                op = Complete(ref, know["lease"], know["fence"], know["reference"], now)
            else:
                op = Fail(ref, know["lease"], know["fence"], now)
            duration = MS + rng.randrange(20 * MS)
            effect = moment + rng.randrange(duration + 1)
            lost = rng.random() < 0.08
            call = {"id": next_id, "k": k, "w": w, "op": op, "invoked": moment, "completed": moment + duration}
            call["lost"] = lost
            call["applies"] = not lost or rng.random() < 0.5
            next_id += 1
            push(effect, 0, call)
            push(moment + duration, 1, call)
        elif kind == 0:
            if data["applies"]:
                state, result = step(state, data["op"])
                data["answer"] = result.output if result.ok else result.code
        else:
            k, w = data["k"], data["w"]
            know = knowledge[k, w]
            answer = data.get("answer")
            if data["lost"] or answer == "journal_unavailable":
                outcome = Indefinite("transport:DeadlineExceeded" if data["lost"] else "journal_unavailable")
            else:
                outcome = Definite(answer)
                know["registered"] = True
                if isinstance(answer, dict):
                    if answer["outcome"] == "lease_acquired":
                        know["fence"] = answer["fenceEpoch"]
                    elif answer["outcome"] != "lease_busy":
                        know["fence"] = None
                elif answer in ("lease_rejected", "terminal_conflict"):
                    know["fence"] = None
            calls.append(Call(data["id"], f"worker-{k}-{w}", data["op"], data["invoked"], moment, outcome))
            stall = 70 * MS if rng.random() < 0.25 else rng.randrange(8 * MS)
            push(moment + stall, 2, (k, w))
    final = {ref.key_hash: documents_for(state, ref.key_hash) for ref in refs}
    return History(sorted(calls, key=lambda c: c.id), final, system="journal")


def partitioned(seed: int = 1, keys: int = 40, total: int = 1000) -> History:
    return _workers_history(random.Random(seed), keys, total // keys)


def _break_journal(history: History, keys: int, seed: int) -> History:
    """In `keys` command keys, one definite answer past the first quarter of the key becomes lease_rejected
    (or terminal_conflict where it was lease_rejected)."""
    rng = random.Random(seed)
    calls = list(history.calls)
    by_key: dict[str, list[int]] = {}
    for index, call in enumerate(calls):
        if call.outcome.definite:
            by_key.setdefault(call.op.command.key_hash, []).append(index)
    for key in rng.sample(sorted(by_key), keys):
        index = rng.choice(by_key[key][len(by_key[key]) // 4 :])
        wrong = "terminal_conflict" if calls[index].outcome.observed == "lease_rejected" else "lease_rejected"
        calls[index] = attrs.evolve(calls[index], outcome=Definite(wrong))
    return History(calls, history.final_documents, system=history.system)


def verdict_first(seed: int, runs: int) -> list[str]:
    """Rows: per 2,000-call history, the first verdict beside the full report (seconds, attempts)."""
    register_ok = register_history(seed)
    register_harsh = register_history(seed, lost_share=0.1, read_share=0.3)
    journal_ok = _workers_history(random.Random(seed), 10, 200)
    cases = [
        ("register, linearizable", register_ok, REGISTER),
        ("register, 3 keys broken", break_reads(register_ok, 3, seed), REGISTER),
        ("register, 10% lost, 30% reads, linearizable", register_harsh, REGISTER),
        ("register, 10% lost, 30% reads, 3 keys broken", break_reads(register_harsh, 3, seed), REGISTER),
        ("journal, linearizable", journal_ok, None),
        ("journal, 4 keys broken", _break_journal(journal_ok, 4, seed), None),
    ]
    rows = []
    width = max(len(name) for name, _h, _p in cases)
    for name, history, plugin in cases:
        options = {} if plugin is None else {"plugin": plugin}
        first_s, first_cpu, first = _time_cpu(lambda h=history, o=options: check(h, **o), runs)
        full_s, full_cpu, full = _time_cpu(lambda h=history, o=options: check(h, full=True, **o), runs)
        par_s, _par = _time(lambda h=history, o=options: check(h, full=True, processes=2, **o), runs)
        clients = len({c.caller for c in history.calls})
        worst = max(p.steps for p in full.partitions)
        counts = {s: sum(p.status == s for p in full.partitions) for s in ("ok", "illegal", "unknown")}
        if "broken" in name:
            goal = f"target: first verdict <= 1 s {'MET' if first_s <= 1.0 else 'MISSED'}"
        else:  # every key must be searched to say ok: the first verdict is the full report
            goal = f"target: no key exhausts its budget {'MET' if counts['unknown'] == 0 else 'MISSED'}"
        rows.append(
            f"  {name:<{width}}  {len(history.calls)} calls, {clients} clients, {len(full.partitions)} keys"
            f"\n    first verdict {first.status:<8} {first_s * 1000:8.1f} ms (CPU {first_cpu * 1000:7.1f} ms)"
            f" {first.steps:>9} attempts"
            f" ({len(first.not_checked)} keys not checked)"
            f"\n    full report   {full.status:<8} {full_s * 1000:8.1f} ms (CPU {full_cpu * 1000:7.1f} ms)"
            f" {full.steps:>9} attempts"
            f" (ok {counts['ok']}, illegal {counts['illegal']}, unknown {counts['unknown']};"
            f" worst key {worst} of {DEFAULT_BUDGET}); in 2 processes {par_s * 1000:.1f} ms"
            f"\n    {goal}"
        )
    return rows


def _time_cpu(fn, runs: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds (on a shared machine the CPU time says what the checker itself took)."""
    walls, cpus = [], []
    result = None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def _time(fn, runs: int) -> tuple[float, object]:
    samples = []
    result = None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    rows = []
    small = contested(args.seed)
    no_docs = small.with_final_documents(None)
    bad = _mutate_double_grant(no_docs)
    big = partitioned(args.seed)
    cases = [
        ("contested 24 acquires, ok", small, {}, 0.050),
        ("contested 24 acquires, ok, no final documents", no_docs, {}, 0.050),
        ("contested 24 acquires, double grant (illegal)", bad, {}, 0.050),
        ("contested, illegal, read-only commutation off", bad, {"commute_read_only": False, "budget": 200_000}, None),
        (f"partitioned {len(big.calls)} calls / 40 keys, ok", big, {}, 2.0),
        (f"partitioned {len(big.calls)} calls / 40 keys, one answer wrong", _mutate_late_answer(big), {}, 2.0),
        (
            f"partitioned {len(big.calls)} calls / 40 keys, commutation off",
            big,
            {"commute_read_only": False},
            None,
        ),
    ]
    for name, history, options, target in cases:
        seconds, verdict = _time(lambda h=history, o=options: check(h, **o), args.runs)
        rows.append((name, len(history.calls), seconds, target, verdict))
    width = max(len(r[0]) for r in rows)
    print(f"checker benchmark (median of {args.runs} runs, seed {args.seed})")
    for name, n_calls, seconds, target, verdict in rows:
        figure = f"{seconds * 1000:9.2f} ms"
        goal = f"target <= {target * 1000:.0f} ms {'MET' if seconds <= target else 'MISSED'}" if target else ""
        print(f"  {name:<{width}}  {n_calls:>5} calls  {figure}  {verdict.status:<8} {verdict.steps:>8} steps  {goal}")
    indefinite = sum(1 for c in big.calls if not c.outcome.definite)
    print(f"  (partitioned history: {indefinite} indefinite calls)")
    print(f"verdict first against the full report (median of {min(args.runs, 3)} runs, seed {args.seed})")
    for row in verdict_first(args.seed, min(args.runs, 3)):
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
