"""The gateway's concurrent known-bad variants through the parallel property: each must be caught by a race and
shrunk.

`GATEWAY_VARIANTS` (conftest.py): the claim outside the transaction (the record and its events read with plain
reads, written blind: two claims of a begun journal can both win). It behaves exactly like the reference when
calls run one at a time. Caught is judged exactly as for the journal's (test_parallel_known_bad.py,
`judge_parallel_variant`, fencecheck.known_bad_verdict): a contract property failed, the saved counterexample
replays failing against the variant and passes against the reference. Each run writes
artifacts/parallel/known_bad/<name>.json.
"""

from __future__ import annotations

import pytest

from fencecheck.parallel import parallel_settings
from fencecheck.plugins import plugin
from known_bad.gateway import variant
from parallel_tests.conftest import GATEWAY_VARIANTS, counterexamples_dir, gateway_budget
from parallel_tests.test_parallel_known_bad import catch_parallel_variant, judge_parallel_variant

pytestmark = [pytest.mark.system("gateway"), pytest.mark.catalogue]  # the gate deselects both (--only-system)

GATEWAY = plugin("gateway")


@pytest.mark.parametrize("name", GATEWAY_VARIANTS)
def test_concurrent_gateway_variant_is_caught(name, projects, repeat, emulator, request, record_property):
    v = variant(name)
    config = request.config
    budget = gateway_budget()
    catch_parallel_variant(
        lambda: judge_parallel_variant(
            GATEWAY.resolve(v.system_spec), system=GATEWAY, budget=budget, projects=projects, emulator=emulator,
            repeat=repeat, run_settings=parallel_settings(budget=budget, database=None,
                                                          max_examples=budget.known_bad_examples),
            counterexamples=counterexamples_dir(config), root=config.rootpath,
        ),
        name=name, v=v, system=GATEWAY, label="concurrent gateway variant", request=request,
        record_property=record_property,
    )
