"""docs/writing-a-plugin.md keeps up with the interface: its tables name every field of SystemPlugin and
SuiteParts, each once, with its default as the class has it, and the `fencecheck check` output it quotes is
what the command prints now."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import attrs

from fencecheck.plugin import SuiteParts, SystemPlugin

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "writing-a-plugin.md"
ROW = re.compile(r"^\| `(\w+)` \| ([^|]+) \|", re.M)


def _tables() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    plugin_part, _, suites_part = GUIDE.read_text(encoding="utf-8").partition("`SuiteParts`:\n")
    def rows(part: str) -> list[tuple[str, str]]:
        return [(name, default.strip()) for name, default in ROW.findall(part)]

    return rows(plugin_part), rows(suites_part)


def test_the_tables_name_every_field_once_in_the_class_order():
    plugin_rows, suite_rows = _tables()
    assert [name for name, _ in plugin_rows] == [f.name for f in attrs.fields(SystemPlugin)]
    assert [name for name, _ in suite_rows] == [f.name for f in attrs.fields(SuiteParts)]


def test_a_field_is_required_in_the_guide_exactly_when_the_class_requires_it():
    plugin_rows, _ = _tables()
    said = {name for name, default in plugin_rows if default == "required"}
    assert said == {f.name for f in attrs.fields(SystemPlugin) if f.default is attrs.NOTHING}


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
