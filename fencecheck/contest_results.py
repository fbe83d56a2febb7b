"""A contest run as evidence: its result record, its files, and one contest end to end.

- `contest_result(run, ...)`: the run as the race suite's `fencecheck.race.ScenarioResult`;
- `save_result` writes it as a `fencecheck.race.RESULT_FORMAT` document (the evidence report's input) to
  `<artifacts>/<system>_<scenario>-<repeat>.json`;
- `save_counterexample` writes a failed run's history, setup and implementation to
  `<counterexamples>/race-<system>_<scenario>-<shortid>.json`; `load_saved` reads either file back and
  `recheck` judges it again (pure: the final documents are part of the history);
- `execute_contest`: run (`fencecheck.contest.run_contest`), judge, build the result and save both files.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fencecheck.contest import Contest, ContestRun, RacerRecord, fresh_log, run_contest, setup_state
from fencecheck.definite import contention_problem, contract_unavailable
from fencecheck.history import History
from fencecheck.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.plugin import SystemPlugin
from fencecheck.plugins import plugin as plugin_named
from fencecheck.race import RESULT_FORMAT, ScenarioResult, answer_label, write_json

COUNTEREXAMPLE_FORMAT = "fencecheck.contest-counterexample/1"


# --- results ------------------------------------------------------------------------------------------------


def contest_result(
    run: ContestRun,
    *,
    repeat: int = 0,
    problems: Sequence[str] = (),
    promise_problems: Sequence[str] = (),
    counterexample: str | None = None,
    project_id: str | None = None,
    lock_timeouts: int | None = None,
) -> ScenarioResult:
    """The run as the race suite's result record. `problems`: the caller's structural findings (the system's
    invariants on the stored documents), added to the run's own; `promise_problems`: the scenario's."""
    records = run.racers
    calls = [call for record in (*records, *run.followers) for call in record.calls]  # attempts: every call
    definite = sum(1 for record in records if record.definite)
    unavailable_ids = contract_unavailable(run.verdict, run.initial_state)
    excused = sum(1 for r in records if not r.definite and r.calls and r.calls[-1].call_id in unavailable_ids)
    return ScenarioResult(
        scenario=run.name,
        repeat=repeat,
        width=run.contest.width,
        race_seconds=round(run.race_seconds, 4),
        total_seconds=round(run.total_seconds, 4),
        outcomes=dict(sorted(run.labels().items())),
        first_outcomes=dict(sorted(Counter(answer_label(r.calls[0].outcome) for r in records if r.calls).items())),
        callers=len(records),
        definite_callers=definite,
        definite_share=definite / len(records),
        whole_call_retries=sum(record.retries for record in records),
        retried_callers=sum(1 for record in records if record.retries),
        calls=len(run.history.calls),
        attempts=sum(call.transaction_attempts for call in calls),
        aborts=sum(call.aborts for call in calls),
        max_attempts=max((call.transaction_attempts for call in calls), default=0),
        verdict=run.verdict.status,
        checker_ms=round(run.checker_seconds * 1000, 3),
        checker_steps=run.verdict.steps,
        problems=(*run.problems, *problems),
        promise_problems=tuple(promise_problems),
        explanation=None if run.verdict.ok else run.verdict.explain(),
        counterexample=counterexample,
        project_id=project_id,
        key_hash=None,
        lock_timeouts=lock_timeouts,
        contract_unavailable_callers=excused,
        contention=contention_problem(definite + excused, len(records)),
    )


def _setup_json(plugin: SystemPlugin, setup: Sequence[Any]) -> dict[str, Any]:
    header, entries = plugin.ops_to_json(list(setup))
    out: dict[str, Any] = {"setup": entries}
    if header:
        out["setupHeader"] = header
    return out


def _racers_json(records: Sequence[RacerRecord]) -> list[dict[str, Any]]:
    return [
        {
            "caller": record.racer.name,
            "calls": [call.call_id for call in record.calls],
            "answers": [answer_label(call.outcome) for call in record.calls],
            "transactionAttempts": [call.transaction_attempts for call in record.calls],
            "aborts": [call.aborts for call in record.calls],
            "looks": [call.looks for call in record.calls],
        }
        for record in records
    ]


def result_document(result: ScenarioResult, run: ContestRun) -> dict[str, Any]:
    """The JSON saved per run: the result record, the system and implementation, the setup, each racer's calls
    and the full history (final documents included)."""
    out = result.to_json()
    out["system"] = run.plugin.name
    out["implementation"] = run.plugin.spec_of(run.implementation)
    out.update(_setup_json(run.plugin, run.contest.setup))
    out["callerAttempts"] = _racers_json(run.racers)
    out["afterAttempts"] = _racers_json(run.followers)
    out["history"] = run.history.to_json()
    return out


def save_result(result: ScenarioResult, run: ContestRun, directory: Path) -> Path:
    """`<directory>/<system>_<scenario>-<repeat>.json` (the name is `result.scenario`, i.e. `run.name`)."""
    return write_json(directory / f"{result.scenario}-{result.repeat}.json", result_document(result, run))


def save_counterexample(run: ContestRun, directory: Path) -> Path:
    """`<directory>/race-<system>_<scenario>-<shortid>.json`: setup, history (final documents included), system,
    implementation and the verdict with its explanation; `recheck(path)` judges it again. The short id is a
    digest of setup and history, so one history always lands in one file."""
    setup = _setup_json(run.plugin, run.contest.setup)
    history = run.history.to_json()
    digest = hashlib.sha256(json.dumps([setup, history], sort_keys=True, default=str).encode()).hexdigest()
    data = {
        "format": COUNTEREXAMPLE_FORMAT,
        "scenario": run.name,
        "system": run.plugin.name,
        "implementation": run.plugin.spec_of(run.implementation),
        "verdict": run.verdict.status,
        "explanation": run.verdict.explain(),
        "racers": [record.racer.name for record in run.racers],
        "followers": [record.racer.name for record in run.followers],
        **setup,
        "history": history,
    }
    return write_json(directory / f"race-{run.name}-{digest[:10]}.json", data)


def load_saved(path: Path | str) -> tuple[SystemPlugin, History, Any]:
    """A saved contest (counterexample or result file): its plug-in, its history and the checker's initial
    state (the setup stepped through the model)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") not in (COUNTEREXAMPLE_FORMAT, RESULT_FORMAT):
        raise ValueError(f"{path}: not a saved contest")
    plugin = plugin_named(data["system"])
    setup = plugin.ops_from_json(data.get("setupHeader", {}), data["setup"])
    return plugin, History.from_json(data["history"]), setup_state(plugin, setup)


