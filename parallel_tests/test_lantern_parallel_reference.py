"""The lantern reference under parallel programs (fencecheck/plugins/lantern_parallel.py: the bar and alice's
lantern, then 2-3 branches of extinguishes, reads that retire what expired, and lights, at clock readings
around its expiry): every program must pass every one of its R repetitions, as the journal's must
(test_parallel_reference.py, whose assertions this shares). Budget: `LANTERN_BUDGETS` (conftest.py).

The run is written to artifacts/parallel/lantern-reference.json for the evidence report; a shrunk failing
program to counterexamples/parallel-lantern-reference-<id>.json. Against a lantern variant named by
$FENCECHECK_SYSTEM (`fencecheck gate --known-bad known_bad.lantern:<name>`) the same property runs against it
and no evidence is written.
"""

from __future__ import annotations

import pytest

from fencecheck.parallel import parallel_settings, run_property
from fencecheck.plugins import plugin
from fencecheck.pytest_plugin import wire_mix
from fencecheck.systems import configured_implementation, describe_system, reference_run
from parallel_tests.conftest import LANTERN_REFERENCE_RUN, counterexamples_dir, lantern_budget
from parallel_tests.test_parallel_reference import assert_reference_passed, wire_note, write_evidence, write_wire_faults

pytestmark = pytest.mark.system("lantern")  # deselected by --only-system <another>

LANTERN = plugin("lantern")


def test_lantern_reference_is_linearizable_under_parallel_programs(projects, repeat, request):
    config = request.config
    system = configured_implementation(LANTERN)
    budget = lantern_budget()
    outcome = run_property(projects, plugin=LANTERN, system=system, repeat=repeat, budget=budget,
                           run_settings=parallel_settings(budget=budget), counterexamples=counterexamples_dir(config),
                           wire_mix=wire_mix(config))
    print(f"\nparallel lantern, {describe_system(system)}: {outcome.examples} programs x {repeat} repetitions "
          f"({outcome.repetitions} runs) in {outcome.seconds:.1f} s{wire_note(outcome)}")
    write_wire_faults(config, outcome, LANTERN_REFERENCE_RUN, LANTERN.name)
    if reference_run(system="lantern"):
        write_evidence(config, outcome, repeat, LANTERN_REFERENCE_RUN, LANTERN.name)
    assert_reference_passed(outcome)
