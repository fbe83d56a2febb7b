"""Every concurrent scenario of seeds 000 and 001, judged by the linearizability checker, the structural
invariants and the seed's own promise. See race_tests/scenarios.py for the scenarios and
fencecheck/race.py for the harness.

A caller still `journal_unavailable` after its two whole-call retries does not fail a test: the checker
judges it as indefinite and the benchmark (benchmarks/races.py) reports the share of definite callers.
Wall time is measured and saved, never asserted here.
"""

from __future__ import annotations

from typing import Any

import pytest

from fencecheck.race import execute
from fencecheck.systems import reference_run
from race_tests.conftest import artifacts_dir, counterexamples_dir
from race_tests.scenarios import SCENARIOS, Scenario


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_race(
    scenario: Scenario,
    race_repeat: int,
    emulator: Any,
    project_id: str,
    firestore_db: Any,
    system: Any,
    request: pytest.FixtureRequest,
) -> None:
    result, _run, verdict = execute(
        firestore_db,
        scenario,
        repeat=race_repeat,
        artifacts_dir=artifacts_dir(request.config) if reference_run() else None,
        counterexamples_dir=counterexamples_dir(request.config),
        emulator=emulator,
        project_id=project_id,
        system=system,
    )
    where = f"history saved to {result.counterexample}" if result.counterexample else "no history saved"
    if verdict.status == "unknown":
        pytest.fail(
            f"{scenario.name}: the checker could not decide within its budget ({verdict.explain()}); "
            f"an undecided history is not a pass. {where}",
            pytrace=False,
        )
    assert verdict.status == "ok", f"{scenario.name}: the history is not linearizable ({where})\n{verdict.explain()}"
    assert not result.problems, f"{scenario.name}: structural invariants broken:\n" + "\n".join(result.problems)
    assert not result.promise_problems, (
        f"{scenario.name}: the seed's promise ({scenario.promise_text}) is broken:\n"
        + "\n".join(result.promise_problems)
    )
