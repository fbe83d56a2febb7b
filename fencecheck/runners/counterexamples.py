"""Counterexamples for humans: a failing lockstep program as a standalone pytest file.

`to_source(op)` renders a model operation as a Python expression that evaluates back to an equal value
(`repr` does not round-trip: `FaultKind` members print as `<FaultKind.X: 'x'>`). `program_source(...)`
renders a whole program as a test module that replays it with `fencecheck.runners.lockstep.replay` on the
`firestore_db` fixture; `write_counterexample(...)` stores it as `counterexamples/<machine>-<shortid>.py`
(the short id is a digest of the program, so the same program always lands in the same file).

Programs of any system (`plugin=`, a `fencecheck.plugin.SystemPlugin`) are written; every class a file spells
(the operations', the values they hold, their enums) is imported from the module it lives in
(`type(op).__module__`, or the shallowest package above it that exports it: `public_module`), with any name the
plug-in adds (`SystemPlugin.model_imports`). Values the plug-in hoists (`SystemPlugin.hoisted`: the journal's
command refs) are spelled once, as constants `C1`, `C2`, ...

A plug-in may spell how its files name the system replayed (`SystemPlugin.counterexample_system`: the
journal's keep the form they always had, `fencecheck/systems/journal/counterexamples.py`). Otherwise a file
finds the plug-in through the registry by its registered name (so a system from outside fencecheck replays
wherever it is registered) and always names its implementation, resolved by the plug-in from its spec (None:
the plug-in's reference), so a known-bad variant's program replays against the variant:

    LANTERN = plugin('lantern')
    SYSTEM = LANTERN.resolve('known_bad.lantern:finding_13_blind_decrement_deleted_venue')

    def test_replay(firestore_db):
        replay(firestore_db, OPS, plugin=LANTERN, system=SYSTEM)
"""

from __future__ import annotations

import enum
import hashlib
import math
import re
import sys
import textwrap
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import attrs

from fencecheck.plugin.records import SystemPlugin

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


def _spelled_classes(value: Any) -> set[type]:
    """The classes `to_source` spells by name for `value`: its own (an attrs class, an enum), and those of the
    values it holds, at any depth."""
    if isinstance(value, enum.Enum):
        return {type(value)}
    if not attrs.has(type(value)):
        return set()
    found = {type(value)}
    for field in attrs.fields(type(value)):
        found |= _spelled_classes(getattr(value, field.name))
    return found


def public_module(cls: type) -> str:
    """The module a file imports `cls` from: the shallowest package on the way to the module that defines it
    (`type(op).__module__`) which exports that very class, so `model.journal.ops.Register` is imported from
    `model.journal`, as its files always spelled it, and a system's classes from wherever they live."""
    parts = cls.__module__.split(".")
    for depth in range(1, len(parts)):
        module = sys.modules.get(".".join(parts[:depth]))
        if module is not None and getattr(module, cls.__name__, None) is cls:
            return module.__name__
    return cls.__module__


def _model_imports(ops: Sequence[Operation], plugin: SystemPlugin, hoisted: Sequence[Any]) -> list[str]:
    """The standard-library line and the model's imports: exactly the classes the operations and the hoisted
    values spell, each from its module (`public_module`), and the names the plug-in adds
    (`SystemPlugin.model_imports`), from the first module of the operations' that exports them."""
    classes = set().union(*(_spelled_classes(value) for value in (*ops, *hoisted)))
    by_module: dict[str, set[str]] = {}
    for cls in classes:
        by_module.setdefault(public_module(cls), set()).add(cls.__name__)
    ops_modules = [public_module(type(op)) for op in ops]
    for name in plugin.model_imports(ops):
        home = next((module for module in dict.fromkeys(ops_modules) if hasattr(sys.modules[module], name)),
                    ops_modules[0] if ops_modules else None)
        if home is None:
            raise ValueError(f"the plug-in names {name!r} to import, but there are no operations to import it with")
        by_module.setdefault(home, set()).add(name)
    lines = ["from datetime import UTC, datetime", ""] if any(_holds_datetime(op) for op in ops) else []
    imports = [f"from {module} import {', '.join(sorted(names))}" for module, names in sorted(by_module.items())]
    return [*lines, *imports]


class _SystemSpelling(NamedTuple):
    """How a file names the system it replays: its imports, the SYSTEM line (None: a plug-in's form that
    names none, such as the journal's reference), the replay call."""

    imports: list[str]
    line: str | None
    call: str


def plugin_constant(plugin: SystemPlugin) -> str:
    """The name a generated file gives the plug-in it looks up by name (`LANTERN = plugin('lantern')`)."""
    constant = re.sub(r"\W", "_", plugin.name).upper()
    if not constant.isidentifier() or constant in ("OPS", "SYSTEM"):  # a leading digit; the file's own names
        constant = f"PLUGIN_{constant}"
    return constant


def plugin_line(plugin: SystemPlugin) -> str:
    """A generated file's line that finds the plug-in through the registry by its registered name, so a file of
    a system from outside fencecheck replays wherever that system is registered (docs/plugins-from-your-package.md)."""
    return f"{plugin_constant(plugin)} = plugin({plugin.name!r})"


def _plugin_system(plugin: SystemPlugin, system_module: str | None) -> _SystemSpelling:
    spec = system_module if system_module is not None else plugin.spec_of(plugin.reference)
    constant = plugin_constant(plugin)
    return _SystemSpelling(
        ["from fencecheck.runners.lockstep import replay", "from fencecheck.plugin.registry import plugin"],
        f"{plugin_line(plugin)}\nSYSTEM = {constant}.resolve({spec!r})",
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
    stdlib = model[:2] if model[:1] == ["from datetime import UTC, datetime"] else []
    return [*stdlib, *sorted([*system.imports, *model[len(stdlib):]])]


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
