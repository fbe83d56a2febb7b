"""Every registered system has race scenarios (the module its plug-in's `SuiteParts.races` names), and they are
well formed, by the interface race_tests/test_race_reference.py runs (docs/suites.md, "Race scenarios"): a non-empty
`SCENARIOS`, `BY_NAME` by their names, the texts `INVARIANTS` and `PROMISE` its failure messages name, and each
scenario with a `name`, a `promise_text` and an `execute`.

Why a failing test per system, not a warning or a skip: a system without race scenarios would run no race at all
and the run would stay green. A warning scrolls past in a green run and the gate's evidence counts test outcomes
(its JUnit files), not warnings; a failure turns CI red and the gate's report names the test, with the system in
its id, and says what to declare.
"""

from __future__ import annotations

import pytest

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.system(name)) for name in SYSTEM_NAMES])
def test_every_registered_system_has_race_scenarios(name):
    system = plugin(name)
    if not suite_parts.has_part(system, "races"):
        pytest.fail(suite_parts.missing_part_message(name, "races"), pytrace=False)
    races = suite_parts.load(system, "races")
    scenarios = tuple(getattr(races, "SCENARIOS", ()))
    assert scenarios, f"{races.__name__} defines no SCENARIOS: {name} would race nothing"
    assert getattr(races, "BY_NAME", None) == {s.name: s for s in scenarios}, (
        f"{races.__name__}.BY_NAME must name every scenario of SCENARIOS by its name")
    for constant in ("INVARIANTS", "PROMISE"):  # named in every failure message of its races
        text = getattr(races, constant, None)
        assert isinstance(text, str) and text, f"{races.__name__} defines no {constant} text (docs/suites.md)"
    for scenario in scenarios:
        assert callable(getattr(scenario, "execute", None)), (
            f"{races.__name__}: scenario {scenario.name} has no execute(db, *, implementation, repeat, "
            f"artifacts_dir, counterexamples_dir, emulator, project_id, wire_mix)")
        assert isinstance(getattr(scenario, "promise_text", None), str), (
            f"{races.__name__}: scenario {scenario.name} has no promise_text")


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.system(name)) for name in SYSTEM_NAMES])
def test_the_races_of_every_system_call_each_of_its_operations(name):
    """Each operation of the system's table is some racer's call (a scenario's `contest()`, built without
    Firestore): an operation no race calls is never tried against a concurrent one."""
    system = plugin(name)
    races = suite_parts.load(system, "races")
    contests = [scenario.contest() for scenario in races.SCENARIOS]
    raced = [op for contest in contests for racer in contest.racers for op in (racer.op, racer.first_op)
             if op is not None]
    problems = suite_parts.uncalled_functions(system, raced, "race scenarios")
    assert not problems, "; ".join(problems)
