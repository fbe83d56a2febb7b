"""`fencecheck replay PATH`: run a saved counterexample again and say whether it still fails.

- A race of any system (`counterexamples/race-<system>_<scenario>-<id>.json`, or a result
  `artifacts/races/<system>_<scenario>-<n>.json`): see fencecheck/runners/replay_contest.py.

- A lockstep program, `counterexamples/<Machine>-<id>.py` (fencecheck.runners.counterexamples), is a pytest module:
  it runs in a pytest subprocess against the emulator and still fails when its test fails. The system it
  names (`known_bad.journal:<variant>`, a module) is imported first, so a missing one is a clear error
  rather than a collection traceback.
- A generated concurrent program, `counterexamples/parallel-<system>-<id>.json` (fencecheck.parallel): its
  saved history re-checked, then the program run `--repeat` times on fresh projects.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.linearizability import check
from fencecheck.errors import CounterexampleError, FencecheckError, SystemNotFoundError, UsageError
from fencecheck.parallel.case import COUNTEREXAMPLE_FORMAT as PARALLEL_FORMAT
from fencecheck.parallel.case import load_counterexample as load_parallel_counterexample
from fencecheck.parallel.case import recheck_parallel, replay_parallel_case
from fencecheck.plugin.registry import UNNAMED_SYSTEM
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.plugin.specs import describe_system, system_of_spec
from fencecheck.problems import Problem, kinds_of, verdict_problem
from fencecheck.report.failures import Replay, exception_text, recorded_kinds, summarize
from fencecheck.runners.replay_contest import load_contest, replay_contest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MAX_EXPLANATION_LINES = 15
KINDS = {".py": "stateful", ".json": "contest"}
EXPECTED = (
    "Expected a counterexample fencecheck wrote: a lockstep program counterexamples/<Machine>-<id>.py, a race "
    "counterexamples/race-<system>_<scenario>-<id>.json (or a race result "
    "artifacts/races/<system>_<scenario>-<n>.json), or a concurrent program "
    "counterexamples/parallel-<system>-<id>.json."
)


@dataclass
class Outcome:
    """What a replay found: `still_fails`, the lines that say why (printed as they are), and `problems`: what it
    found, each of its kind (fencecheck.problems; the gate's replays judge by them)."""

    still_fails: bool
    lines: list[str] = field(default_factory=list)
    problems: tuple[Problem, ...] = ()


def kind_of(path: Path) -> str:
    """"stateful" (a .py program), "parallel" (a generated concurrent program's .json) or "contest" (a race's
    .json, either system's)."""
    if not path.exists():
        raise CounterexampleError(f"{path}: no such file. {EXPECTED}")
    if not path.is_file():
        raise CounterexampleError(f"{path}: not a file. {EXPECTED}")
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise CounterexampleError(f"{path}: unknown kind of file ({path.suffix or 'no suffix'}). {EXPECTED}")
    if kind == "contest":
        data = _json(path)
        if isinstance(data, dict) and data.get("format") == PARALLEL_FORMAT:
            return "parallel"
    return kind


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None  # load_contest says what is wrong with it


def _cut(text: str, limit: int = MAX_EXPLANATION_LINES, indent: str = "  ") -> list[str]:
    lines = text.rstrip().splitlines()
    shown = [indent + line for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"{indent}... ({len(lines) - limit} more lines)")
    return shown


# --- lockstep programs ---------------------------------------------------------------------------------


def program_system(path: Path) -> str | None:
    """The system spec a counterexample program replays against (None: the reference), read from its
    source: `SYSTEM = system("<name>")` after `from <module> import system`, or
    `SYSTEM = ReferenceAPI.from_module("<module>")` (what fencecheck.runners.counterexamples writes)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError) as error:
        raise CounterexampleError(f"{path}: not valid Python ({type(error).__name__}: {error}). {EXPECTED}") from None
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)}
    if "test_replay" not in names or "OPS" not in assigned:
        raise CounterexampleError(f"{path}: not a lockstep counterexample (it has no OPS and test_replay). {EXPECTED}")
    imported = {alias.asname or alias.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SYSTEM"
                                                     for t in node.targets)):
            continue
        call = node.value
        argument = call.args[0] if isinstance(call, ast.Call) and call.args else None
        if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
            raise CounterexampleError(f"{path}: SYSTEM is not a call with a literal name; cannot tell which system "
                                      f"it replays. {EXPECTED}")
        if isinstance(call.func, ast.Name) and imported.get(call.func.id):  # system("<name>")
            return f"{imported[call.func.id]}:{argument.value}"
        return argument.value  # ReferenceAPI.from_module("<module>")
    return None


def _pytest_command(path: Path, junit: Path) -> list[str]:
    command = [sys.executable, "-m", "pytest", str(path.resolve()), "-q", "-p", "no:cacheprovider",
               # The emulator fixtures come from this plugin; named explicitly, so a file outside the project
               # (no conftest above it) replays too.
               "-p", "fencecheck.suites.pytest_plugin", f"--junitxml={junit}"]
    if (PROJECT_ROOT / "pyproject.toml").is_file():
        command += ["--rootdir", str(PROJECT_ROOT), "-c", str(PROJECT_ROOT / "pyproject.toml")]
    return command


def _junit_failure(junit: Path) -> tuple[str, str, tuple[str, ...]] | None:
    """("failure" or "error", the exception text, the problem kinds the test recorded) of the first test that did
    not pass, or None."""
    try:
        root = ElementTree.fromstring(junit.read_text(encoding="utf-8"))
    except (OSError, ElementTree.ParseError):
        return None
    for case in root.iter("testcase"):
        for tag in ("failure", "error"):
            element = case.find(tag)
            if element is not None:
                return tag, exception_text(element), recorded_kinds(case)
    return None


def replay_program(
    path: Path, host: str, system: Any, *, run: Callable[..., Any] = subprocess.run
) -> Outcome:
    """Run a lockstep counterexample with pytest against the emulator at `host`; `system` is the implementation
    the file names (`resolve_implementation(program_system(path))`, resolved by the caller before it starts an
    emulator: a journal's or a lantern's)."""
    lines = [f"lockstep program {path} against {describe_system(system)}, emulator at {host}"]
    env = {**os.environ, "FIRESTORE_EMULATOR_HOST": host}
    with tempfile.TemporaryDirectory(prefix="fencecheck-replay-") as tmp:
        junit = Path(tmp) / "replay.xml"
        done = run(_pytest_command(path, junit), cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                   check=False)
        failure = _junit_failure(junit)
    output = f"{done.stdout or ''}{done.stderr or ''}"
    if done.returncode == 0:
        return Outcome(False, [*lines, "no longer fails: every step agrees with the model"])
    if done.returncode == 1 and failure is not None and failure[0] == "failure":
        text, kinds = failure[1], failure[2]
        found = tuple(Problem(kind, summarize(text)[0]) for kind in kinds)
        return Outcome(True, [*lines, f"still fails: {summarize(text)[0]}", *_cut(text, limit=40)], found)
    reason = summarize(failure[1])[0] if failure else (output.strip().splitlines() or ["(no output)"])[-1]
    raise FencecheckError(
        f"{path} could not be replayed: pytest exited with code {done.returncode} ({reason}). Run it directly "
        f"to see everything: .venv/bin/python -m pytest {path}\n" + "\n".join(_cut(output, limit=20))
    )


# --- races ---------------------------------------------------------------------------------------------


def _verdict_lines(verdict: Any) -> list[str]:
    return [] if verdict.ok else _cut(verdict.explain())


def replay_saved_contest(path: Path, emulator: Any, saved: Any = None) -> Outcome:
    found, lines = replay_contest(saved or load_contest(path), emulator, _verdict_lines)
    return Outcome(bool(found), lines, found)


# --- generated concurrent programs ---------------------------------------------------------------------


def load_parallel(path: Path) -> Any:
    try:
        return load_parallel_counterexample(path)
    except (KeyError, TypeError, ValueError) as error:
        raise CounterexampleError(f"{path}: malformed concurrent program ({error}). {EXPECTED}") from None


def replay_parallel_program(path: Path, emulator: Any, system: Any, repeat: int) -> Outcome:
    """The saved history re-checked, then the program run `repeat` times on fresh projects: a race is lost
    only under some interleavings, so one passing run proves nothing."""
    lines = [f"concurrent program {path} against {describe_system(system)}, emulator at {emulator.host}"]
    verdict = recheck_parallel(path)
    if verdict is not None:
        lines += [f"saved history, re-checked by the pure checker: {verdict.status}", *_verdict_lines(verdict)]
    result = replay_parallel_case(path, emulator, repeat=repeat, system=system)
    lines += _cut(result.summary(), limit=40)
    if result.failed:
        return Outcome(True, [*lines, f"still fails ({result.classification})"], result.findings())
    # contended repetitions are no failure of the contract, and no pass either: their problems say so
    return Outcome(False, [*lines, f"no longer fails in {len(result.repetitions)} runs"], result.findings())


# --- against another implementation (`replay PATH --system SPEC`, the gate's replays) ------------------

REFERENCE_SPEC = "reference"  # `--system reference`: the reference of the file's own system
DEFAULT_REPEAT = 5


@dataclass(frozen=True)
class Prepared:
    """A counterexample checked and its implementation resolved, before any emulator starts."""

    path: Path
    kind: str
    loaded: Any  # SavedContest, a parallel program, or None (a lockstep program)
    system: Any  # the implementation it replays against (a contest resolves its own: None)
    program: str | None = None  # a lockstep program's source with SYSTEM rewritten (`--system`)


def _file_spec(path: Path, kind: str, loaded: Any) -> tuple[str, str | None]:
    """(the system a counterexample belongs to, the implementation spec it names; None: its reference)."""
    if kind == "contest":
        return loaded.plugin.name, loaded.implementation
    if kind == "parallel":  # the program names its system; the file its implementation ("reference": its own)
        plugin = loaded.plugin
        return plugin.name, plugin.spec_of(plugin.reference) if loaded.system == REFERENCE_SPEC else loaded.system
    spec = program_system(path)
    return system_of_spec(spec) or UNNAMED_SYSTEM, spec


def _override(path: Path, system_name: str, spec: str) -> str | None:
    """The spec `--system SPEC` names for a counterexample of `system_name` (its reference's own spec for
    `reference`)."""
    spec = spec.strip()
    if spec == REFERENCE_SPEC:
        own = plugin_named(system_name)
        return own.spec_of(own.reference)
    named = system_of_spec(spec)
    if named != system_name:
        raise UsageError(f"--system {spec!r} names a {named or 'missing'} implementation, but {path} is a "
                         f"counterexample of the {system_name}: expected {REFERENCE_SPEC!r}, "
                         f"known_bad.{system_name}:<variant> or {system_name}:<module>")
    return spec


def _resolve(system_name: str, spec: str | None) -> Any:
    try:
        return plugin_named(system_name).resolve(spec)
    except SystemNotFoundError as error:
        raise UsageError(f"--system: {error}") from None


def _rewrite_system(path: Path, spec: str | None) -> str:
    """The program's source with its SYSTEM line naming `spec` instead (resolved as the suites resolve it)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    node = next((n for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "SYSTEM" for t in n.targets)), None)
    if node is None:
        raise UsageError(f"{path} names no SYSTEM (it replays the journal's reference only); --system cannot "
                         f"point it elsewhere")
    lines = source.splitlines(keepends=True)
    line = (f"SYSTEM = __import__('fencecheck.plugin.specs', fromlist=['resolve_implementation'])"
            f".resolve_implementation({spec!r})\n")
    end = node.end_lineno or node.lineno
    return "".join([*lines[: node.lineno - 1], line, *lines[end:]])


def prepare(path: Path, system: str | None = None) -> Prepared:
    """Everything that can be wrong with the file (or with `system`, a `--system` spec) is found here, before
    an emulator starts. `system` None: the implementation the file names."""
    kind = kind_of(path)
    loaded: Any = None
    if kind == "parallel":
        loaded = load_parallel(path)
    elif kind == "contest":
        loaded = load_contest(path)
    system_name, spec = _file_spec(path, kind, loaded)
    program = None
    if system is not None:
        spec = _override(path, system_name, system)
        if kind == "stateful":
            program = _rewrite_system(path, spec)
    if kind == "contest":
        try:
            loaded.plugin.resolve(spec)
        except SystemNotFoundError as error:
            raise UsageError(f"--system: {error}") from None
        return Prepared(path, kind, attrs.evolve(loaded, implementation=spec), None)
    return Prepared(path, kind, loaded, _resolve(system_name, spec), program)


def run_prepared(prepared: Prepared, emulator: Any, repeat: int = DEFAULT_REPEAT) -> Outcome:
    """Replay a prepared counterexample on `emulator` (as `fencecheck replay` does)."""
    if prepared.kind == "contest":
        return replay_saved_contest(prepared.path, emulator, prepared.loaded)
    if prepared.kind == "parallel":
        return replay_parallel_program(prepared.path, emulator, prepared.system, repeat)
    if prepared.program is None:
        return replay_program(prepared.path, emulator.host, prepared.system)
    with tempfile.TemporaryDirectory(prefix="fencecheck-replay-as-") as tmp:
        copy = Path(tmp) / prepared.path.name
        copy.write_text(prepared.program, encoding="utf-8")
        return replay_program(copy, emulator.host, prepared.system)


def saved_history_problems(prepared: Prepared) -> tuple[Problem, ...]:
    """A race's (a): the saved history re-checked by the pure checker, as a problem (illegal: a contract
    finding; unknown: undecided; ok: none)."""
    saved = prepared.loaded
    verdict = check(saved.history, plugin=saved.plugin, initial_state=saved.initial_state)
    found = verdict_problem(verdict.status, verdict.explain())
    return () if found is None else (found,)


def replay_both(path: Path, variant: str, emulator: Any, repeat: int = DEFAULT_REPEAT) -> Replay:
    """The gate's two replays of a counterexample (fencecheck.checker.known_bad_verdict), each reported as the kinds of
    the problems it found: (a) against the variant (a race's or contest's: its saved history re-checked, since
    racing again is not deterministic), which must show a contract finding; (b) against the reference, which must
    show none. A file that cannot be replayed is a Replay with a `problem` and neither answer."""
    shown = str(path)
    try:
        on_variant = prepare(path, variant)
        on_reference = prepare(path, REFERENCE_SPEC)
        if on_variant.kind == "contest":
            found = saved_history_problems(on_variant)
        else:
            found = run_prepared(on_variant, emulator, repeat).problems
        against = run_prepared(on_reference, emulator, repeat).problems
    except FencecheckError as error:
        return Replay(shown, None, None, str(error).splitlines()[0].split(" Expected ")[0])
    return Replay(shown, kinds_of(found), kinds_of(against))
