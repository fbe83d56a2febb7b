"""The concurrent known-bad catalogue through the parallel property: every variant must be caught by a race.

For each variant of `known_bad.journal.CONCURRENT_VARIANTS` (parametrized by name; each behaves exactly like
the reference when calls run one at a time), the parallel property runs against it with the profile's
`known_bad_examples` (the run stops at the first failing program) and no example database (a warm database
would replay last run's counterexample at once and hide a loss of reach of the strategy). The test passes
when:

- a program failed, and not in its prefix: the bug needed a race (a prefix failure would mean the variant is
  not concurrency-only, i.e. the sequential catalogue's job);
- the shrunk program is small: MIN_BRANCHES branches, at most MAX_SHRUNK_CONCURRENT_OPS racing calls and
  MAX_SHRUNK_PREFIX_OPS prefix calls;
- its counterexample file is a true reproduction: the saved history re-checks to the saved verdict (pure, so
  not at the mercy of a race: an illegal history stays illegal), and the same program run against the real
  reference passes, once through `replay_parallel(path, db)` and in every one of R repetitions.

Each run writes artifacts/parallel/known_bad/<name>.json: `secondsToDetection` is the wall time from the
start to the first failing program (before shrinking), the shrunk size is after both shrinking stages.
"""

from __future__ import annotations

import time

import pytest

from fencecheck.lockstep import REFERENCE
from fencecheck.parallel import (
    FAILS_IN_PREFIX,
    budget_for,
    load_counterexample,
    parallel_settings,
    recheck_parallel,
    replay_parallel,
    replay_parallel_case,
    run_property,
)
from fencecheck.parallel.minimize import MIN_BRANCHES
from fencecheck.report.parallel import ParallelVariant, write_parallel_variant
from known_bad.journal import CONCURRENT_VARIANTS, variant
from parallel_tests.conftest import artifacts_dir, counterexamples_dir

MAX_SHRUNK_CONCURRENT_OPS = 4
MAX_SHRUNK_PREFIX_OPS = 3


@pytest.mark.parametrize("name", [v.name for v in CONCURRENT_VARIANTS])
def test_concurrent_variant_is_caught(name, projects, repeat, emulator, firestore_db, request, record_property):
    v = variant(name)
    config = request.config

    def record(status: str, **fields) -> None:
        write_parallel_variant(
            artifacts_dir(config),
            ParallelVariant(name=name, rule=v.rule, status=status, failing_property=request.node.nodeid, **fields),
        )

    try:
        api = v.build()
    except Exception:
        record("error")
        raise
    started = time.monotonic()
    try:
        outcome = run_property(
            projects,
            system=api,
            repeat=repeat,
            run_settings=parallel_settings(database=None, max_examples=budget_for().known_bad_examples),
            counterexamples=counterexamples_dir(config),
        )
    except Exception:
        record("error")  # the harness crashed: not a detection
        raise
    case = outcome.case
    if case is None:
        record("survived")
        pytest.fail(
            f"concurrent known-bad variant {name} SURVIVED {outcome.examples} parallel programs "
            f"({outcome.repetitions} runs, {time.monotonic() - started:.1f} s): {v.description}",
            pytrace=False,
        )
    size = case.program.size
    relative = outcome.counterexample.relative_to(config.rootpath).as_posix()
    record(
        "caught",
        seconds_to_detection=round(outcome.first_failure_seconds, 2),
        examples_to_detection=outcome.examples_to_failure,
        classification=case.classification,
        failed_repetitions=len(case.failures),
        repetitions=len(case.repetitions),
        shrunk_branches=size.branches,
        shrunk_concurrent_ops=size.concurrent_ops,
        shrunk_prefix_ops=size.prefix_ops,
        counterexample=relative,
    )
    for key, value in (
        ("secondsToDetection", round(outcome.first_failure_seconds, 2)),
        ("secondsTotal", round(outcome.seconds, 2)),
        ("examplesToDetection", outcome.examples_to_failure),
        ("hypothesisShrunk", str(outcome.hypothesis_size)),
        ("shrunk", str(size)),
        ("classification", case.classification),
    ):
        record_property(key, value)
    print(
        f"\n{name}: caught after {outcome.first_failure_seconds:.1f} s ({outcome.examples_to_failure} programs); "
        f"Hypothesis shrank it to {outcome.hypothesis_size}, minimizing to {size}; {case.classification} "
        f"({len(case.failures)}/{len(case.repetitions)}); {outcome.seconds:.1f} s in all; {relative}"
    )

    assert case.classification != FAILS_IN_PREFIX, f"{name} failed sequentially, in the prefix:\n{case.summary()}"
    assert size.branches == MIN_BRANCHES and size.concurrent_ops <= MAX_SHRUNK_CONCURRENT_OPS, (
        f"{name}: the shrunk program is {size}:\n{case.summary()}"
    )
    assert size.prefix_ops <= MAX_SHRUNK_PREFIX_OPS, f"{name}: the shrunk program is {size}:\n{case.summary()}"

    saved = load_counterexample(outcome.counterexample)
    status = saved.data["failure"]["status"]  # illegal, or broken (a structural invariant) / unknown
    verdict = recheck_parallel(outcome.counterexample)
    assert verdict is not None and (verdict.status == status or status == "broken"), (
        f"{relative}: the saved history ({status}) re-checks as {verdict and verdict.status}"
    )
    once = replay_parallel(outcome.counterexample, firestore_db, system=REFERENCE)
    assert once.passed, f"{relative} fails against the real reference:\n{once.explain()}"
    again = replay_parallel_case(outcome.counterexample, emulator, repeat=repeat, system=REFERENCE)
    assert not again.failed, f"{relative} fails against the real reference:\n{again.summary()}"
