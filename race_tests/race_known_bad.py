"""Issue 8's definition of a caught known-bad variant (fencecheck.known_bad_verdict) for a concurrent variant
and a race scenario of any system (the lantern's test_lantern_race_known_bad.py, the gateway's
test_gateway_race_known_bad.py).

Caught: a run of the scenario against the variant broke a property of the contract (an illegal verdict, a
broken invariant, a clock read twice, a broken promise), the failure replays against the variant (an illegal
history re-checks as illegal, a saved history being pure; otherwise the scenario shows a contract failure again
within `max_repeats` more runs), and the same scenario passes against the reference. A run that saw a foreign
exception (a `NameError`, say) or a hung call is an error, not a catch. A run whose only failure is an
`unknown` verdict decides nothing (the next run goes ahead); when no run decided, that is an error too. Runs
against a variant are no evidence about the reference: nothing is written to artifacts/races.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import attrs

from fencecheck.contest_results import ScenarioResult, recheck
from fencecheck.known_bad_verdict import (
    CONTRACT,
    UNDECIDED,
    Finding,
    KnownBadVerdict,
    contract,
    errors_in,
    judge,
    mismatch_finding,
    problem_finding,
    verdict_finding,
)
from fencecheck.lockstep import LockstepMismatch

MAX_REPEATS = 3  # a variant's scenario runs at most this often before the variant counts as SURVIVED

__all__ = ["MAX_REPEATS", "Judged", "caught_by", "findings_of", "judge_variant"]


def findings_of(result: ScenarioResult) -> list[Finding]:
    """What a run found, one finding per kind (contract property or error); empty when it passed."""
    found = [f for f in (verdict_finding(result.verdict, result.explanation),) if f is not None]
    found += [problem_finding(f"invariant: {problem}") for problem in result.problems]
    found += [contract(f"promise: {problem}") for problem in result.promise_problems]
    return found


def caught_by(result: ScenarioResult) -> list[str]:
    """The contract failures of a run, one line each (no errors: an unknown verdict or a crash is no catch)."""
    return [f.text for f in findings_of(result) if f.kind == CONTRACT]


@attrs.frozen
class Judged:
    verdict: KnownBadVerdict
    runs: tuple[ScenarioResult, ...]
    seconds: float


def judge_variant(scenario: Any, implementation: Any, *, reference: Any, db: Any, emulator: Any, project_id: str,
                  counterexamples: Path, max_repeats: int = MAX_REPEATS) -> Judged:
    """Run `scenario` (anything with the race scenarios' `execute`) against `implementation` up to `max_repeats`
    times (until a run finds a contract failure or an error: a run whose checker was merely undecided goes on to
    the next), then check the reproduction, on the variant and once against `reference` (see the module
    docstring). Harness crashes propagate."""

    def run(system: Any, repeat: int) -> tuple[ScenarioResult, float]:
        emulator.reset(project_id)
        started = time.monotonic()
        try:
            result, _run = scenario.execute(db, implementation=system, repeat=repeat, artifacts_dir=None,
                                            counterexamples_dir=counterexamples, emulator=emulator,
                                            project_id=project_id)
        finally:
            emulator.reset(project_id)
        return result, time.monotonic() - started

    def setup_failed(mismatch: LockstepMismatch) -> Judged:
        # The scenario's setup (run in lockstep) already disagreed: a crash, or a sequential bug, which is the
        # stateful catalogue's to catch and reproduce; no race was run.
        return Judged(judge([mismatch_finding(mismatch)], reproduction="the scenario's setup, not its race"),
                      tuple(runs), round(seconds, 2))

    seconds, runs = 0.0, []  # the scenario runs' wall time up to the detecting one (emptying the project excluded)
    for _ in range(max_repeats):
        try:
            result, elapsed = run(implementation, len(runs))
        except LockstepMismatch as mismatch:
            return setup_failed(mismatch)
        seconds += elapsed
        runs.append(result)
        if any(f.kind != UNDECIDED for f in findings_of(result)):  # an undecided run alone decides nothing
            break
    last = runs[-1]
    found = findings_of(last)
    if not any(f.kind != UNDECIDED for f in found):  # nothing decisive: survived, or error if a run was undecided
        return Judged(judge([f for result in runs for f in findings_of(result)]), tuple(runs), round(seconds, 2))
    if errors_in(found):
        return Judged(judge(found), tuple(runs), round(seconds, 2))
    if last.verdict == "illegal" and last.counterexample:
        replays = recheck(last.counterexample).status == "illegal"
        how = f"re-checked {last.counterexample}"
    else:
        again = [run(implementation, len(runs) + i)[0] for i in range(max_repeats)]
        replays = any(caught_by(result) and not errors_in(findings_of(result)) for result in again)
        how = f"the scenario again against the variant, {max_repeats} runs"
    on_reference, _elapsed = run(reference, 0)
    reproduction = how if on_reference.passed else f"{how}; against the reference: {findings_of(on_reference)[:1]}"
    return Judged(judge(found, replays_on_variant=replays, passes_on_reference=on_reference.passed,
                        reproduction=reproduction), tuple(runs), round(seconds, 2))
