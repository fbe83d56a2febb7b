"""Issue 8's definition of a caught known-bad variant (fencecheck.checker.known_bad_verdict) for a concurrent variant
and a race scenario of any system (every registered system's raced variants: race_tests/test_race_known_bad.py).

Caught: a run of the scenario against the variant broke a property of the contract (an illegal verdict, a
broken invariant, a clock read twice, a broken promise), the failure replays against the variant (an illegal
history re-checks as illegal, a saved history being pure; otherwise the scenario shows a contract failure again
within `max_repeats` more runs: the replay itself must show a contract failure), and the same scenario passes
against the reference. Each run's problems carry the kind they were found as (`ScenarioResult.findings`,
fencecheck.problems): a run that saw a foreign exception (a `NameError`, an exec: implementation's crash or
broken protocol) is an error, a hung call a timeout, never a catch. A run whose only failure is an `unknown`
verdict or contention decides nothing (the next run goes ahead); when no run decided, that is an error too. Runs
against a variant are no evidence about the reference: nothing is written to artifacts/races.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.known_bad_verdict import KnownBadVerdict, judge, run_verdict
from fencecheck.problems import Problem, ProblemKind, decided, verdict_problem
from fencecheck.runners.contest_results import ScenarioResult, recheck
from fencecheck.runners.lockstep import LockstepMismatch

MAX_REPEATS = 3  # a variant's scenario runs at most this often before the variant counts as SURVIVED

__all__ = ["MAX_REPEATS", "Judged", "caught_by", "findings_of", "judge_variant"]


def findings_of(result: ScenarioResult) -> tuple[Problem, ...]:
    """What a run found, each problem of the kind it was found as; empty when it passed."""
    return result.findings()


def caught_by(result: ScenarioResult) -> list[str]:
    """The contract failures of a run, one line each (no errors: an unknown verdict or a crash is no catch)."""
    return [p.text for p in result.findings() if p.kind is ProblemKind.CONTRACT]


@attrs.frozen
class Judged:
    verdict: KnownBadVerdict
    runs: tuple[ScenarioResult, ...]
    seconds: float


def judge_variant(scenario: Any, implementation: Any, *, reference: Any, db: Any, emulator: Any, project_id: str,
                  counterexamples: Path, max_repeats: int = MAX_REPEATS) -> Judged:
    """Run `scenario` (anything with the race scenarios' `execute`) against `implementation` up to `max_repeats`
    times (until a run decides: a contract failure or an error; a run whose checker was merely undecided, or
    too contended to judge, goes on to the next), then check the reproduction, on the variant and once against
    `reference` (see the module docstring), all under fencecheck.checker.known_bad_verdict.judge. Harness crashes
    propagate."""

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

    def shown(system: Any, repeat: int) -> tuple[Problem, ...]:
        """What one more run against `system` found; a setup that disagreed is its mismatch (of its kind)."""
        try:
            return run(system, repeat)[0].findings()
        except LockstepMismatch as mismatch:
            return (mismatch.problem,)

    seconds, runs = 0.0, []  # the scenario runs' wall time up to the detecting one (emptying the project excluded)
    for _ in range(max_repeats):
        try:
            result, elapsed = run(implementation, len(runs))
        except LockstepMismatch as mismatch:
            # The scenario's setup (run in lockstep) already disagreed: a crash, or a sequential bug, which is the
            # stateful catalogue's to catch and reproduce; no race was run.
            return Judged(judge([mismatch.problem], reproduction="the scenario's setup, not its race"),
                          tuple(runs), round(seconds, 2))
        seconds += elapsed
        runs.append(result)
        if decided(result.findings()):  # an undecided or too contended run alone decides nothing
            break
    last = runs[-1]
    found = last.findings()
    if not decided(found):  # nothing decisive: survived, or an error if a run was undecided or contended
        return Judged(judge([p for result in runs for p in result.findings()]), tuple(runs), round(seconds, 2))
    early = run_verdict(found)
    if early is not None:  # an error or a hang: nothing to replay
        return Judged(early, tuple(runs), round(seconds, 2))
    if last.verdict == "illegal" and last.counterexample:
        rechecked = recheck(last.counterexample)
        again = verdict_problem(rechecked.status, rechecked.explain())
        replay: tuple[Problem, ...] = () if again is None else (again,)
        how = f"re-checked {last.counterexample}"
    else:
        replay = ()
        for i in range(max_repeats):  # until a run decides, as the detecting run did
            replay = shown(implementation, len(runs) + i)
            if decided(replay):
                break
        how = f"the scenario again against the variant, up to {max_repeats} runs"
    against = shown(reference, 0)
    reproduction = how if not against else f"{how}; against the reference: {against[0].text}"
    return Judged(judge(found, replay=replay, reference=against, reproduction=reproduction), tuple(runs),
                  round(seconds, 2))
