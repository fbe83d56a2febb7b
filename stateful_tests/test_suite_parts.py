"""Every registered system has a lockstep machine, and this suite collects it (conftest.py, from the plug-in's
`SuiteParts.machine`: a module of this directory, or of a system from outside, e.g. examples/cas_register/machine.py).

Why a failing test per system, not a warning or a skip: a system without a machine would otherwise run no
stateful test at all and record no transition coverage, and the run would stay green. A warning scrolls past in a
green run and the gate's evidence counts test outcomes (its JUnit files), not warnings; a failure turns CI red and
the gate's report names the test, with the system in its id, and says what to declare.
"""

from __future__ import annotations

import fnmatch

import pytest

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin
from stateful_tests.conftest import machine_files
from stateful_tests.machine_runner import BoundToEmulator


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.system(name)) for name in SYSTEM_NAMES])
def test_every_registered_system_has_a_machine_this_suite_collects(name):
    system = plugin(name)
    if not suite_parts.has_part(system, "machine"):
        pytest.fail(suite_parts.missing_part_message(name, "machine"), pytrace=False)
    where = system.suites.machine
    path = suite_parts.module_file(where)
    assert path is not None, f"{name}'s machine {where!r}: no such module; fix its SuiteParts.machine"
    assert path in machine_files(), f"{name}'s machine module {path} is not collected (conftest.py machine_files)"
    # A module named test_*.py would also be collected as an ordinary test module wherever a test path holds it:
    # its machine would run twice, or (outside this directory) under a node id the gate does not expect.
    assert not fnmatch.fnmatch(path.name, "test_*.py"), (
        f"{name}'s machine module {path.name} matches test_*.py: rename it (e.g. {name}_machine.py)")
    test_case = suite_parts.load(system, "machine")
    assert isinstance(test_case, type) and issubclass(test_case, BoundToEmulator), (
        f"{where} is not a machine's TestCase: expected `class TestX(BoundToEmulator, XMachine.TestCase)` "
        "(stateful_tests/machine_runner.py)")
    assert test_case.__name__.startswith("Test"), f"{where}: pytest collects only classes named Test*"
    assert test_case.machine.plugin is system, (
        f"{where} drives {test_case.machine.plugin.name}'s machine, not {name}'s: fix {name}'s SuiteParts.machine")
    for module in system.suites.machine_tests:  # further tests on the machine, collected with it
        path = suite_parts.module_file(module)
        assert path is not None, f"{name}'s machine test module {module!r}: no such module; fix its SuiteParts"
        assert path in machine_files() and not fnmatch.fnmatch(path.name, "test_*.py"), (
            f"{name}'s machine test module {path.name}: expected a module this suite collects, not named test_*.py")
