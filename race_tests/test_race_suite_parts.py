"""Every registered system has race scenarios (the module its plug-in's `SuiteParts.races` names), and they are
well formed: a non-empty `SCENARIOS`, `BY_NAME` by their names, each of this system.

Why a failing test per system, not a warning or a skip: a system without race scenarios would run no race at all
and the run would stay green. A warning scrolls past in a green run and the gate's evidence counts test outcomes
(its JUnit files), not warnings; a failure turns CI red and the gate's report names the test, with the system in
its id, and says what to declare.
"""

from __future__ import annotations

import pytest

from fencecheck import suite_parts
from fencecheck.plugins import SYSTEM_NAMES, plugin


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
