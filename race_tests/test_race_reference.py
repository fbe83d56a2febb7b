"""Every registered system's race scenarios (the module its plug-in's `SuiteParts.races` names: the journal's
tests/systems/<system>/races.py) through the
contest runner (fencecheck/runners/contest.py), parametrized as `[<system>-<scenario>]` (and `-r<repeat>`), each marked
with its system (--only-system deselects the others). Each run is judged by the linearizability checker against
the final stored documents, by the system's invariants (its race module's `INVARIANTS`: the plug-in's structural
checks, on the stored documents and across the race) and by the scenario's own promise (`PROMISE`,
`scenario.promise_text`); a run (or a scenario over its repeats) with too few definite callers fails for
contention (`fencecheck.checker.definite`, conftest.py). A caller still unavailable after its whole-call retries is
judged indefinite by the checker.

The implementation is the system's reference, or the implementation of that system $FENCECHECK_SYSTEM names
(conftest.py `implementation`). Results of reference runs are saved as artifacts/races/<system>_<scenario>-
<repeat>.json; a failed verdict saves the history as counterexamples/race-<system>_<scenario>-<shortid>.json
(`fencecheck replay` / `check` take it). Under --wire-faults every racer's calls go through a faulted wire lane.
Wall time is measured and saved, never asserted.
"""

from __future__ import annotations

from typing import Any

import pytest

from fencecheck.plugin.specs import reference_run
from fencecheck.suites.pytest_plugin import wire_mix
from race_tests.conftest import (
    artifacts_dir,
    assert_race_passed,
    counterexamples_dir,
    race_systems,
    races_of,
    record_share,
    record_wire_faults,
)


def _scenarios() -> list[Any]:
    return [pytest.param(name, scenario, marks=pytest.mark.system(name), id=f"{name}-{scenario.name}")
            for name in race_systems() for scenario in races_of(name).SCENARIOS]


@pytest.mark.parametrize("system_name, scenario", _scenarios())
def test_race(
    system_name: str,
    scenario: Any,
    race_repeat: int,
    emulator: Any,
    project_id: str,
    firestore_db: Any,
    implementation: Any,
    request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    result, run = scenario.execute(
        firestore_db,
        implementation=implementation,
        repeat=race_repeat,
        artifacts_dir=artifacts_dir(request.config) if reference_run(system=system_name) else None,
        counterexamples_dir=counterexamples_dir(request.config),
        emulator=emulator,
        project_id=project_id,
        wire_mix=wire_mix(request.config),
    )
    record_share(record_property, result)
    record_wire_faults(record_property, run)
    for key in ("race_seconds", "total_seconds", "checker_ms", "checker_steps", "attempts", "aborts", "outcomes"):
        record_property(key, str(getattr(result, key)))
    assert_race_passed(races_of(system_name), scenario, race_repeat, result)
