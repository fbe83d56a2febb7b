"""A few parallel programs of each system, always under the wire's seeded fault mix (issue 15, point 3):
every branch call goes through its branch's fault proxy (`fencecheck.wire.lanes`) under a plan the mix draws
per program and repetition (`fencecheck.wire.mix`). The property is the reference runs' (every repetition
linearizable, the structural checks), with an allowance for contention (`assert_judged`); the budget is small,
for CI's sake.

The mix is `--wire-faults` / $FENCECHECK_WIRE_FAULTS when given, else seed `DEFAULT_SEED`, so `./run tests` and
the gate's ci profile run these with faults whatever the option says; the option turns the mix on for the
reference runs too (test_parallel_reference.py, every system's). Fault kinds go to
artifacts/wire-faults/parallel-<name>.json; no evidence record of the reference is written from here.
"""

from __future__ import annotations

import warnings

import pytest

from fencecheck.errors import CheckFailed
from fencecheck.parallel import Budget, parallel_settings, run_property
from fencecheck.plugins import plugin
from fencecheck.problems import contention
from fencecheck.pytest_plugin import wire_mix
from fencecheck.systems import configured_implementation
from fencecheck.wire.mix import DEFAULT_SEED, FaultMix
from parallel_tests.conftest import counterexamples_dir
from parallel_tests.test_parallel_reference import assert_failed_cases, wire_note, write_wire_faults

JOURNAL_BUDGET = Budget(examples=3, known_bad_examples=0, shrink_seconds=10, minimize_seconds=10, max_branches=3,
                        max_concurrent_ops=5)
LANTERN_BUDGET = Budget(examples=1, known_bad_examples=0, shrink_seconds=10, minimize_seconds=10, max_branches=3,
                        max_concurrent_ops=4)
REPEAT = 3


def assert_judged(outcome) -> None:
    """The reference runs' property, except for contention: no repetition may fail (illegal, unknown, a broken
    structural check), and at most a third may be too contended to judge. Why the allowance: with 4-5 calls a
    program's share falls below 90% on one caller, and under the mix (delays, lost answers, retried calls)
    an indefinite call whose answer was the contract's own (a clock reading behind a racing write) is more often
    one `contract_unavailable` cannot prove, because its window spans states where the model answers
    otherwise (measured: 4 runs in 19 of the journal's failed so before the allowance, each with 1 contended
    repetition of 9). A contended repetition is still reported, as a warning naming its program."""
    assert_failed_cases(outcome)
    if outcome.contended:
        warnings.warn(f"{outcome.contended_repetitions} of {outcome.repetitions} repetition(s) too contended to "
                      f"judge under the wire's fault mix; the first:\n{outcome.contention}", stacklevel=2)
    if outcome.contended_repetitions * 3 > outcome.repetitions:
        message = (f"{outcome.contended_repetitions} of {outcome.repetitions} repetitions too contended to judge "
                   f"(contention, not a contract verdict); the first:\n{outcome.contention}")
        raise CheckFailed(message, (contention(message),))
    assert outcome.examples > 0, "no parallel program ran"
    assert outcome.contested_examples == outcome.examples, "every generated program must contest a key"


def _run(name, budget, projects, request):
    config = request.config
    system_plugin = plugin(name)
    outcome = run_property(projects, plugin=system_plugin, system=configured_implementation(system_plugin),
                           repeat=REPEAT, budget=budget, run_settings=parallel_settings(budget=budget),
                           counterexamples=counterexamples_dir(config),
                           wire_mix=wire_mix(config) or FaultMix(DEFAULT_SEED))
    print(f"\nparallel {name} under wire faults: {outcome.examples} programs x {REPEAT} repetitions in "
          f"{outcome.seconds:.1f} s{wire_note(outcome)}")
    write_wire_faults(config, outcome, f"{name}-wire-faults", name)
    assert_judged(outcome)
    assert outcome.wire_seed is not None and outcome.wire_faults, "the fault mix faulted nothing"


@pytest.mark.system("journal")
def test_journal_parallel_programs_under_wire_faults(projects, request):
    _run("journal", JOURNAL_BUDGET, projects, request)


@pytest.mark.system("lantern")
def test_lantern_parallel_programs_under_wire_faults(projects, request):
    _run("lantern", LANTERN_BUDGET, projects, request)
