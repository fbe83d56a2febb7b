"""The lantern seed's concurrent scenarios (race_tests/lantern_scenarios.py) through the contest runner
(fencecheck/contest.py): each judged by the linearizability checker against the final stored documents, by
INV-1..INV-5 on those documents, and by the scenario's own promise; a run (or a scenario over its repeats)
with too few definite callers fails for contention (`fencecheck.definite`, conftest.py).

The implementation is the lantern reference, or the lantern implementation $FENCECHECK_SYSTEM names. Results
of reference runs are saved as artifacts/races/lantern_<scenario>-<repeat>.json; a failed verdict saves the
history as counterexamples/race-lantern_<scenario>-<shortid>.json. Wall time is measured and saved, never
asserted here (the 24-light scenario's promise is about attempts, not seconds).
"""

from __future__ import annotations

from typing import Any

import pytest

from fencecheck.plugins.lantern import LANTERN
from fencecheck.pytest_plugin import wire_mix
from fencecheck.systems import reference_run
from race_tests.conftest import (
    artifacts_dir,
    assert_contest_passed,
    counterexamples_dir,
    record_share,
    record_wire_faults,
)
from race_tests.lantern_scenarios import SCENARIOS, LanternScenario

pytestmark = pytest.mark.system("lantern")  # deselected by --only-system <another>


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_lantern_race(
    scenario: LanternScenario,
    race_repeat: int,
    emulator: Any,
    project_id: str,
    firestore_db: Any,
    lantern_system: Any,
    request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    result, _run = scenario.execute(
        firestore_db,
        implementation=lantern_system,
        repeat=race_repeat,
        artifacts_dir=artifacts_dir(request.config) if reference_run(system=LANTERN.name) else None,
        counterexamples_dir=counterexamples_dir(request.config),
        emulator=emulator,
        project_id=project_id,
        wire_mix=wire_mix(request.config),
    )
    record_share(record_property, result)
    record_wire_faults(record_property, _run)
    for key in ("race_seconds", "total_seconds", "checker_ms", "checker_steps", "attempts", "aborts", "outcomes"):
        record_property(key, str(getattr(result, key)))
    assert_lantern_race_passed(scenario, race_repeat, result)


def assert_lantern_race_passed(scenario: LanternScenario, race_repeat: int, result: Any) -> None:
    assert_contest_passed(scenario, race_repeat, result, invariants="invariants", promise="the seed's promise")
