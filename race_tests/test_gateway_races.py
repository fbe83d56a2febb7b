"""The gateway journal's race scenarios (race_tests/gateway_scenarios.py) through the contest runner
(fencecheck/contest.py): each judged by the linearizability checker against the final stored documents, by
G-INV-1..12 on those documents and G-INV-2/9/10 across the race (the plug-in's `contest_problems`,
fencecheck/plugins/gateway_structure.py), and by the scenario's own promise; a run (or a scenario over its
repeats) with too few definite callers fails for contention (`fencecheck.definite`, conftest.py).

The implementation is the gateway reference, or the gateway implementation $FENCECHECK_SYSTEM names. Results
of reference runs are saved as artifacts/races/gateway_<scenario>-<repeat>.json; a failed verdict saves the
history as counterexamples/race-gateway_<scenario>-<shortid>.json (`fencecheck replay` / `check` take it).
Wall time is measured and saved, never asserted.
"""

from __future__ import annotations

from typing import Any

import pytest

from fencecheck.plugins.gateway import GATEWAY
from fencecheck.systems import reference_run
from race_tests.conftest import artifacts_dir, assert_contest_passed, counterexamples_dir, record_share
from race_tests.gateway_scenarios import SCENARIOS, GatewayScenario

pytestmark = pytest.mark.system("gateway")  # deselected by --only-system <another>


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_gateway_race(
    scenario: GatewayScenario,
    race_repeat: int,
    emulator: Any,
    project_id: str,
    firestore_db: Any,
    gateway_system: Any,
    request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    result, _run = scenario.execute(
        firestore_db,
        implementation=gateway_system,
        repeat=race_repeat,
        artifacts_dir=artifacts_dir(request.config) if reference_run(system=GATEWAY.name) else None,
        counterexamples_dir=counterexamples_dir(request.config),
        emulator=emulator,
        project_id=project_id,
    )
    record_share(record_property, result)
    for key in ("race_seconds", "total_seconds", "checker_ms", "checker_steps", "attempts", "aborts", "outcomes"):
        record_property(key, str(getattr(result, key)))
    assert_contest_passed(scenario, race_repeat, result, invariants="G-INV-1..12", promise="the contract's promise")
