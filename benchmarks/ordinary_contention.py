"""Measure what the emulator's lock timeout does to a journal that retries an abort at once (issue 22).

Races N callers (default 24 and 8) of one journal race scenario (default `distinct_holder_first_acquire`,
tests/systems/journal/races.py: one registered command, N distinct holders take its first lease) through
`fencecheck.runners.contest.run_contest`, as the race suite does (whole-call retries included), against two systems:

- the reference (reference/journal/runner.py: wall-clock retry rounds, read-only looks);
- `tests.fakes.ordinary_journal` (the same journal on the SDK's own `transactional`: an abort retried at once,
  5 attempts).

Each (system, N) runs `--repeat` times (default 3), the two systems alternating, each run in a fresh project
with fresh ids. Per run it prints: callers whose FIRST call was definite and callers definite after the
harness's whole-call retries, of all callers; the race's seconds (first invocation to last answer); transaction
attempts, aborts and looks per caller (max/median, summed over the caller's calls); the emulator's lock
timeouts during the run (its log, when this process started it); the documents stored after the setup and at
the end (whether any commit landed); the checker's verdict; and how the race suite's definite-share rule judges
the run (`fencecheck.checker.definite`: its contention message, and the unavailable answers it excused). It asserts
nothing: the figures are docs/contention.md's. Uses $FIRESTORE_EMULATOR_HOST when set (lock timeouts then
unknown), otherwise starts (and stops) its own emulator.

    .venv/bin/python benchmarks/ordinary_contention.py [--widths 24 8] [--repeat 3] [--scenario NAME]
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fencecheck.emulator.lifecycle import (  # noqa: E402
    close_client,
    emulator_from_environment,
    new_run_token,
    project_id_for,
)
from fencecheck.runners.contest import ContestRun, Ids, RacerRecord, run_contest  # noqa: E402
from fencecheck.runners.contest_results import contest_result  # noqa: E402
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE  # noqa: E402
from tests.systems.journal.races import BY_NAME  # noqa: E402

ORDINARY_SPEC = "tests.fakes.ordinary_journal"
SYSTEMS = {"reference": REFERENCE, "ordinary": JOURNAL.resolve(ORDINARY_SPEC)}


def contest_of(scenario_name: str, width: int):
    """The scenario's contest with its first `width` callers (same setup, same command key)."""
    plan = BY_NAME[scenario_name].build(Ids(secrets.randbits(64)))
    if width > plan.width:
        raise SystemExit(f"{scenario_name} has {plan.width} callers; --widths must not exceed it")
    return attrs.evolve(plan, callers=plan.callers[:width]).contest()


def per_caller(records: tuple[RacerRecord, ...], field: str) -> list[int]:
    return [sum(getattr(call, field) for call in record.calls) for record in records]


def spread(values: list[int]) -> str:
    return f"{max(values)}/{statistics.median(values):g}"


def stored_counts(run: ContestRun) -> str:
    """Documents stored after the setup and at the end: whether any racer's commit landed at all."""
    state = run.initial_state
    setup = sum(len(JOURNAL.documents_of(state, key)) for key in JOURNAL.partitions_of_state(state))
    return f"{setup}->{len(run.documents)}"


def describe(system: str, width: int, repeat: int, run: ContestRun, lock_timeouts: int | None) -> str:
    records = run.racers
    first_definite = sum(1 for record in records if record.calls and record.calls[0].outcome.definite)
    definite = sum(1 for record in records if record.definite)
    return (
        f"{system:9} N={width:<2} r{repeat}  first call definite {first_definite:2}/{width}, after whole-call "
        f"retries {definite:2}/{width}; race {run.race_seconds:6.2f} s; per caller attempts "
        f"{spread(per_caller(records, 'transaction_attempts')):>6}, aborts {spread(per_caller(records, 'aborts')):>6},"
        f" looks {spread(per_caller(records, 'looks')):>6} (max/median); lock timeouts "
        f"{'unknown' if lock_timeouts is None else lock_timeouts}; documents {stored_counts(run)}; "
        f"verdict {run.verdict.status}; {share(run)}"
    )


def share(run: ContestRun) -> str:
    """How the race suite's definite-share rule (fencecheck.checker.definite) judges the run: its contention message,
    or that the share holds; with the unavailable answers it excused as the contract's own."""
    result = contest_result(run)
    judged = "definite share holds" if result.contention is None else result.contention
    return f"{judged} [{result.contract_unavailable_callers} unavailable excused]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[24, 8])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenario", default="distinct_holder_first_acquire", choices=sorted(BY_NAME))
    args = parser.parse_args(argv)
    token, counter = new_run_token(), 0
    started = time.monotonic()
    print(f"{datetime.now(UTC).isoformat(timespec='seconds')}: {args.scenario}, widths {args.widths}, "
          f"{args.repeat} repeats, reference vs {ORDINARY_SPEC}", flush=True)
    with emulator_from_environment(log_dir=ROOT / "artifacts" / "emulator") as emulator:
        for width in args.widths:
            for repeat in range(args.repeat):
                for name, system in SYSTEMS.items():
                    counter += 1
                    project = project_id_for(token, "ordinary", counter)
                    db = emulator.client(project)
                    locks_before = emulator.lock_timeout_count()
                    try:
                        run = run_contest(db, contest_of(args.scenario, width), plugin=JOURNAL, implementation=system)
                    finally:
                        close_client(db)
                        emulator.reset(project)
                    locks_after = emulator.lock_timeout_count()
                    locks = None if locks_before is None or locks_after is None else locks_after - locks_before
                    print(describe(name, width, repeat, run, locks), flush=True)
    print(f"elapsed {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
