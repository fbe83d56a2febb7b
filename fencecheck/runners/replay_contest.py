"""`fencecheck replay` for a saved race of any system (fencecheck.runners.contest): a counterexample
`counterexamples/race-<system>_<scenario>-<id>.json` or a result `artifacts/races/<system>_<scenario>-<n>.json`
(`fencecheck.runners.contest_results`, format 2; a version-1 file is refused with a message that says how to
regenerate it).

(a) the saved history is judged again by the pure checker, with the plug-in the file names; (b) the same
contest, as the file records it (setup, racers with their first attempts, followers, facts), runs again on a
fresh emulator project against the implementation the file names: the setup in lockstep, the racers
released together, the followers after them, the plug-in's `contest_problems` on the stored documents. It
still fails unless (b) is linearizable and the harness saw no problem. A race is not deterministic, so "no
longer fails" means "this interleaving was fine this time". The scenario's own promise is the suite's: run
the suite for that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.history import History
from fencecheck.checker.linearizability import check
from fencecheck.emulator.lifecycle import close_client, new_run_token, project_id_for
from fencecheck.errors import CounterexampleError, FencecheckError, SystemNotFoundError
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.problems import Problem, verdict_problem
from fencecheck.runners import contest
from fencecheck.runners.contest_results import contest_from_json, saved_format
from fencecheck.runners.contest_simulation import setup_state
from fencecheck.runners.lockstep import LockstepMismatch

EXPECTED = ("Expected a saved race: counterexamples/race-<system>_<scenario>-<id>.json or "
            "artifacts/races/<system>_<scenario>-<n>.json.")


@attrs.frozen(eq=False)
class SavedContest:
    path: Path
    plugin: SystemPlugin
    implementation: str | None  # as the file spells it; None: the reference
    contest: contest.Contest
    history: History
    initial_state: Any
    saved_verdict: str | None


def load_contest(path: Path) -> SavedContest:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise CounterexampleError(f"{path}: not a text file ({error.reason}). {EXPECTED}") from None
    except json.JSONDecodeError as error:
        raise CounterexampleError(f"{path}: not valid JSON (line {error.lineno}: {error.msg}). {EXPECTED}") from None
    except OSError as error:
        raise CounterexampleError(f"{path}: cannot be read ({type(error).__name__}: {error}). {EXPECTED}") from None
    saved_format(data, str(path))
    try:
        plugin = plugin_named(data["system"])
        rebuilt = contest_from_json(plugin, data)
        history = History.from_json(data["history"])
    except KeyError as error:
        raise CounterexampleError(f"{path}: malformed saved race: no {error.args[0]!r} key. {EXPECTED}") from None
    except (TypeError, ValueError, AttributeError, SystemNotFoundError) as error:
        raise CounterexampleError(f"{path}: malformed saved race ({type(error).__name__}: {error}). "
                                  f"{EXPECTED}") from None
    if not history.calls:
        raise CounterexampleError(f"{path}: the saved history has no calls; there is nothing to replay.")
    implementation = data.get("implementation")
    if implementation is not None and not isinstance(implementation, str):
        raise CounterexampleError(f"{path}: \"implementation\" must be a spec or null, not "
                                  f"{type(implementation).__name__}. {EXPECTED}")
    return SavedContest(path, plugin, implementation, rebuilt, history,
                        setup_state(plugin, rebuilt.setup), data.get("verdict"))


def replay_contest(saved: SavedContest, emulator: Any, explain: Any) -> tuple[tuple[Problem, ...], list[str]]:
    """(a) and (b) of the module doc; returns (what (b) found, each problem of its kind: it still fails unless
    empty; lines). `explain(verdict)` gives a verdict's lines."""
    implementation = saved.plugin.resolve(saved.implementation)
    spec = saved.plugin.spec_of(implementation)
    name = contest.qualified_name(saved.plugin, saved.contest.scenario)
    lines = [f"{saved.plugin.name} contest {name} from {saved.path}: {saved.contest.width} racers "
             f"released together, {len(saved.contest.followers)} after them, against {spec}"]
    verdict = check(saved.history, plugin=saved.plugin, initial_state=saved.initial_state)
    was = f" (saved verdict: {saved.saved_verdict})" if saved.saved_verdict not in (None, verdict.status) else ""
    lines += [f"saved history, re-checked by the pure checker: {verdict.status}{was}", *explain(verdict)]
    project = project_id_for(new_run_token(), "replay", 1)
    db = emulator.client(project)
    try:
        run = contest.run_contest(db, saved.contest, plugin=saved.plugin, implementation=implementation)
    except LockstepMismatch as mismatch:
        return (mismatch.problem,), [*lines, f"re-executed at {emulator.host}: the setup already disagrees with the "
                                     f"model", *str(mismatch).splitlines()[:15], "still fails"]
    except RuntimeError as error:  # the harness itself (a broken barrier, a crashed racer thread)
        raise FencecheckError(f"the contest could not be run again: {error}") from None
    finally:
        emulator.reset(project)
        close_client(db)
    lines += [f"re-executed at {emulator.host} with the same setup and calls: {run.verdict.status}",
              *explain(run.verdict), *(f"  problem ({p.kind.value}): {p.text}" for p in run.problems)]
    verdict_found = verdict_problem(run.verdict.status, run.verdict.explain())
    found = (*([verdict_found] if verdict_found is not None else []), *run.problems)
    lines.append("still fails" if found else "no longer fails (this run's interleaving was linearizable)")
    return found, lines
