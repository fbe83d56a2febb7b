"""docs/writing-a-plugin.md keeps up with the interface: its tables name every field of SystemPlugin, of each
of its records and of SuiteParts, each once and in the class order, with its default as the class has it, and
the `fencecheck check` output it quotes is what the command prints now."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import attrs

from fencecheck.plugin.records import (
    Codec,
    Implementations,
    Model,
    MutationTargets,
    Partitions,
    SuiteParts,
    SystemPlugin,
)

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "writing-a-plugin.md"
ROW = re.compile(r"^\| `(\w+)` \| ([^|]+) \|", re.M)


TABLES = {"SystemPlugin": SystemPlugin, "Model": Model, "Partitions": Partitions, "Implementations": Implementations,
          "Codec": Codec, "SuiteParts": SuiteParts, "MutationTargets": MutationTargets}
HEADING = re.compile(r"^`(\w+)`[^\n]*:\n", re.M)


def _tables() -> dict[str, list[tuple[str, str]]]:
    """Each table of the guide under its heading line (`` `Model` (pure):``), as (field, default) rows."""
    text = GUIDE.read_text(encoding="utf-8").split("## Every field", 1)[1]
    parts = HEADING.split(text)[1:]
    return {name: [(field, default.strip()) for field, default in ROW.findall(body)]
            for name, body in zip(parts[::2], parts[1::2], strict=True)}


def test_the_tables_name_every_field_once_in_the_class_order():
    tables = _tables()
    assert list(tables) == list(TABLES)
    for name, cls in TABLES.items():
        assert [field for field, _ in tables[name]] == [f.name for f in attrs.fields(cls)], name


def test_a_field_is_required_in_the_guide_exactly_when_the_class_requires_it():
    tables = _tables()
    for name, cls in TABLES.items():
        said = {field for field, default in tables[name] if default == "required"}
        assert said == {f.name for f in attrs.fields(cls) if f.default is attrs.NOTHING}, name


def test_the_quoted_check_output_is_what_the_command_prints():
    text = GUIDE.read_text(encoding="utf-8")
    block = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    command = block[0].removeprefix("$ ").split()
    assert command[0] == ".venv/bin/python"
    done = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1, done.stderr
    printed = done.stdout.splitlines()
    assert printed[: len(block) - 1] == block[1:], "the guide quotes output the command no longer prints"
