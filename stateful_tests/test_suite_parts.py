"""Every registered system has a lockstep machine, and this suite collects it (conftest.py, from the plug-in's
`SuiteParts.machine`).

Why a failing test per system, not a warning or a skip: a system without a machine would otherwise run no
stateful test at all and record no transition coverage, and the run would stay green. A warning scrolls past in a
green run and the gate's evidence counts test outcomes (its JUnit files), not warnings; a failure turns CI red and
the gate's report names the test, with the system in its id, and says what to declare.
"""

from __future__ import annotations

import pytest

from fencecheck import suite_parts
from fencecheck.plugins import SYSTEM_NAMES, plugin
from stateful_tests.conftest import HERE, machine_files
from stateful_tests.machine_runner import BoundToEmulator


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.system(name)) for name in SYSTEM_NAMES])
def test_every_registered_system_has_a_machine_this_suite_collects(name):
    system = plugin(name)
    if not suite_parts.has_part(system, "machine"):
        pytest.fail(suite_parts.missing_part_message(name, "machine"), pytrace=False)
    where = system.suites.machine
    path = suite_parts.module_file(where)
    assert path is not None, f"{name}'s machine {where!r}: no such module; fix its SuiteParts.machine"
    assert path in machine_files(), (
        f"{name}'s machine module {path} is not collected: the stateful suite collects machine modules of {HERE} "
        f"only; move it there")
    test_case = suite_parts.load(system, "machine")
    assert isinstance(test_case, type) and issubclass(test_case, BoundToEmulator), (
        f"{where} is not a machine's TestCase: expected `class TestX(BoundToEmulator, XMachine.TestCase)` "
        "(stateful_tests/machine_runner.py)")
    assert test_case.__name__.startswith("Test"), f"{where}: pytest collects only classes named Test*"
    assert test_case.machine.plugin is system, (
        f"{where} drives {test_case.machine.plugin.name}'s machine, not {name}'s: fix {name}'s SuiteParts.machine")
