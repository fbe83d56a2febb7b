"""The lantern's concurrent known-bad variants through the parallel property: each must be caught by a race and
shrunk to a two-branch one.

`LANTERN_VARIANTS` (conftest.py): finding #5 (extinguish decides from plain reads and writes blind: two
extinguishes both end the lantern) and the rejected A3 (the old getActiveLanterns retires what its query met in
one blind batch: a read racing an extinguish, or another read, retires an expired lantern twice). Both behave
exactly like the reference when calls run one at a time. Caught is judged exactly as for the journal's
(test_parallel_known_bad.py, `judge_parallel_variant`, fencecheck.known_bad_verdict): a contract property
failed, the saved counterexample replays failing against the variant and passes against the reference. A
shrunk program larger than the journal's bounds (2 branches, 4 racing calls, 3 prefix calls) is a warning,
not a failure. Each run writes artifacts/parallel/known_bad/<name>.json.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase

from fencecheck.parallel import parallel_settings
from fencecheck.plugins import plugin
from known_bad.crashing import lantern_name_error
from known_bad.lantern import variant
from parallel_tests.conftest import LANTERN_VARIANTS, counterexamples_dir, lantern_budget
from parallel_tests.test_parallel_known_bad import catch_parallel_variant, judge_parallel_variant

pytestmark = [pytest.mark.system("lantern"), pytest.mark.catalogue]  # the gate deselects both (--only-system)

LANTERN = plugin("lantern")


@pytest.mark.parametrize("name", LANTERN_VARIANTS)
def test_concurrent_lantern_variant_is_caught(name, projects, repeat, emulator, request, record_property):
    v = variant(name)
    config = request.config
    budget = lantern_budget()
    catch_parallel_variant(
        lambda: judge_parallel_variant(
            LANTERN.resolve(v.system_spec), system=LANTERN, budget=budget, projects=projects, emulator=emulator,
            repeat=repeat, run_settings=parallel_settings(budget=budget, database=None,
                                                          max_examples=budget.known_bad_examples),
            counterexamples=counterexamples_dir(config), root=config.rootpath,
        ),
        name=name, v=v, system=LANTERN, label="concurrent lantern variant", request=request,
        record_property=record_property,
    )


def test_a_lantern_variant_that_only_raises_name_error_is_an_error_not_a_catch(projects, emulator, tmp_path):
    # The racing operations raise NameError (the prefix's venue and lights work, so the race is reached): a
    # foreign exception in a branch. Two programs, one repetition each, no shrinking: the verdict is all this checks.
    judged = judge_parallel_variant(
        lantern_name_error("extinguish_lantern", "read_active_lanterns"), system=LANTERN, projects=projects,
        emulator=emulator, repeat=1, budget=lantern_budget(),
        run_settings=parallel_settings(budget=lantern_budget(), database=None, max_examples=2,
                                       phases=[Phase.generate]),
        counterexamples=tmp_path, root=tmp_path, shrink_seconds=0, minimize_seconds=0,
    )
    assert judged.verdict.status == "error" and "NameError" in judged.verdict.reason, judged.verdict
