"""`fencecheck check FILE`: the linearizability checker on a saved history, alone (no emulator, no system).

It takes any file that holds a history of any plug-in:

- a bare history (`fencecheck.history/1`, `History.to_json`), checked from the plug-in's initial state;
- a race result or counterexample of either system (`fencecheck.race-result/2`,
  `fencecheck.race-counterexample/2`): checked from the model state after its setup, which the file carries;
  its `history` names its plug-in. A version-1 file is a usage error that says how to regenerate it;
- a generated concurrent program's counterexample (`fencecheck.parallel-counterexample/1`): from the model
  state after its prefix;
- a checker fixture (`tests/fixtures/histories/*.json`: a `history` beside its `expect`ation).

It prints the verdict with its explanation, then one line per partition. Exit codes (`main`): 0 ok,
1 illegal, 3 unknown (the budget ran out), 2 usage (a missing or malformed file, an unknown plug-in).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.history import HISTORY_FORMAT, History
from fencecheck.checker.linearizability import DEFAULT_BUDGET, ILLEGAL, OK, UNKNOWN, Verdict, check
from fencecheck.errors import CounterexampleError, FencecheckError
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import plugin as plugin_named

EXIT_CODES = {OK: 0, ILLEGAL: 1, UNKNOWN: 3}
RACE_FORMATS = ("fencecheck.race-result/2", "fencecheck.race-counterexample/2")  # fencecheck.runners.contest_results
OLD_RACE_FORMATS = (  # refused with how to regenerate (fencecheck.runners.contest_results.saved_format)
    "fencecheck.race-result/1", "fencecheck.race-counterexample/1", "fencecheck.contest-counterexample/1")
PARALLEL_FORMAT = "fencecheck.parallel-counterexample/1"
ACCEPTED = (
    f"Expected a saved history: {HISTORY_FORMAT}, a race result or counterexample ({', '.join(RACE_FORMATS)}),"
    f" a {PARALLEL_FORMAT} file, or a checker fixture ({{'history': ..., 'expect': ...}})."
)


@attrs.frozen(eq=False)
class Saved:
    """What a file gives the checker: the plug-in, the history and the model state it starts from."""

    kind: str  # "history", "race", "parallel", "fixture"
    plugin: SystemPlugin
    history: History
    initial_state: Any


def _parallel(data: dict[str, Any]) -> tuple[History, Any]:
    from fencecheck.parallel.program import ParallelProgram

    if data.get("history") is None:
        raise CounterexampleError(
            "the program failed in its sequential prefix, so the file saved no concurrent history to check;"
            " replay it with `fencecheck replay` instead"
        )
    state, _results = ParallelProgram.from_json(data["program"]).prefix_state()
    return History.from_json(data["history"]), state


def _parse(data: object) -> Saved:
    if not isinstance(data, dict):
        raise ValueError("the file is not a JSON object")
    form = data.get("format")
    if form == HISTORY_FORMAT:
        history = History.from_json(data)
        plugin = plugin_named(history.system)
        return Saved("history", plugin, history, plugin.initial_state())
    if form in RACE_FORMATS or form in OLD_RACE_FORMATS:
        from fencecheck.runners.contest_results import (  # the race runner loads only for race files
            saved_format,
            state_after_setup,
        )

        saved_format(data, "the file")  # a version-1 file: a CounterexampleError saying how to regenerate it
        history = History.from_json(data["history"])
        plugin = plugin_named(history.system)
        return Saved("race", plugin, history, state_after_setup(plugin, data))
    if form == PARALLEL_FORMAT:
        history, state = _parallel(data)
        return Saved("parallel", plugin_named(history.system), history, state)
    if form is None and isinstance(data.get("history"), dict) and "expect" in data:
        history = History.from_json(data["history"])
        plugin = plugin_named(history.system)
        return Saved("fixture", plugin, history, plugin.initial_state())
    raise ValueError(f"unknown format {form!r}" if form is not None else "no `format` key")


def load(path: Path | str) -> Saved:
    """Read a saved history; every problem with the file is a `CounterexampleError` saying what was expected
    (an unknown plug-in stays a `SystemNotFoundError`, which names the known ones)."""
    path = Path(path)
    if not path.is_file():
        raise CounterexampleError(f"{path}: {'not a file' if path.exists() else 'no such file'}. {ACCEPTED}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CounterexampleError(f"{path}: not JSON ({error}). {ACCEPTED}") from None
    try:
        return _parse(data)
    except FencecheckError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        what = f"missing key {error}" if isinstance(error, KeyError) else str(error)
        raise CounterexampleError(f"{path}: malformed: {what}. {ACCEPTED}") from None


def partition_lines(verdict: Verdict) -> list[str]:
    noun = verdict.plugin.partition_noun
    lines = [f"{len(verdict.partitions)} {noun}(s), in order of first invocation:"]
    for p in verdict.partitions:
        calls = len(p.order) + len(p.omitted) if p.status == OK else len(p.order)
        placed = f", {calls} calls placed" if p.status != "not checked" else ""
        lines.append(f"  {noun} {p.key_hash[:8]}: {p.status} ({p.steps} placement attempts{placed})")
    return lines


def main(
    path: str,
    *,
    full: bool = False,
    budget: int = DEFAULT_BUDGET,
    processes: int = 1,
    out: Callable[[str], None] = print,
) -> int:
    """Check the history in `path` and print the verdict; returns the exit code (0 ok, 1 illegal, 3 unknown).
    A bad file raises (`fencecheck.cli.main` turns that into exit 2)."""
    saved = load(path)
    verdict = check(
        saved.history,
        plugin=saved.plugin,
        initial_state=saved.initial_state,
        budget=budget,
        full=full,
        processes=processes,
    )
    out(f"{path}: {saved.plugin.name} {saved.kind}, {len(saved.history.calls)} calls: {verdict.status}")
    out(verdict.explain())
    for line in partition_lines(verdict):
        out(line)
    return EXIT_CODES[verdict.status]
