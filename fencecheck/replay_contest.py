"""`fencecheck replay` for a saved contest of any system (fencecheck.contest): a counterexample
`counterexamples/race-<system>_<scenario>-<id>.json` or a result `artifacts/races/<system>_<scenario>-<n>.json`.

As for the journal's races (fencecheck/replay.py): (a) the saved history is judged again by the pure checker,
with the plug-in the history names; (b) the same contest runs again on a fresh emulator project against the
implementation the file names: the same setup in lockstep, the same racers (each its first recorded call)
released together, the followers after them. It still fails unless (b) is linearizable and the harness saw no
problem. The scenario's own promise and the system's invariants are the suite's: run the suite for those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from fencecheck import contest
from fencecheck.contest_results import COUNTEREXAMPLE_FORMAT
from fencecheck.emulator import close_client, new_run_token, project_id_for
from fencecheck.errors import CounterexampleError, FencecheckError, SystemNotFoundError
from fencecheck.history import History
from fencecheck.linearizability import check
from fencecheck.lockstep import LockstepMismatch
from fencecheck.plugin import SystemPlugin
from fencecheck.plugins import plugin as plugin_named
from fencecheck.race import RESULT_FORMAT

EXPECTED = ("Expected a saved contest: counterexamples/race-<system>_<scenario>-<id>.json or "
            "artifacts/races/<system>_<scenario>-<n>.json.")


def is_contest(data: Any) -> bool:
    """A contest file: its own counterexample format, or a race result whose history is not the journal's."""
    if not isinstance(data, dict):
        return False
    if data.get("format") == COUNTEREXAMPLE_FORMAT:
        return True
    history = data.get("history")
    return data.get("format") == RESULT_FORMAT and isinstance(history, dict) and history.get("system") not in (
        None, "journal")


@attrs.frozen(eq=False)
class SavedContest:
    path: Path
    plugin: SystemPlugin
    implementation: str | None  # as the file spells it; None: the reference
    contest: contest.Contest
    history: History
    initial_state: Any
    saved_verdict: str | None


def _names(data: dict[str, Any], counterexample_key: str, result_key: str) -> list[str]:
    if counterexample_key in data:
        return list(data[counterexample_key])
    return [entry["caller"] for entry in data.get(result_key, [])]


def load_contest(path: Path) -> SavedContest:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        plugin = plugin_named(data["history"].get("system", "journal"))
        setup = plugin.ops_from_json(data.get("setupHeader", {}), data["setup"])
        history = History.from_json(data["history"])
        racers, followers = _names(data, "racers", "callerAttempts"), _names(data, "followers", "afterAttempts")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CounterexampleError(f"{path}: cannot be read ({type(error).__name__}: {error}). {EXPECTED}") from None
    except (KeyError, TypeError, ValueError, AttributeError, SystemNotFoundError) as error:
        raise CounterexampleError(f"{path}: malformed saved contest ({type(error).__name__}: {error}). "
                                  f"{EXPECTED}") from None
    first_op: dict[str, Any] = {}
    for call in sorted(history.calls, key=lambda c: c.id):
        first_op.setdefault(call.caller, call.op)  # a whole-call retry repeats the same operation
    missing = [name for name in (*racers, *followers) if name not in first_op]
    if not racers or missing:
        raise CounterexampleError(f"{path}: the saved history has no call of {missing or 'any racer'}; there is "
                                  f"nothing to replay. {EXPECTED}")
    clocks = [now for op in (*setup, *first_op.values()) if (now := plugin.clock_of(op)) is not None]
    try:
        rebuilt = contest.Contest(
            str(data.get("scenario", "unknown")),
            setup,
            [contest.Racer(name, first_op[name]) for name in racers],
            followers=[contest.Racer(name, first_op[name]) for name in followers],
            epoch=min(clocks, default=None),
        )
    except ValueError as error:
        raise CounterexampleError(f"{path}: not a valid contest ({error}). {EXPECTED}") from None
    implementation = data.get("implementation")
    return SavedContest(path, plugin, implementation if isinstance(implementation, str) else None, rebuilt,
                        history, contest.setup_state(plugin, setup), data.get("verdict"))


def replay_contest(saved: SavedContest, emulator: Any, explain: Any) -> tuple[bool, list[str]]:
    """(a) and (b) of the module doc; returns (still fails, lines). `explain(verdict)` gives a verdict's lines."""
    implementation = saved.plugin.resolve(saved.implementation)
    spec = saved.plugin.spec_of(implementation)
    lines = [f"{saved.plugin.name} contest {saved.contest.scenario} from {saved.path}: {saved.contest.width} racers "
             f"released together, {len(saved.contest.followers)} after them, against {spec}"]
    verdict = check(saved.history, plugin=saved.plugin, initial_state=saved.initial_state)
    was = f" (saved verdict: {saved.saved_verdict})" if saved.saved_verdict not in (None, verdict.status) else ""
    lines += [f"saved history, re-checked by the pure checker: {verdict.status}{was}", *explain(verdict)]
    project = project_id_for(new_run_token(), "replay", 1)
    db = emulator.client(project)
    try:
        run = contest.run_contest(db, saved.contest, plugin=saved.plugin, implementation=implementation)
    except LockstepMismatch as mismatch:
        return True, [*lines, f"re-executed at {emulator.host}: the setup already disagrees with the model",
                      *str(mismatch).splitlines()[:15], "still fails"]
    except RuntimeError as error:  # the harness itself (a broken barrier, a crashed racer thread)
        raise FencecheckError(f"the contest could not be run again: {error}") from None
    finally:
        emulator.reset(project)
        close_client(db)
    lines += [f"re-executed at {emulator.host} with the same setup and calls: {run.verdict.status}",
              *explain(run.verdict), *(f"  problem: {p}" for p in run.problems)]
    still = not run.verdict.ok or bool(run.problems)
    lines.append("still fails" if still else "no longer fails (this run's interleaving was linearizable)")
    return still, lines
