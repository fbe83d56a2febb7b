"""The gateway reference under parallel programs (fencecheck/plugins/gateway_parallel.py: one journal at a stage
of its life, then 2-3 branches of claims, consume answers, provider intents, reports, reconcile leases,
evidence, manual terminals and closures, at clock readings around the stage's lease expiry and the settlement
deadline): every program must pass every one of its R repetitions, as the journal's must
(test_parallel_reference.py, whose assertions this shares). Budget: `GATEWAY_BUDGETS` (conftest.py).

The run is written to artifacts/parallel/gateway-reference.json for the evidence report; a shrunk failing
program to counterexamples/parallel-gateway-reference-<id>.json. Against a gateway variant named by
$FENCECHECK_SYSTEM (`fencecheck gate --known-bad <name>`) the same property runs against it and no evidence is
written.
"""

from __future__ import annotations

import pytest

from fencecheck.parallel import parallel_settings, run_property
from fencecheck.plugins import plugin
from fencecheck.systems import configured_implementation, describe_system, reference_run
from parallel_tests.conftest import GATEWAY_REFERENCE_RUN, counterexamples_dir, gateway_budget
from parallel_tests.test_parallel_reference import assert_reference_passed, write_evidence

pytestmark = pytest.mark.system("gateway")  # deselected by --only-system <another>

GATEWAY = plugin("gateway")


def test_gateway_reference_is_linearizable_under_parallel_programs(projects, repeat, request):
    config = request.config
    system = configured_implementation(GATEWAY)
    budget = gateway_budget()
    outcome = run_property(projects, plugin=GATEWAY, system=system, repeat=repeat, budget=budget,
                           run_settings=parallel_settings(budget=budget), counterexamples=counterexamples_dir(config))
    print(f"\nparallel gateway, {describe_system(system)}: {outcome.examples} programs x {repeat} repetitions "
          f"({outcome.repetitions} runs) in {outcome.seconds:.1f} s")
    if reference_run(system="gateway"):
        write_evidence(config, outcome, repeat, GATEWAY_REFERENCE_RUN, GATEWAY.name)
    assert_reference_passed(outcome)
