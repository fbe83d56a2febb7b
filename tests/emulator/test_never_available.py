"""An implementation that answers unavailable to everything and writes nothing is what the contract allows of
a system that never gets through: in every race scenario of every system it is reported as contention, never
accused of a contract finding, and never "caught" (issue 22, point 2). The fakes are tests.fakes.unavailable."""

from __future__ import annotations

from typing import Any

import pytest

from fencecheck.checker.known_bad_verdict import CAUGHT
from fencecheck.problems import ProblemKind
from fencecheck.systems.gateway.plugin import GATEWAY as GATEWAY_PLUGIN
from fencecheck.systems.lantern.plugin import LANTERN as LANTERN_PLUGIN
from race_tests.race_known_bad import findings_of, judge_variant
from tests.fakes import unavailable
from tests.systems.gateway import races as gateway_scenarios
from tests.systems.journal import races as scenarios
from tests.systems.lantern import races as lantern_scenarios

pytestmark = pytest.mark.emulator


def _journal_run(scenario: Any, db: Any, emulator: Any, project_id: str, tmp_path: Any) -> Any:
    return scenarios.execute(db, scenario, emulator=emulator, project_id=project_id, system=unavailable.JOURNAL,
                             counterexamples_dir=tmp_path)[0]


def _run_with(fake: Any):
    def run(scenario: Any, db: Any, emulator: Any, project_id: str, tmp_path: Any) -> Any:
        return scenario.execute(db, implementation=fake, repeat=0, artifacts_dir=None, counterexamples_dir=tmp_path,
                                emulator=emulator, project_id=project_id)[0]
    return run


CASES = [
    *[pytest.param(s, _journal_run, id=f"journal-{s.name}", marks=pytest.mark.system("journal"))
      for s in scenarios.SCENARIOS],
    *[pytest.param(s, _run_with(unavailable.LANTERN), id=f"lantern-{s.name}", marks=pytest.mark.system("lantern"))
      for s in lantern_scenarios.SCENARIOS],
    *[pytest.param(s, _run_with(unavailable.GATEWAY), id=f"gateway-{s.name}", marks=pytest.mark.system("gateway"))
      for s in gateway_scenarios.SCENARIOS],
]


@pytest.mark.parametrize(("scenario", "run"), CASES)
def test_a_never_available_implementation_is_contention_and_never_accused(
        scenario, run, emulator, project_id, firestore_db, tmp_path) -> None:
    result = run(scenario, firestore_db, emulator, project_id, tmp_path)
    contract = [finding.text for finding in findings_of(result) if finding.kind is ProblemKind.CONTRACT]
    assert contract == [], f"{scenario.name}: accused of {contract}"
    assert result.verdict == "ok" and not result.passed
    assert result.contention is not None and result.judged_width is None, result.degree


@pytest.mark.parametrize(("scenario", "fake", "reference"), [
    pytest.param(scenarios.BY_NAME["complete_versus_fail"], unavailable.JOURNAL, None, id="journal",
                 marks=pytest.mark.system("journal")),
    pytest.param(lantern_scenarios.SCENARIOS[0], unavailable.LANTERN, LANTERN_PLUGIN.reference, id="lantern",
                 marks=pytest.mark.system("lantern")),
    pytest.param(gateway_scenarios.SCENARIOS[0], unavailable.GATEWAY, GATEWAY_PLUGIN.reference, id="gateway",
                 marks=pytest.mark.system("gateway")),
])
def test_a_never_available_implementation_is_never_caught(
        scenario, fake, reference, emulator, project_id, firestore_db, tmp_path) -> None:
    if reference is None:  # the journal's scenarios take their system as `system=`: adapt to `implementation=`
        scenario = _JournalScenario(scenario)
    judged = judge_variant(scenario, fake, reference=reference or scenarios.REFERENCE, db=firestore_db,
                           emulator=emulator, project_id=project_id, counterexamples=tmp_path)
    assert judged.verdict.status != CAUGHT, judged.verdict.reason


class _JournalScenario:
    """A journal race scenario with the lantern's and gateway's `execute(db, implementation=..., ...)`."""

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario
        self.name = scenario.name

    def execute(self, db: Any, *, implementation: Any, repeat: int, artifacts_dir: Any, counterexamples_dir: Any,
                emulator: Any, project_id: str) -> Any:
        return scenarios.execute(db, self.scenario, repeat=repeat, artifacts_dir=artifacts_dir,
                                 counterexamples_dir=counterexamples_dir, emulator=emulator, project_id=project_id,
                                 system=implementation)
