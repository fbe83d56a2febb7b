"""Every registered system has parallel programs, which this suite runs (test_parallel_reference.py, and
test_parallel_known_bad.py for the variants its plug-in names), and its parallel parts are well formed.

Why a failing test per system, not a warning or a skip: a system without parallel programs would run no test
here at all and the run would stay green. A warning scrolls past in a green run and the gate's evidence counts
test outcomes (its JUnit files), not warnings; a failure turns CI red and the gate's report names the test,
with the system in its id, and says what to declare.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.parallel import Budget, ParallelSpec, budget_for, programs
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.system(name)) for name in SYSTEM_NAMES])
def test_every_registered_system_has_parallel_programs(name):
    system = plugin(name)
    if not suite_parts.has_part(system, "parallel"):
        pytest.fail(suite_parts.missing_part_message(name, "parallel"), pytrace=False)
    spec = system.parallel()
    assert isinstance(spec, ParallelSpec), f"{name}'s `parallel` returned {spec!r}, not a ParallelSpec"
    if spec.budgets is not None:
        assert "ci" in spec.budgets, f"{name}'s ParallelSpec.budgets has no 'ci' budget (any other profile's)"
        assert all(isinstance(budget, Budget) for budget in spec.budgets.values()), spec.budgets
    variants = tuple(system.suites.parallel_variants())
    unknown = sorted(set(variants) - set(system.known_bad_variants()))
    assert not unknown, f"{name}'s SuiteParts.parallel_variants names {unknown}, not variants of its catalogue"
    assert not variants or system.suites.catalogue, (
        f"{name} names parallel variants but no catalogue module (SuiteParts.catalogue) to describe them")


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.system(name)) for name in SYSTEM_NAMES])
def test_the_parallel_programs_of_every_system_can_call_each_of_its_operations(name):
    """Each operation of the system's table is a branch call of some program its strategy draws (derandomized,
    at the ci budget's sizes): an operation no branch can call is never tried against a concurrent one."""
    system = plugin(name)
    budget = budget_for("ci", plugin=system)
    called: list[object] = []

    @settings(max_examples=300, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs(system, max_branches=budget.max_branches, max_concurrent_ops=budget.max_concurrent_ops))
    def draw(program):
        called.extend(call.op for branch in program.branches for call in branch)

    draw()
    problems = suite_parts.uncalled_functions(system, called, "parallel programs")
    assert not problems, "; ".join(problems)