def recheck(path: Path | str, *, budget: int = DEFAULT_BUDGET) -> Verdict:
    """Judge a saved contest again (pure: its stored final documents are part of the history)."""
    plugin, history, initial = load_saved(path)
    return check(history, plugin=plugin, initial_state=initial, budget=budget)


# --- one contest, end to end --------------------------------------------------------------------------------


def execute_contest(
    db: Any,
    contest: Contest,
    *,
    plugin: SystemPlugin,
    implementation: Any = None,
    structural: Callable[[ContestRun], Sequence[str]] = lambda _run: (),
    promise: Callable[[ContestRun], Sequence[str]] = lambda _run: (),
    repeat: int = 0,
    artifacts_dir: Path | None = None,
    counterexamples_dir: Path | None = None,
    emulator: Any = None,
    project_id: str | None = None,
    budget: int = DEFAULT_BUDGET,
    new_log: Callable[[int, int], Any] = fresh_log,
) -> tuple[ScenarioResult, ContestRun]:
    """Run and judge `contest`; `structural(run)` and `promise(run)` add the system's and the scenario's
    findings. Saves the result in `artifacts_dir` (None: not saved, e.g. for a run against a known-bad
    implementation, which is no evidence about the reference) and, when the verdict is not ok, the history
    in `counterexamples_dir`."""
    locks_before = emulator.lock_timeout_count() if emulator is not None else None
    run = run_contest(db, contest, plugin=plugin, implementation=implementation, budget=budget, new_log=new_log)
    locks_after = emulator.lock_timeout_count() if emulator is not None else None
    counterexample = None
    if not run.verdict.ok and counterexamples_dir is not None:
        counterexample = str(save_counterexample(run, counterexamples_dir))
    result = contest_result(
        run,
        repeat=repeat,
        problems=structural(run),
        promise_problems=promise(run),
        counterexample=counterexample,
        project_id=project_id,
        lock_timeouts=None if locks_before is None or locks_after is None else locks_after - locks_before,
    )
    if artifacts_dir is not None:
        save_result(result, run, artifacts_dir)
    return result, run


__all__ = [
    "COUNTEREXAMPLE_FORMAT",
    "contest_result",
    "execute_contest",
    "load_saved",
    "recheck",
    "result_document",
    "save_counterexample",
    "save_result",
]
