"""docs/implementation-protocol.md states every limit the harness holds an implementation to, in its table "What the
harness enforces": each row names the constant, and the limit it states is the constant's value."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "implementation-protocol.md"
ROW = re.compile(r"^\| ([^|]+) \| ([0-9.]+)(?: (s|%))? \| `([\w.]+)\.(\w+)` \|$", re.M)


def _rows() -> list[tuple[str, float, str, str]]:
    section = DOC.read_text(encoding="utf-8").split("## What the harness enforces", 1)[1].split("\n## ", 1)[0]
    return [(rule, float(limit), module, name) for rule, limit, _unit, module, name in ROW.findall(section)]


def test_every_limit_the_document_states_is_the_constant_the_harness_uses():
    rows = _rows()
    assert len(rows) == 8, rows
    for rule, limit, module, name in rows:
        assert getattr(importlib.import_module(module), name) == limit, f"{rule}: {module}.{name}"


def test_the_call_functions_default_to_the_documented_limits():
    from fencecheck.protocol import process

    assert process.ImplementationProcess.hello.__defaults__ == (process.HELLO_SECONDS,)
    assert process.ImplementationProcess.call.__defaults__ == (process.CALL_SECONDS,)
    assert process.ImplementationProcess.close.__defaults__ == (process.DRAIN_SECONDS,)
