"""The concurrent lantern known-bad variants (`concurrent=True` in known_bad/lantern/variants.py) through the same
scenarios and contest runner as the reference (test_lantern_races.py): each must be caught by its own seed
scenario (`variant.scenario`) within MAX_REPEATS runs.

Caught means a run of the scenario against `LANTERN.resolve(variant.system_spec)` ended with an illegal
verdict, a broken invariant (or harness check: a foreign exception, a clock read twice), or a broken promise.
An `unknown` verdict alone is no detection: the checker could not decide. Runs against a variant are no
evidence about the reference: nothing is written to artifacts/races. A detecting run with an illegal verdict
leaves its history in counterexamples/ (it names the variant as its implementation), and each variant's
detection is recorded as artifacts/known_bad/lantern-race-<variant>.json (time to detection = the scenario
runs up to the detecting one; `shrunkSteps` = the calls in its history, nothing is shrunk).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from fencecheck.plugins.lantern import LANTERN
from fencecheck.race import ScenarioResult
from fencecheck.report.artifacts import known_bad_recorder
from known_bad.lantern import VARIANTS
from race_tests.conftest import counterexamples_dir
from race_tests.lantern_scenarios import BY_NAME

CONCURRENT = [variant for variant in VARIANTS if variant.concurrent]
MAX_REPEATS = 3  # each variant's scenario runs at most this often before the variant counts as SURVIVED


def caught_by(result: ScenarioResult) -> list[str]:
    """What a run caught, one line per kind; empty when it passed (or only the checker was undecided)."""
    found = []
    if result.verdict == "illegal":
        found.append(f"checker: illegal ({result.explanation.splitlines()[0] if result.explanation else ''})")
    found += [f"invariant: {problem}" for problem in result.problems]
    found += [f"promise: {problem}" for problem in result.promise_problems]
    return found


def test_every_concurrent_variant_names_a_lantern_race_scenario() -> None:
    assert CONCURRENT, "the lantern catalogue has no concurrent variant"
    assert {variant.scenario for variant in CONCURRENT} <= BY_NAME.keys()


@pytest.mark.parametrize("variant", CONCURRENT, ids=[variant.name for variant in CONCURRENT])
def test_concurrent_lantern_variant_is_caught(
    variant: Any, emulator: Any, project_id: str, firestore_db: Any, request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    scenario = BY_NAME[variant.scenario]
    artifacts = Path(request.config.rootpath) / "artifacts"

    record = known_bad_recorder(artifacts, name=f"lantern-race-{variant.name}", rule=variant.rule,
                                failing_property=f"{request.node.nodeid}: {variant.failing_property}")

    try:
        implementation = LANTERN.resolve(variant.system_spec)
    except Exception:
        record("error")
        raise
    seconds, runs = 0.0, []  # the scenario runs' wall time up to the detecting one (emptying the project excluded)
    try:
        for _ in range(MAX_REPEATS):
            emulator.reset(project_id)
            started = time.monotonic()
            result, _run = scenario.execute(
                firestore_db,
                implementation=implementation,
                repeat=len(runs),
                artifacts_dir=None,  # never evidence about the reference
                counterexamples_dir=counterexamples_dir(request.config),
                emulator=emulator,
                project_id=project_id,
            )
            seconds += time.monotonic() - started
            runs.append(result)
            if caught_by(result):
                break
    except Exception:
        record("error")  # the harness (or the variant) crashed: not a detection
        raise
    finally:
        emulator.reset(project_id)
    seconds = round(seconds, 2)
    last = runs[-1]
    found = caught_by(last)
    summary = "\n".join(
        f"run {i}: verdict {r.verdict}, outcomes {r.outcomes}, {r.calls} calls, {r.attempts} transaction attempts, "
        f"{r.aborts} aborted, {r.race_seconds:.1f} s" for i, r in enumerate(runs, 1)
    )
    if not found:
        record("survived")
    assert found, (
        f"concurrent known-bad lantern variant {variant.name} ({variant.finding}) SURVIVED {len(runs)} run(s) "
        f"of {scenario.name} ({seconds} s): {variant.failing_property} went unchecked\n{summary}"
    )
    record("caught", seconds=seconds, steps=last.calls, counterexample=last.counterexample,
           found=f"{request.node.nodeid}: {found[0] or variant.failing_property}")
    for key, value in (
        ("secondsToDetection", seconds),
        ("runsToDetection", len(runs)),
        ("historyCalls", last.calls),
        ("caughtBy", found[0]),
    ):
        record_property(key, value)
    print(
        f"\n{variant.name} ({variant.finding}): caught by {scenario.name} in run {len(runs)} of {MAX_REPEATS} after "
        f"{seconds} s; failing history: {last.calls} calls\n{summary}\n" + "\n".join(f"  - {f}" for f in found[:8])
    )
