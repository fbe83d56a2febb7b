"""Which degree each race scenario can be judged at, per implementation (issue 22): every scenario R times
against the reference and against an ordinary implementation (tests/fakes: the reference with its runner
replaced by the SDK's own `transactional`, an abort retried at once), on one emulator.

Per scenario and implementation it prints: runs judged at the scenario's own degree, the degree judged for
each run (a contended run is raced again with its first 12, 8, 4 callers, `fencecheck.runners.contest_results`),
the definite share at the scenario's degree over all runs, the race wall time's median and maximum, and the
runs that accused the implementation of a contract finding (never expected: both are correct). Prints only;
asserts nothing. Uses $FIRESTORE_EMULATOR_HOST when set, otherwise starts (and stops) its own emulator.

    .venv/bin/python benchmarks/degree_judged.py [--repeat 10] [--system journal lantern]
        [--implementation reference ordinary] [--scenario NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fencecheck.emulator.lifecycle import (  # noqa: E402
    close_client,
    emulator_from_environment,
    new_run_token,
    project_id_for,
)
from fencecheck.problems import ProblemKind  # noqa: E402
from fencecheck.systems.journal.plugin import REFERENCE as JOURNAL_REFERENCE  # noqa: E402
from fencecheck.systems.journal.plugin import ReferenceAPI  # noqa: E402
from fencecheck.systems.lantern.plugin import LANTERN  # noqa: E402
from race_tests.race_known_bad import findings_of  # noqa: E402
from tests.systems.journal import races as scenarios  # noqa: E402
from tests.systems.lantern import races as lantern_scenarios  # noqa: E402

COUNTEREXAMPLES = ROOT / "counterexamples" / "degree-bench"


def implementations(system: str, which: str) -> Any:
    if system == "journal":
        return JOURNAL_REFERENCE if which == "reference" else ReferenceAPI.from_module("tests.fakes.ordinary_journal")
    if which == "reference":
        return LANTERN.reference
    from tests.fakes.ordinary_lantern import ORDINARY_LANTERN
    return ORDINARY_LANTERN


def run_once(system: str, scenario: Any, implementation: Any, db: Any, emulator: Any, project: str,
             repeat: int) -> Any:
    if system == "journal":
        return scenarios.execute(db, scenario, repeat=repeat, emulator=emulator, project_id=project,
                                 system=implementation, counterexamples_dir=COUNTEREXAMPLES)[0]
    return scenario.execute(db, implementation=implementation, repeat=repeat, artifacts_dir=None,
                            counterexamples_dir=COUNTEREXAMPLES, emulator=emulator, project_id=project)[0]


def summary_line(name: str, which: str, results: list[Any]) -> str:
    degrees = Counter(r.width if r.contention is None else (r.judged_width or "none") for r in results)
    callers = sum(r.callers for r in results)
    answered = sum(r.definite_callers + r.contract_unavailable_callers for r in results)
    walls = [r.race_seconds for r in results]
    accused = sum(1 for r in results if any(f.kind is ProblemKind.CONTRACT for f in findings_of(r)))
    judged = sum(1 for r in results if r.contention is None)
    shown = ", ".join(f"{degree}: {count}" for degree, count in sorted(degrees.items(), key=lambda kv: str(kv[0])))
    return (f"{name:38} {which:9} judged at degree {judged}/{len(results)}  degrees {{{shown}}}  "
            f"definite {answered}/{callers} ({100 * answered / callers:.1f}%)  "
            f"wall median {statistics.median(walls):.1f} s max {max(walls):.1f} s  accused {accused}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--system", nargs="+", choices=("journal", "lantern"), default=["journal", "lantern"])
    parser.add_argument("--implementation", nargs="+", choices=("reference", "ordinary"),
                        default=["reference", "ordinary"])
    parser.add_argument("--scenario", nargs="*", help="scenario names (default: every scenario of the system)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    chosen = {"journal": scenarios.SCENARIOS, "lantern": lantern_scenarios.SCENARIOS}
    token, counter = new_run_token(), 0
    started = time.monotonic()
    with emulator_from_environment() as emulator:
        for system in args.system:
            for scenario in chosen[system]:
                if args.scenario and scenario.name not in args.scenario:
                    continue
                for which in args.implementation:
                    implementation = implementations(system, which)
                    results = []
                    for repeat in range(args.repeat):
                        counter += 1
                        project = project_id_for(token, "degree", counter)
                        db = emulator.client(project)
                        try:
                            results.append(run_once(system, scenario, implementation, db, emulator, project,
                                                    repeat))
                            print(f"  {summary_line(f'{system}_{scenario.name} r{repeat}', which, results[-1:])}",
                                  flush=True)  # each run as it ends: a long benchmark cut short keeps its runs
                        finally:
                            close_client(db)
                            emulator.reset(project)
                    print(summary_line(f"{system}_{scenario.name}", which, results), flush=True)
        print(f"emulator lock timeouts: {emulator.lock_timeout_count()}; "
              f"{time.monotonic() - started:.0f} s in all", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
