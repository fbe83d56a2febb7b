"""Which other suite catches the concurrent known-bad variants (known_bad/journal/concurrent_variants.py)?

For each variant:

1. the fixed race scenarios (tests/systems/journal/races.py, 24-way), each `--races-repeat` times, run against the
   variant with `tests.systems.journal.races.execute(..., system=...)` and judged as the race suite judges them
   (checker verdict, structural invariants, the seed's promise): the scenarios that fail on it;
2. the sequential lockstep state machine (tests/systems/journal/machine.py) under the `ci` profile (or
   `--profile`), as stateful_tests/test_known_bad.py runs it: caught (a lockstep mismatch) or survived.
   A concurrent variant must survive it: it behaves like the reference when calls run one at a time.

Prints a table and writes `artifacts/bench-concurrent-variants.json` (`--json`). Uses
$FIRESTORE_EMULATOR_HOST when set, otherwise starts (and stops) its own emulator. Measured figures only:
nothing here is asserted (the parallel suite is what must catch these variants).

    .venv/bin/python benchmarks/concurrent_variants.py [--races-repeat 2] [--variant NAME] [--skip-stateful]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import settings  # noqa: E402

from fencecheck.emulator.lifecycle import (  # noqa: E402
    close_client,
    emulator_from_environment,
    new_run_token,
    project_id_for,
)
from fencecheck.runners.contest_results import write_json  # noqa: E402
from fencecheck.runners.lockstep import LockstepMismatch  # noqa: E402
from fencecheck.suites import hypothesis_profiles  # noqa: E402
from known_bad.journal import CONCURRENT_VARIANTS, variant  # noqa: E402
from tests.systems.journal.races import SCENARIOS, execute  # noqa: E402


def races(emulator, api, repeat: int, token: str, counter: list[int]) -> dict[str, list[str]]:
    """scenario -> the failing runs' reasons (empty list: every run passed)."""
    found: dict[str, list[str]] = {}
    for scenario in SCENARIOS:
        found[scenario.name] = []
        for r in range(repeat):
            counter[0] += 1
            project = project_id_for(token, "xcheck", counter[0])
            db = emulator.client(project)
            try:
                result, run = execute(db, scenario, repeat=r, system=api, emulator=emulator, project_id=project)
                verdict = run.verdict
            finally:
                close_client(db)
                emulator.reset(project)
            if not result.passed:
                reason = f"verdict {verdict.status}"
                if result.problems:
                    reason += f"; {len(result.problems)} structural problems ({result.problems[0].text[:80]})"
                if result.promise_problems:
                    reason += f"; promise: {result.promise_problems[0].text[:80]}"
                found[scenario.name].append(reason)
            print(f"  [{scenario.name} r{r}] {'FAILS' if not result.passed else 'passes'}"
                  f"{': ' + found[scenario.name][-1] if not result.passed else ''} ({result.race_seconds:.1f} s)",
                  flush=True)
    return found


def stateful(emulator, v, api, profile: str, token: str, counter: list[int]) -> dict:
    from stateful_tests.machine_runner import run_machine
    from stateful_tests.test_known_bad import machine_for

    counter[0] += 1
    project = project_id_for(token, "xcheck", counter[0])
    db = emulator.client(project)
    machine = machine_for(v, api)
    started = time.monotonic()
    try:
        run_machine(machine, settings=settings(settings.get_profile(profile), database=None, deadline=None),
                    emulator=emulator, project_id=project, db=db)
    except LockstepMismatch as mismatch:
        status, detail = "caught", str(mismatch).splitlines()[0]
    except AssertionError as error:  # a full-coverage profile's unexercised transitions: not a detection
        status, detail = "survived", str(error).splitlines()[0]
    else:
        status, detail = "survived", ""
    finally:
        close_client(db)
        emulator.reset(project)
    return {"status": status, "examples": machine.examples, "seconds": round(time.monotonic() - started, 1),
            "detail": detail}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races-repeat", type=int, default=1, help="runs per race scenario (default 1)")
    parser.add_argument("--variant", action="append", choices=[v.name for v in CONCURRENT_VARIANTS])
    parser.add_argument("--skip-stateful", action="store_true")
    parser.add_argument("--skip-races", action="store_true")
    parser.add_argument("--profile", default="ci", help="Hypothesis profile of the stateful machine (default ci)")
    parser.add_argument("--json", default=str(ROOT / "artifacts" / "bench-concurrent-variants.json"))
    args = parser.parse_args(argv)
    hypothesis_profiles.register_profiles()
    chosen = [v for v in CONCURRENT_VARIANTS if not args.variant or v.name in args.variant]
    token, counter, out = new_run_token(), [0], {}
    started = time.monotonic()
    with emulator_from_environment(log_dir=ROOT / "artifacts" / "emulator") as emulator:
        for v in chosen:
            api = variant(v.name).build()
            print(f"{v.name}:", flush=True)
            entry: dict = {"rule": v.rule}
            if not args.skip_races:
                entry["races"] = races(emulator, api, args.races_repeat, token, counter)
            if not args.skip_stateful:
                entry["stateful"] = stateful(emulator, v, api, args.profile, token, counter)
                print(f"  [stateful {args.profile}] {entry['stateful']}", flush=True)
            out[v.name] = entry
    print()
    for name, entry in out.items():
        caught = [s for s, reasons in entry.get("races", {}).items() if reasons]
        runs = args.races_repeat
        races_text = ", ".join(f"{s} ({len(entry['races'][s])}/{runs})" for s in caught) or "none"
        stateful_text = entry.get("stateful", {}).get("status", "not run")
        print(f"{name}: fixed race scenarios that catch it: {races_text}; sequential stateful machine: "
              f"{stateful_text}")
    write_json(Path(args.json), {
        "format": "fencecheck.concurrent-variants-crosscheck/1",
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "racesRepeat": args.races_repeat,
        "statefulProfile": args.profile,
        "elapsedSeconds": round(time.monotonic() - started, 1),
        "variants": out,
    })
    print(f"written {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
