"""The concurrent gateway known-bad variants (`concurrent=True` in known_bad/gateway/variants.py) through the same
scenarios and contest runner as the reference (test_gateway_races.py): each must be caught by the race scenario
named for it in `SCENARIO_OF` within MAX_REPEATS runs, by issue 8's definition (race_tests/race_known_bad.py,
fencecheck.known_bad_verdict): a property of the contract fails, the failure replays against the variant, and
the same scenario passes against the reference.

Beyond that definition, the detecting run's saved counterexample goes through `fencecheck replay`'s contest
replay (fencecheck.replay_contest) on the emulator: against the variant it names it fails again (a race is not
deterministic: within MAX_REPEATS replays), and the same contest against the reference passes.

Runs against a variant are no evidence about the reference: nothing is written to artifacts/races. Each
variant's verdict is recorded once, after every check, as artifacts/known_bad/gateway-race-<variant>.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from fencecheck.plugins.gateway import GATEWAY
from fencecheck.replay_contest import load_contest, replay_contest
from fencecheck.report.artifacts import known_bad_recorder
from known_bad.gateway.variants import CATALOGUE
from race_tests.conftest import counterexamples_dir
from race_tests.gateway_scenarios import BY_NAME
from race_tests.race_known_bad import MAX_REPEATS, caught_by, judge_variant

pytestmark = [pytest.mark.system("gateway"), pytest.mark.catalogue]  # the gate deselects both (--only-system)

CONCURRENT = [variant for variant in CATALOGUE if variant.concurrent]
# The scenario that must catch each concurrent variant: plain reads and blind writes let several claimers of
# one begun journal each see BEGUN and each be told it won the election.
SCENARIO_OF = {"claim_outside_the_transaction": "consume_election"}


def test_every_concurrent_gateway_variant_names_a_race_scenario() -> None:
    assert CONCURRENT, "the gateway catalogue has no concurrent variant"
    assert {variant.name for variant in CONCURRENT} == SCENARIO_OF.keys()
    assert set(SCENARIO_OF.values()) <= BY_NAME.keys()


def _no_explanation(_verdict: Any) -> list[str]:
    return []


@pytest.mark.parametrize("variant", CONCURRENT, ids=[variant.name for variant in CONCURRENT])
def test_concurrent_gateway_variant_is_caught(
    variant: Any, emulator: Any, project_id: str, firestore_db: Any, request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    scenario = BY_NAME[SCENARIO_OF[variant.name]]
    artifacts = Path(request.config.rootpath) / "artifacts"
    failing = f"{request.node.nodeid}: {scenario.name}'s linearizability and promise ({scenario.promise_text})"
    record = known_bad_recorder(artifacts, name=f"gateway-race-{variant.name}", rule=variant.rule,
                                failing_property=failing)
    again: list[tuple[Any, list[str]]] = []  # (what the replay found, its lines)
    on_reference, reference_lines, replayed = True, [], []
    try:
        judged = judge_variant(scenario, GATEWAY.resolve(variant.system_spec), reference=GATEWAY.resolve(None),
                               db=firestore_db, emulator=emulator, project_id=project_id,
                               counterexamples=counterexamples_dir(request.config))
        verdict, runs, seconds = judged.verdict, judged.runs, judged.seconds
        last = runs[-1]
        if verdict.caught and last.counterexample:
            saved = load_contest(Path(last.counterexample))
            assert saved.implementation == variant.system_spec, saved.implementation
            again = [replay_contest(saved, emulator, _no_explanation) for _ in range(MAX_REPEATS)]
            on_reference, reference_lines = replay_contest(attrs.evolve(saved, implementation=None), emulator,
                                                           _no_explanation)
            replayed = [f"replayed against the variant: {'still fails' if any(s for s, _ in again) else 'passed'} "
                        f"({sum(1 for s, _ in again if s)} of {MAX_REPEATS})",
                        f"replayed against the reference: {'fails' if on_reference else 'passes'}"]
    except Exception as crash:  # the harness (or the variant, outside a call) crashed: not a detection
        record("error", found=f"{request.node.nodeid}: the harness crashed: {type(crash).__name__}: {crash}")
        raise
    summary = "\n".join(
        f"run {i}: verdict {r.verdict}, outcomes {r.outcomes}, {r.calls} calls, {r.attempts} transaction attempts, "
        f"{r.aborts} aborted, {r.race_seconds:.1f} s" for i, r in enumerate(runs, 1)
    )
    replays = bool(last.counterexample) and any(still for still, _lines in again) and not on_reference
    if verdict.caught:
        record("caught", seconds=seconds, steps=last.calls, counterexample=last.counterexample,
               found=f"{request.node.nodeid}: {verdict.reason}",
               warnings=() if replays else (f"its counterexample's contest replay did not hold: {replayed}",))
    else:
        error = verdict.status == "error"
        record(verdict.status, seconds=seconds if error else None,
               found=f"{request.node.nodeid}: {verdict.reason}" if error else None)
    assert verdict.caught, (
        f"concurrent known-bad gateway variant {variant.name} {verdict.status.upper()} after {len(runs)} run(s) of "
        f"{scenario.name} ({seconds} s): {verdict.reason}\n{summary}"
    )
    assert last.counterexample, f"{variant.name} was caught without an illegal history saved: {verdict.reason}"
    assert replays, f"{variant.name}: its counterexample {last.counterexample} " + "; ".join(replayed) + (
        "\n" + "\n".join(reference_lines) if on_reference else "")
    for key, value in (("secondsToDetection", seconds), ("runsToDetection", len(runs)),
                       ("historyCalls", last.calls), ("caughtBy", verdict.reason)):
        record_property(key, value)
    print(
        f"\n{variant.name}: caught by {scenario.name} in run {len(runs)} of {MAX_REPEATS} after {seconds} s; failing "
        f"history: {last.calls} calls; {'; '.join(replayed)}\n{summary}\n"
        + "\n".join(f"  - {f}" for f in caught_by(last)[:8])
    )
