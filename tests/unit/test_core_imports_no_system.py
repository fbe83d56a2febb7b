"""The core imports no system (issue 13, point 3).

`fencecheck/` outside `fencecheck/plugins/` is system-neutral: it takes a `SystemPlugin` (found by name
through `fencecheck.plugins.plugin`) and imports nothing from `model`, `reference`, `known_bad` or a named
plug-in module, at module level or lazily inside a function, statically or through
`importlib.import_module("...")` with a literal name. The registry (`fencecheck/plugins/__init__.py`) may name
plug-in modules as strings in its table; it imports none of them statically.

Read with `ast`, never by importing, so the test sees every import whether or not it would run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fencecheck"
PLUGINS = PACKAGE / "plugins"
REGISTRY = PLUGINS / "__init__.py"
SYSTEM_PACKAGES = ("model", "reference", "known_bad")

# Files other helpers rewrite right now and that still import a system; each entry goes when their branch
# lands. (contest_results.py, replay.py and replay_contest.py, rewritten by w-contest too, import none.)
ALLOWED: set[str] = set()  # files of the core allowed to import a system: none


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _absolute(package: str, level: int, module: str | None) -> str:
    """A relative import's absolute module name (`from .plugins import x` in fencecheck/history.py)."""
    if level == 0:
        return module or ""
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _literal_name(node: ast.expr) -> str | None:
    """A module name written as a literal: "m.n", or the literal head of an f-string up to its last dot
    (f"known_bad.{system}" -> "known_bad"), which names the package whatever the rest is."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        head = str(node.values[0].value)
        return head.rpartition(".")[0] or None
    return None


def imports_in(source: str, package: str) -> list[tuple[int, str]]:
    """(line, module) for every module the file imports: `import m`, `from m import n` (as `m` and, since `n`
    may be a submodule, `m.n`), relative imports resolved, and `importlib.import_module("m")` /
    `import_module("m")` / `__import__("m")` with a string literal (or an f-string's literal head)."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(package, node.level, node.module)
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}" if module else alias.name) for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and (name := _literal_name(node.args[0])) is not None:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if called in ("import_module", "__import__"):
                found.append((node.lineno, name))
    return found


def imports_of(path: Path) -> list[tuple[int, str]]:
    return imports_in(path.read_text(encoding="utf-8"), _package_of(path))


def _plugin_modules() -> set[str]:
    return {_module_name(p) for p in PLUGINS.glob("*.py") if p != REGISTRY}


def system_import(module: str, plugin_modules: set[str]) -> bool:
    top = module.split(".")[0]
    if top in SYSTEM_PACKAGES:
        return True
    return any(module == named or module.startswith(named + ".") for named in plugin_modules)


def _allowed(relative: str) -> bool:
    return any(relative == entry or (entry.endswith("/") and relative.startswith(entry)) for entry in ALLOWED)


def core_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if PLUGINS not in p.parents)


def violations(paths: list[Path]) -> list[str]:
    """`file:line imports module`, once per import statement (`from model.journal import A, B` is one)."""
    named = _plugin_modules()
    found: dict[tuple[Path, int], str] = {}
    for path in paths:
        for line, module in imports_of(path):
            if system_import(module, named):
                found.setdefault((path, line), f"{path.relative_to(ROOT)}:{line} imports {module}")
    return list(found.values())


def _violations_in(source: str, package: str) -> list[str]:
    named = _plugin_modules()
    return [f"{line}: {module}" for line, module in imports_in(source, package) if system_import(module, named)]


def test_there_are_core_files_and_plugins_to_check():
    assert len(core_files()) > 20
    assert {"fencecheck.plugins.journal", "fencecheck.plugins.lantern"} <= _plugin_modules()


def test_the_core_imports_no_system():
    checked = [p for p in core_files() if not _allowed(str(p.relative_to(ROOT)))]
    found = violations(checked)
    assert found == [], ("the core must take a plug-in (fencecheck.plugins.plugin(name)), not import a system:\n"
                         + "\n".join(found))


def test_the_registry_imports_no_plugin_module_statically():
    found = violations([REGISTRY])
    assert found == [], "the registry names plug-in modules as strings (its table):\n" + "\n".join(found)


def test_every_allow_list_entry_still_needs_its_place():
    for entry in sorted(ALLOWED):
        target = ROOT / entry
        assert target.exists(), f"{entry} is allowed but gone: drop it from ALLOWED"
        paths = sorted(target.rglob("*.py")) if target.is_dir() else [target]
        assert violations(paths), f"{entry} imports no system any more: drop it from ALLOWED"


# --- the detector itself can fail ----------------------------------------------------------------------------


@pytest.mark.parametrize("source, line, module", [
    ("import model.journal", 1, "model.journal"),
    ("from reference import AttemptLog", 1, "reference"),
    ("def f():\n    from known_bad.journal import variant\n", 2, "known_bad.journal"),
    ("from .plugins.journal import JOURNAL", 1, "fencecheck.plugins.journal"),
    ("from .plugins import journal", 1, "fencecheck.plugins.journal"),
    ("from ..plugins.lantern import LANTERN", 1, "fencecheck.plugins.lantern"),
    ("import importlib\nimportlib.import_module('model.lantern')", 2, "model.lantern"),
    ("from importlib import import_module\nimport_module('fencecheck.plugins.journal')", 2,
     "fencecheck.plugins.journal"),
    ("def f(system):\n    return import_module(f'known_bad.{system}', 'what')", 2, "known_bad"),
    ("import_module(f'reference.{name}.errors')", 1, "reference"),
])
def test_the_detector_finds_each_form(source, line, module):
    package = "fencecheck.report" if source.startswith("from ..") else "fencecheck"  # where the source sits
    assert f"{line}: {module}" in _violations_in(source, package)


def test_the_detector_leaves_neutral_imports_alone():
    named = _plugin_modules()
    for module in ("fencecheck.plugins", "fencecheck.plugins.plugin", "fencecheck.plugin", "modelling", "attrs"):
        assert not system_import(module, named), module
    neutral = "from . import plugins\nimport_module(f'{spec}')\nimport_module(f'fencecheck.{x}')\nimport_module(x)"
    assert _violations_in(neutral, "fencecheck") == []
