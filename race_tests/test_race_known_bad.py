"""Every registered system's concurrent known-bad variants through the same scenarios and contest runner as its
reference: each must be caught by the race scenario its race module names for it (`CATCHES` of the module its
plug-in's `SuiteParts.races` names: the lantern's `variant.scenario`, the gateway's consume election), within
MAX_REPEATS runs. Parametrized as `[<system>-<variant>]`; a system whose race module has no `CATCHES` races no
variant (the journal's concurrent variants are the parallel suite's: parallel_tests/test_parallel_known_bad.py).

Caught is the one rule of fencecheck.checker.known_bad_verdict, applied to a race in race_tests/race_known_bad.py: a run
of the scenario against the variant broke a property of the contract (an illegal verdict, a broken invariant, a
clock read twice, a broken promise), the failure replays against the variant (an illegal history re-checks as
illegal, a saved history being pure; otherwise the scenario shows a contract failure again within MAX_REPEATS
more runs), and the same scenario passes against the reference. A run that saw a foreign exception (a
`NameError`, say) or a hung call is an error, not a catch. A run whose only failure is an `unknown` verdict
decides nothing (the next run goes ahead); when no run decided, that is an error too.

Beyond that definition, a detection by an illegal history (its counterexample saved in counterexamples/, naming
the variant as its implementation) goes through `fencecheck replay`'s contest replay (fencecheck.runners.replay_contest)
on the emulator: against the variant it names it fails again (a race is not deterministic: within REPLAY_REPEATS
replays), and the same contest against the reference passes. A detection by a broken promise alone (the
lantern's finding #3: lights that abort, every history linearizable) saves no history and has nothing to replay.

Runs against a variant are no evidence about the reference: nothing is written to artifacts/races. Each variant's
verdict is recorded once, after every check, as artifacts/known_bad/<system>-race-<variant>.json (time to
detection = the scenario runs up to the detecting one; `shrunkSteps` = the calls in its history, nothing is
shrunk).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.plugin.registry import plugin
from fencecheck.report.artifacts import known_bad_recorder
from fencecheck.runners.replay_contest import load_contest, replay_contest
from fencecheck.suites import artifacts_root
from known_bad.crashing import lantern_multi_line_crash, lantern_name_error
from race_tests.conftest import counterexamples_dir
from race_tests.race_known_bad import MAX_REPEATS, caught_by, judge_variant

# Replays of a detecting run's counterexample against the variant, stopping at the first that fails again. Three
# were too few: the gateway's claim outside the transaction passed 0 of 3 replays once, in a full loaded run.
REPLAY_REPEATS = 8

# The gate deselects the catalogue (--without-catalogues) and each test of another system (--only-system: each is
# marked with its system).
pytestmark = pytest.mark.catalogue

RACING = suite_parts.with_part("race_variants")  # the systems whose race module names variants to catch


def _systems() -> list[Any]:
    return [pytest.param(name, marks=pytest.mark.system(name), id=name) for name in RACING]


def _variants() -> list[Any]:
    return [pytest.param(name, variant, marks=pytest.mark.system(name), id=f"{name}-{variant}")
            for name in RACING for variant in suite_parts.load(plugin(name), "races").CATCHES]


@pytest.mark.parametrize("name", _systems())
def test_every_raced_variant_is_of_the_catalogue_and_names_a_scenario(name) -> None:
    system = plugin(name)
    races = suite_parts.load(system, "races")
    unknown = sorted(set(races.CATCHES) - set(system.known_bad_variants()))
    assert not unknown, f"{races.__name__}.CATCHES names {unknown}, not variants of {name}'s catalogue"
    missing = sorted(set(races.CATCHES.values()) - set(races.BY_NAME))
    assert not missing, f"{races.__name__}.CATCHES names scenarios {missing} it does not define (BY_NAME)"
    assert system.suites.catalogue, f"{name} races variants but names no catalogue module (SuiteParts.catalogue)"


def _no_explanation(_verdict: Any) -> list[str]:
    return []


@pytest.mark.parametrize("system_name, name", _variants())
def test_concurrent_variant_is_caught(
    system_name: str, name: str, emulator: Any, project_id: str, firestore_db: Any, request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    system = plugin(system_name)
    spec = system.known_bad_variants()[name]
    v = suite_parts.load(system, "catalogue").variant(name)
    scenario = suite_parts.load(system, "races").BY_NAME[suite_parts.load(system, "races").CATCHES[name]]
    artifacts = artifacts_root(request.config.rootpath)
    expected = getattr(v, "failing_property", None) or (
        f"{scenario.name}'s linearizability and promise ({scenario.promise_text})")
    record = known_bad_recorder(artifacts, name=f"{system_name}-race-{name}", rule=v.rule,
                                failing_property=f"{request.node.nodeid}: {expected}")
    again: list[tuple[Any, list[str]]] = []  # (what each replay against the variant found, its lines)
    on_reference, reference_lines, replayed = True, [], []
    try:
        judged = judge_variant(scenario, system.resolve(spec), reference=system.resolve(None), db=firestore_db,
                               emulator=emulator, project_id=project_id,
                               counterexamples=counterexamples_dir(request.config))
        verdict, runs, seconds = judged.verdict, judged.runs, judged.seconds
        last = runs[-1]
        if verdict.caught and last.counterexample:
            saved = load_contest(Path(last.counterexample))
            assert saved.implementation == spec, saved.implementation
            for _ in range(REPLAY_REPEATS):  # until it fails again: a race need not fail on every replay
                again.append(replay_contest(saved, emulator, _no_explanation))
                if again[-1][0]:
                    break
            on_reference, reference_lines = replay_contest(attrs.evolve(saved, implementation=None), emulator,
                                                           _no_explanation)
            replayed = [f"replayed against the variant: {'still fails' if any(s for s, _ in again) else 'passed'} "
                        f"({sum(1 for s, _ in again if s)} of {len(again)})",
                        f"replayed against the reference: {'fails' if on_reference else 'passes'}"]
    except Exception as crash:  # the harness (or the variant, outside a call) crashed: not a detection
        record("error", found=f"{request.node.nodeid}: the harness crashed: {type(crash).__name__}: {crash}")
        raise
    summary = "\n".join(
        f"run {i}: verdict {r.verdict}, outcomes {r.outcomes}, {r.calls} calls, {r.attempts} transaction attempts, "
        f"{r.aborts} aborted, {r.race_seconds:.1f} s" for i, r in enumerate(runs, 1)
    )
    # an illegal history must have been saved, and its contest replay must hold; a promise alone saves none
    needs_replay = last.verdict == "illegal"
    replays = not needs_replay or (bool(last.counterexample) and any(still for still, _ in again)
                                   and not on_reference)
    if verdict.caught:
        record("caught", seconds=seconds, steps=last.calls, counterexample=last.counterexample,
               found=f"{request.node.nodeid}: {verdict.reason}",
               warnings=() if replays else (f"its counterexample's contest replay did not hold: {replayed}",))
    else:
        error = verdict.status == "error"
        record(verdict.status, seconds=seconds if error else None,
               found=f"{request.node.nodeid}: {verdict.reason}" if error else None)
    assert verdict.caught, (
        f"concurrent known-bad {system_name} variant {name} {verdict.status.upper()} after {len(runs)} run(s) of "
        f"{scenario.name} ({seconds} s): {verdict.reason}\n({expected} was expected to fail)\n{summary}"
    )
    assert not needs_replay or last.counterexample, (
        f"{name} was caught by an illegal history but none was saved: {verdict.reason}")
    assert replays, f"{name}: its counterexample {last.counterexample} " + "; ".join(replayed) + (
        "\n" + "\n".join(reference_lines) if on_reference else "")
    for key, value in (("secondsToDetection", seconds), ("runsToDetection", len(runs)),
                       ("historyCalls", last.calls), ("caughtBy", verdict.reason)):
        record_property(key, value)
    print(
        f"\n{system_name} {name}: caught by {scenario.name} in run {len(runs)} of {MAX_REPEATS} after {seconds} s; "
        f"failing history: {last.calls} calls; {'; '.join(replayed) or 'no history to replay'}\n{summary}\n"
        + "\n".join(f"  - {f}" for f in caught_by(last)[:8])
    )


# --- the lantern's: a variant that crashes is an error, never a catch ---------------------------------------------

# The operations each lantern catalogue scenario races (its setup must still work: the NameError is the racers').
RACED = {"lights_24_at_one_venue": ("light_lantern",), "double_extinguish": ("extinguish_lantern",),
         "read_racing_extinguish": ("extinguish_lantern", "read_active_lanterns")}


@pytest.mark.system("lantern")
def test_every_catalogue_scenario_has_its_raced_operations() -> None:
    assert set(suite_parts.load(plugin("lantern"), "races").CATCHES.values()) <= RACED.keys()


@pytest.mark.system("lantern")
@pytest.mark.parametrize("crashing", [lantern_name_error, lantern_multi_line_crash], ids=["name-error", "multi-line"])
@pytest.mark.parametrize("scenario", sorted(RACED))
def test_a_variant_that_only_raises_name_error_is_an_error_not_a_catch(
    scenario: str, crashing: Any, emulator: Any, project_id: str, firestore_db: Any, tmp_path: Path,
) -> None:
    # Its racing calls raise NameError, or a RuntimeError whose message spans lines (a foreign exception: only the
    # system's error may escape; a crash, whatever its text): no catch.
    lantern = plugin("lantern")
    judged = judge_variant(suite_parts.load(lantern, "races").BY_NAME[scenario], crashing(*RACED[scenario]),
                           reference=lantern.resolve(None), db=firestore_db, emulator=emulator,
                           project_id=project_id, counterexamples=tmp_path)
    said = "NameError" if crashing is lantern_name_error else "BUG: a crash\nTraceback"
    assert judged.verdict.status == "error" and said in judged.verdict.reason, judged.verdict
