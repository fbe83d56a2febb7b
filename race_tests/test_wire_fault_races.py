"""A cheap subset of the race scenarios, always under the wire's seeded fault mix (issue 15, point 3): every
racer's calls go through a fault proxy of its own (`fencecheck.wire.lanes`) whose plan the mix draws
(`fencecheck.wire.mix`: Commit answers lost with UNAVAILABLE or DEADLINE_EXCEEDED after the write applied,
BeginTransaction, BatchGetDocuments and RunQuery failed, a read stream cut after its first response, delays).
The same judgement as the plain runs: checker, structural invariants, the seed's promise, the definite share.

The mix is `--wire-faults` / $FENCECHECK_WIRE_FAULTS when given, else seed `DEFAULT_SEED`: `./run tests` and the
gate's ci profile run this subset with faults whatever the option says; the option turns the mix on for every
scenario (test_race_reference.py, every system's). These runs write no result file (the plain runs of the same
scenario own `artifacts/races/<system>_<scenario>-<repeat>.json`); their fault kinds are counted per system in
`artifacts/wire-faults/races.json`, and a failed verdict still saves its history in counterexamples/.
"""

from __future__ import annotations

from typing import Any

import pytest

from fencecheck.suites.pytest_plugin import wire_mix
from fencecheck.wire.mix import DEFAULT_SEED, FaultMix
from race_tests.conftest import SHARE_PROPERTY, assert_race_passed, counterexamples_dir, races_of, record_wire_faults

# Cheap (a few seconds each on an idle machine) and together they meet every fault kind of the mix: registration
# and commit-failure registration (rejecting lanes beside mixed ones), terminal retries racing acquires, 24
# lights whose promise is about attempts (a faulted call is excused), a read racing an extinguish (RunQuery).
# Per system, by the names its race module gives them (parametrized as `[<system>-<scenario>]`); a system without
# an entry here races under faults only when the option turns the mix on for every scenario.
SUBSETS = {
    "journal": ("identical_registrations", "commit_failure_registration", "terminal_retries_and_acquires"),
    "lantern": ("lights_24_at_one_venue", "read_racing_extinguish"),
}


def _mix(config: pytest.Config) -> FaultMix:
    return wire_mix(config) or FaultMix(DEFAULT_SEED)


def _record(record_property: Any, result: Any, run: Any) -> None:
    # The definite share is judged per run in the assertion; over repeats under its own name, so a faulted
    # run never mixes with the plain runs of its scenario.
    answered = result.definite_callers + result.contract_unavailable_callers
    record_property(SHARE_PROPERTY, [f"{result.scenario} (wire faults)", answered, result.callers])
    record_wire_faults(record_property, run)


def _subset() -> list[Any]:
    return [pytest.param(system_name, name, marks=pytest.mark.system(system_name), id=f"{system_name}-{name}")
            for system_name, names in SUBSETS.items() for name in names]


@pytest.mark.parametrize("system_name, name", _subset())
def test_race_under_wire_faults(system_name, name, race_repeat, emulator, project_id, firestore_db, implementation,
                                request, record_property):
    races = races_of(system_name)
    scenario = races.BY_NAME[name]
    result, run = scenario.execute(firestore_db, implementation=implementation, repeat=race_repeat,
                                   artifacts_dir=None, counterexamples_dir=counterexamples_dir(request.config),
                                   emulator=emulator, project_id=project_id, wire_mix=_mix(request.config))
    _record(record_property, result, run)
    assert run.wire_seed is not None and run.wire_faults, "the fault mix faulted nothing"
    assert_race_passed(races, scenario, race_repeat, result)
