"""Counterexamples for humans: a failing lockstep program as a standalone pytest file.

`to_source(op)` renders a model operation as a Python expression that evaluates back to an equal value
(`repr` does not round-trip: `FaultKind` members print as `<FaultKind.X: 'x'>`). `program_source(...)`
renders a whole program as a test module that replays it with `fencecheck.lockstep.replay` on the
`firestore_db` fixture; `write_counterexample(...)` stores it as `counterexamples/<machine>-<shortid>.py`
(the short id is a digest of the program, so the same program always lands in the same file).

The system replayed is the reference unless `system_module` names another: an importable module with the
four journal functions (`ReferenceAPI.from_module(...)`), or `"package.module:name"` for a named system that
the module builds with `system(name)` (the known-bad catalogue: `"known_bad.journal:<variant>"`).
"""

from __future__ import annotations

import enum
import hashlib
import textwrap
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import attrs

from model.journal import CommandRef, InjectFault, Operation, describe_op

_WIDTH = 110


def _datetime_source(moment: datetime) -> str:
    if moment.utcoffset() != timedelta(0):
        raise ValueError(f"only aware UTC datetimes can be rendered, got {moment!r}")
    parts = [moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second, moment.microsecond]
    while len(parts) > 3 and parts[-1] == 0:
        parts.pop()
    return f"datetime({', '.join(map(str, parts))}, tzinfo=UTC)"


def to_source(value: Any, names: dict[Any, str] | None = None, *, indent: int | None = None) -> str:
    """A Python expression for `value` (model ops, CommandRef, FaultKind, datetimes, plain literals).

    `names` maps values to variable names used instead of spelling them out (e.g. hoisted CommandRefs).
    With `indent` (the column the expression starts at), calls too long for one line put one argument
    per line.
    """
    if names and _hashable(value) and value in names:
        return names[value]
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, datetime):
        return _datetime_source(value)
    if attrs.has(type(value)):
        name, fields = type(value).__name__, attrs.fields(type(value))
        one_line = f"{name}({', '.join(f'{f.name}={to_source(getattr(value, f.name), names)}' for f in fields)})"
        if indent is None or indent + len(one_line) <= _WIDTH:
            return one_line
        inner = indent + 4
        args = "".join(
            f"{' ' * inner}{f.name}={to_source(getattr(value, f.name), names, indent=inner)},\n" for f in fields
        )
        return f"{name}(\n{args}{' ' * indent})"
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    raise TypeError(f"cannot render {type(value).__name__} as source")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _commands(ops: Iterable[Operation]) -> list[CommandRef]:
    seen: dict[CommandRef, None] = {}
    for op in ops:
        seen.setdefault(op.command, None)
    return list(seen)


def _imports(ops: Sequence[Operation], system_module: str | None) -> list[str]:
    """Exactly the imports the generated module uses (it must pass `ruff check` as it stands)."""
    model = {"CommandRef", *(type(op).__name__ for op in ops)}
    if any(isinstance(op, InjectFault) for op in ops):
        model.add("FaultKind")
    lines = ["from datetime import UTC, datetime", ""] if any(hasattr(op, "now") for op in ops) else []
    named = system_module is not None and ":" in system_module
    lockstep = "ReferenceAPI, replay" if system_module and not named else "replay"
    model_names = ", ".join(sorted(model))
    imports = [f"from fencecheck.lockstep import {lockstep}", f"from model.journal import {model_names}"]
    if named:
        imports.append(f"from {system_module.partition(':')[0]} import system")
    return [*lines, *sorted(imports)]


def _system_line(system_module: str) -> str:
    if ":" in system_module:
        return f"SYSTEM = system({system_module.partition(':')[2]!r})"
    return f"SYSTEM = ReferenceAPI.from_module({system_module!r})"


def _comment(text: str, limit: int = 60) -> list[str]:
    lines = [piece for line in text.splitlines() for piece in textwrap.wrap(line, _WIDTH, subsequent_indent="    ")]
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more lines)"]
    return [f"#   {line}".rstrip() for line in lines] or ["#"]


def program_source(
    ops: Sequence[Operation],
    *,
    machine: str,
    failure: str = "",
    system_module: str | None = None,
    replay_command: str = "",
) -> str:
    """A pytest module replaying `ops` on the emulator (via the `firestore_db` fixture)."""
    commands = _commands(ops)
    names = {command: f"C{i}" for i, command in enumerate(commands, 1)}
    epoch = next((op.now for op in ops if hasattr(op, "now")), None)
    lines = [
        f'"""Counterexample found by the {machine} lockstep state machine (shrunk by Hypothesis).',
        "",
        "Replay it against the Firestore emulator:",
        "",
        f"    {replay_command}",
        '"""',
        "",
        "# Program (times relative to the first operation):",
        *(f"#   {i}. {describe_op(op, epoch=epoch)}" for i, op in enumerate(ops, 1)),
        "#",
        "# Failure when it was found:",
        *_comment(failure),
        "",
        *_imports(ops, system_module),
        "",
    ]
    lines += [f"{names[command]} = {to_source(command, indent=0)}" for command in commands]
    lines += ["", "OPS = ["]
    lines += [f"    {to_source(op, names, indent=4)}," for op in ops]
    lines += ["]", ""]
    call = "replay(firestore_db, OPS)"
    if system_module is not None:
        lines += [_system_line(system_module), ""]
        call = "replay(firestore_db, OPS, system=SYSTEM)"
    lines += ["", "def test_replay(firestore_db):", f"    {call}", ""]
    return "\n".join(lines)


def short_id(ops: Sequence[Operation], machine: str) -> str:
    text = machine + "\n" + "\n".join(to_source(op) for op in ops)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def replay_command(path: Path) -> str:
    """The command that replays a counterexample file (relative to the working directory when inside it)."""
    try:
        shown = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = path
    return f".venv/bin/python -m pytest {shown}"


def write_counterexample(
    directory: str | Path,
    ops: Sequence[Operation],
    *,
    machine: str,
    failure: str = "",
    system_module: str | None = None,
) -> Path:
    """Write `<directory>/<machine>-<shortid>.py` and return its path."""
    path = Path(directory) / f"{machine}-{short_id(ops, machine)}.py"
    command = replay_command(path)
    source = program_source(ops, machine=machine, failure=failure, system_module=system_module, replay_command=command)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return path
