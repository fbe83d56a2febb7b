"""Every concurrent scenario of seeds 000 and 001, judged by the linearizability checker, the structural
invariants and the seed's own promise. See race_tests/scenarios.py for the scenarios; they run through
fencecheck/contest.py (the runner every system's races take) with the journal plug-in's structural
invariants (fencecheck/plugins/journal_structure.py).

A caller still `journal_unavailable` after its two whole-call retries is judged indefinite by the checker;
a run in which fewer than 90% of the racing callers got a definite answer fails for contention, and so does
a scenario below 99% over its repeats (`fencecheck.definite`; the session check is in conftest.py).
Wall time is measured and saved, never asserted here.
"""

from __future__ import annotations

from typing import Any

import pytest

from fencecheck.errors import CheckFailed
from fencecheck.pytest_plugin import wire_mix
from fencecheck.systems import reference_run
from race_tests.conftest import artifacts_dir, counterexamples_dir, record_share, record_wire_faults
from race_tests.scenarios import SCENARIOS, Scenario, execute

pytestmark = pytest.mark.system("journal")  # deselected by --only-system <another>


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_race(
    scenario: Scenario,
    race_repeat: int,
    emulator: Any,
    project_id: str,
    firestore_db: Any,
    system: Any,
    request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    result, run = execute(
        firestore_db,
        scenario,
        repeat=race_repeat,
        artifacts_dir=artifacts_dir(request.config) if reference_run(system="journal") else None,
        counterexamples_dir=counterexamples_dir(request.config),
        emulator=emulator,
        project_id=project_id,
        system=system,
        wire_mix=wire_mix(request.config),
    )
    record_share(record_property, result)
    record_wire_faults(record_property, run)
    assert_race_passed(scenario, race_repeat, result, run)


def assert_race_passed(scenario: Scenario, race_repeat: int, result: Any, run: Any) -> None:
    verdict = run.verdict
    where = f"history saved to {result.counterexample}" if result.counterexample else "no history saved"
    failures = []
    if verdict.status == "unknown":  # an undecided history is not a pass
        failures.append(f"the checker could not decide within its budget ({verdict.explain()}); {where}")
    elif verdict.status != "ok":
        failures.append(f"the history is not linearizable ({where})\n{verdict.explain()}")
    if result.problems:
        failures.append("structural invariants broken:\n" + "\n".join(map(str, result.problems)))
    if result.promise_problems:
        failures.append(f"the seed's promise ({scenario.promise_text}) is broken:\n"
                        + "\n".join(map(str, result.promise_problems)))
    if result.contention is not None:  # last: a contract finding above outweighs it
        failures.append(f"{result.contention}\n{result.degree}")
    if failures:  # each finding's kind travels with the failure (fencecheck.pytest_plugin records it for the gate)
        raise CheckFailed(f"{scenario.name} (repeat {race_repeat}): " + "\n\n".join(failures), result.findings())
