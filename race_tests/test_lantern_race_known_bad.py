"""The concurrent lantern known-bad variants (`concurrent=True` in known_bad/lantern/variants.py) through the same
scenarios and contest runner as the reference (test_lantern_races.py): each must be caught by its own seed
scenario (`variant.scenario`) within MAX_REPEATS runs.

Caught is the one rule of fencecheck.known_bad_verdict, applied to a race in race_tests/race_known_bad.py: a run of
the scenario against `LANTERN.resolve(variant.system_spec)` broke a property of the contract (an illegal verdict, a
broken invariant, a clock read twice, a broken promise), the failure replays against the variant (an illegal
history re-checks as illegal, a saved history being pure; otherwise the scenario shows a contract failure again
within MAX_REPEATS more runs), and the same scenario passes against the reference. A run that saw a foreign
exception (a `NameError`, say) or a hung call is an error, not a catch. A run whose only failure is an `unknown`
verdict decides nothing (the next run goes ahead); when no run decided, that is an error too. Runs against a
variant are no evidence about the reference: nothing is written to artifacts/races. A detecting run with an illegal
verdict leaves its history in counterexamples/ (it names the variant as its implementation), and each variant's
verdict is recorded once, after every check, as artifacts/known_bad/lantern-race-<variant>.json (time to detection
= the scenario runs up to the detecting one; `shrunkSteps` = the calls in its history, nothing is shrunk).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fencecheck.plugins.lantern import LANTERN
from fencecheck.report.artifacts import known_bad_recorder
from known_bad.crashing import lantern_multi_line_crash, lantern_name_error
from known_bad.lantern import VARIANTS
from race_tests.conftest import counterexamples_dir
from race_tests.lantern_scenarios import BY_NAME
from race_tests.race_known_bad import MAX_REPEATS, caught_by, judge_variant

pytestmark = [pytest.mark.system("lantern"), pytest.mark.catalogue]  # the gate deselects both (--only-system)

CONCURRENT = [variant for variant in VARIANTS if variant.concurrent]


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
        judged = judge_variant(scenario, LANTERN.resolve(variant.system_spec), reference=LANTERN.resolve(None),
                               db=firestore_db, emulator=emulator,
                               project_id=project_id, counterexamples=counterexamples_dir(request.config))
    except Exception as crash:  # the harness (or the variant, outside a call) crashed: not a detection
        record("error", found=f"{request.node.nodeid}: the harness crashed: {type(crash).__name__}: {crash}")
        raise
    verdict, runs, seconds = judged.verdict, judged.runs, judged.seconds
    last = runs[-1]
    summary = "\n".join(
        f"run {i}: verdict {r.verdict}, outcomes {r.outcomes}, {r.calls} calls, {r.attempts} transaction attempts, "
        f"{r.aborts} aborted, {r.race_seconds:.1f} s" for i, r in enumerate(runs, 1)
    )
    if verdict.caught:
        record("caught", seconds=seconds, steps=last.calls, counterexample=last.counterexample,
               found=f"{request.node.nodeid}: {verdict.reason}")
    else:
        error = verdict.status == "error"
        record(verdict.status, seconds=seconds if error else None,
               found=f"{request.node.nodeid}: {verdict.reason}" if error else None)
    assert verdict.caught, (
        f"concurrent known-bad lantern variant {variant.name} ({variant.finding}) {verdict.status.upper()} after "
        f"{len(runs)} run(s) of {scenario.name} ({seconds} s): {verdict.reason}\n"
        f"({variant.failing_property} was expected to fail)\n{summary}"
    )
    for key, value in (
        ("secondsToDetection", seconds),
        ("runsToDetection", len(runs)),
        ("historyCalls", last.calls),
        ("caughtBy", verdict.reason),
    ):
        record_property(key, value)
    print(
        f"\n{variant.name} ({variant.finding}): caught by {scenario.name} in run {len(runs)} of {MAX_REPEATS} after "
        f"{seconds} s; failing history: {last.calls} calls\n{summary}\n"
        + "\n".join(f"  - {f}" for f in caught_by(last)[:8])
    )


# The operations each catalogue scenario races (its setup must still work: the NameError is the racers').
RACED = {"lights_24_at_one_venue": ("light_lantern",), "double_extinguish": ("extinguish_lantern",),
         "read_racing_extinguish": ("extinguish_lantern", "read_active_lanterns")}


def test_every_catalogue_scenario_has_its_raced_operations() -> None:
    assert {variant.scenario for variant in CONCURRENT} <= RACED.keys()


@pytest.mark.parametrize("crashing", [lantern_name_error, lantern_multi_line_crash], ids=["name-error", "multi-line"])
@pytest.mark.parametrize("scenario", sorted(RACED))
def test_a_variant_that_only_raises_name_error_is_an_error_not_a_catch(
    scenario: str, crashing: Any, emulator: Any, project_id: str, firestore_db: Any, tmp_path: Path,
) -> None:
    # Its racing calls raise NameError, or a RuntimeError whose message spans lines (a foreign exception: only the
    # system's error may escape; a crash, whatever its text): no catch.
    judged = judge_variant(BY_NAME[scenario], crashing(*RACED[scenario]), reference=LANTERN.resolve(None),
                           db=firestore_db,
                           emulator=emulator, project_id=project_id, counterexamples=tmp_path)
    said = "NameError" if crashing is lantern_name_error else "BUG: a crash\nTraceback"
    assert judged.verdict.status == "error" and said in judged.verdict.reason, judged.verdict
