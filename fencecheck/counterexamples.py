"""Counterexamples for humans: a failing lockstep program as a standalone pytest file.

`to_source(op)` renders a model operation as a Python expression that evaluates back to an equal value
(`repr` does not round-trip: `FaultKind` members print as `<FaultKind.X: 'x'>`). `program_source(...)`
renders a whole program as a test module that replays it with `fencecheck.lockstep.replay` on the
`firestore_db` fixture; `write_counterexample(...)` stores it as `counterexamples/<machine>-<shortid>.py`
(the short id is a digest of the program, so the same program always lands in the same file).

Programs of any system (`plugin=`, a `fencecheck.plugin.SystemPlugin`) are written; the operations are
imported from `model.<system>`, with the classes of the values they hold that the plug-in names
(`SystemPlugin.model_imports`). Values the plug-in hoists (`SystemPlugin.hoisted`: the journal's command
refs) are spelled once, as constants `C1`, `C2`, ...

A plug-in may spell how its files name the system replayed (`SystemPlugin.counterexample_system`: the
journal's keep the form they always had, `fencecheck/plugins/journal_counterexamples.py`). Otherwise a file
always names its implementation, resolved by the plug-in from its spec (None: the plug-in's reference), so a
known-bad variant's program replays against the variant:

    SYSTEM = LANTERN.resolve('known_bad.lantern:finding_13_blind_decrement_deleted_venue')

    def test_replay(firestore_db):
        replay(firestore_db, OPS, plugin=LANTERN, system=SYSTEM)
"""

from __future__ import annotations

import enum
import hashlib
import math
import textwrap
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import attrs

from fencecheck.plugin import SystemPlugin

Operation = Any  # an operation of the plug-in's model

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
        # a field marked `omit_default` (a later addition, e.g. response_lost) is left out at its default, so
        # the files of programs without it keep their form
        fields = [f for f in fields if not (f.metadata.get("omit_default") and getattr(value, f.name) == f.default)]
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
    if isinstance(value, float):  # the lantern's coordinates and radii; repr round-trips a finite float
        if not math.isfinite(value):
            raise ValueError(f"only finite floats can be rendered, got {value!r}")
        return repr(value)
    raise TypeError(f"cannot render {type(value).__name__} as source")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _holds_datetime(value: Any) -> bool:
    if isinstance(value, datetime):
        return True
    return attrs.has(type(value)) and any(_holds_datetime(getattr(value, f.name)) for f in attrs.fields(type(value)))


def _model_imports(ops: Sequence[Operation], plugin: SystemPlugin, hoisted: Sequence[Any]) -> list[str]:
    """The standard-library line and the model's import: exactly the names the operations use."""
    model = {type(op).__name__ for op in ops} | {type(value).__name__ for value in hoisted}
    model |= set(plugin.model_imports(ops))  # the classes of values the operations hold, as the plug-in says
    if any(isinstance(value, enum.Enum) for op in ops for value in attrs.astuple(op, recurse=False)):
        model.add("FaultKind")  # both models' only enum
    lines = ["from datetime import UTC, datetime", ""] if any(_holds_datetime(op) for op in ops) else []
    return [*lines, f"from model.{plugin.name} import {', '.join(sorted(model))}"]


class _SystemSpelling(NamedTuple):
    """How a file names the system it replays: its imports, the SYSTEM line (None: a plug-in's form that
    names none, such as the journal's reference), the replay call."""

    imports: list[str]
    line: str | None
    call: str


def plugin_constant(plugin: SystemPlugin) -> tuple[str, str]:
    """(module, name) of the plug-in object a generated file imports: `fencecheck.plugins.<name>.<NAME>`."""
    return f"fencecheck.plugins.{plugin.name}", plugin.name.upper()


def _plugin_system(plugin: SystemPlugin, system_module: str | None) -> _SystemSpelling:
    spec = system_module if system_module is not None else plugin.spec_of(plugin.reference)
    module, constant = plugin_constant(plugin)
    return _SystemSpelling(
        ["from fencecheck.lockstep import replay", f"from {module} import {constant}"],
        f"SYSTEM = {constant}.resolve({spec!r})",
        f"replay(firestore_db, OPS, plugin={constant}, system=SYSTEM)",
    )


def _system_spelling(plugin: SystemPlugin, system_module: str | None) -> _SystemSpelling:
    if plugin.counterexample_system is None:
        return _plugin_system(plugin, system_module)
    return _SystemSpelling(*plugin.counterexample_system(system_module))


def _imports(
    ops: Sequence[Operation], plugin: SystemPlugin, system: _SystemSpelling, hoisted: Sequence[Any]
) -> list[str]:
    """Exactly the imports the generated module uses (it must pass `ruff check` as it stands)."""
    model = _model_imports(ops, plugin, hoisted)
    return [*model[:-1], *sorted([*system.imports, model[-1]])]


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
    plugin: SystemPlugin,
) -> str:
    """A pytest module replaying `ops` on the emulator (via the `firestore_db` fixture)."""
    # Long, repeated values (the journal's command refs) are spelled once each, as a constant C1, C2, ...
    commands = list(dict.fromkeys(plugin.hoisted(ops)))
    names = {command: f"C{i}" for i, command in enumerate(commands, 1)}
    epoch = next((now for op in ops if (now := plugin.clock_of(op)) is not None), None)
    system = _system_spelling(plugin, system_module)
    lines = [
        f'"""Counterexample found by the {machine} lockstep state machine (shrunk by Hypothesis).',
        "",
        "Replay it against the Firestore emulator:",
        "",
        f"    {replay_command}",
        '"""',
        "",
        "# Program (times relative to the first operation):",
        *(f"#   {i}. {plugin.describe_op(op, epoch=epoch)}" for i, op in enumerate(ops, 1)),
        "#",
        "# Failure when it was found:",
        *_comment(failure),
        "",
        *_imports(ops, plugin, system, commands),
        "",
    ]
    if commands:
        lines += [*(f"{names[command]} = {to_source(command, indent=0)}" for command in commands), ""]
    lines += ["OPS = ["]
    lines += [f"    {to_source(op, names, indent=4)}," for op in ops]
    lines += ["]", ""]
    if system.line is not None:
        lines += [system.line, ""]
    lines += ["", "def test_replay(firestore_db):", f"    {system.call}", ""]
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
    plugin: SystemPlugin,
) -> Path:
    """Write `<directory>/<machine>-<shortid>.py` and return its path."""
    path = Path(directory) / f"{machine}-{short_id(ops, machine)}.py"
    command = replay_command(path)
    source = program_source(
        ops, machine=machine, failure=failure, system_module=system_module, replay_command=command, plugin=plugin
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return path
