"""How the journal's counterexample files name the system they replay (`SystemPlugin.counterexample_system`).

They keep the form they always had (`fencecheck.cli.replay.program_system` reads it back): no SYSTEM line for the
reference; `SYSTEM = ReferenceAPI.from_module('<module>')` for an importable module with the four journal
functions; `SYSTEM = system('<name>')` after `from <module> import system` for `"<module>:<name>"`, a named
system the module builds (the known-bad catalogue: `known_bad.journal:<variant>`);
`SYSTEM = JOURNAL.resolve('journal:exec:<command line>')` for one in another process. Their command refs are
hoisted (`hoisted`): each spelled once, as a constant C1, C2, ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MODULE = "fencecheck.systems.journal.plugin"  # where a file imports `replay` (bound to the journal) and `ReferenceAPI`


def counterexample_system(system_module: str | None) -> tuple[list[str], str | None, str]:
    """(import lines, SYSTEM line or None, replay call) for the journal implementation `system_module` names."""
    if system_module is None:
        return [f"from {MODULE} import replay"], None, "replay(firestore_db, OPS)"
    call = "replay(firestore_db, OPS, system=SYSTEM)"
    if system_module.startswith(("journal:exec:", "exec:")):  # a command line, resolved as the spec says
        return [f"from {MODULE} import JOURNAL, replay"], f"SYSTEM = JOURNAL.resolve({system_module!r})", call
    if ":" in system_module:
        module, _, name = system_module.partition(":")
        return [f"from {MODULE} import replay", f"from {module} import system"], f"SYSTEM = system({name!r})", call
    return ([f"from {MODULE} import ReferenceAPI, replay"], f"SYSTEM = ReferenceAPI.from_module({system_module!r})",
            call)


def hoisted(ops: Sequence[Any]) -> list[Any]:
    """The command refs of `ops`, each once, in order of first use."""
    return list(dict.fromkeys(op.command for op in ops))
