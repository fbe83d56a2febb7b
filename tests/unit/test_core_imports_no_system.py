"""The core imports no system (issue 13, point 3), has no import cycles and imports no layer above its own
(issue 23, point 4).

`fencecheck/` outside `fencecheck/systems/` is system-neutral: it takes a `SystemPlugin` (found by name
through `fencecheck.plugin.registry.plugin`) and imports nothing from `model`, `reference`, `known_bad` or a named
plug-in module, at module level or lazily inside a function, statically or through
`importlib.import_module("...")` with a literal name. The registry (`fencecheck/plugin/registry.py`) may name
plug-in modules as strings in its table; it imports none of them statically.

No cycles: among fencecheck's own modules (plug-ins included) no module imports, through any chain, one that
imports it back; the failure names a cycle (a -> b -> a) in each group of modules
that import each other, with the file and line of every arrow. Layers: every module sits in a room (a
subpackage) of one layer of `LAYERS` (lowest first) and imports nothing of a higher one; a new room fails until
it is placed.

What counts as an import here, for both: every `import` and `from ... import` in the file (`from . import x`
and `from .x import y` resolved; `from p import m` is an import of the submodule p.m when there is one, else
of p), and `importlib.import_module("...")` with a literal name, wherever it is written:

- inside a function too. An import moved into a function to dodge a circular import is still a cycle in
  the design (each module needs the other), only one that fails at call time instead of at import time;
  counting it keeps the fix honest: move the shared piece to the module it belongs to;
- under `if TYPE_CHECKING:` too, for the same reason: the annotation names the other module's type, so the
  modules still depend on each other.

Not counted: the package `__init__` that Python runs before a submodule (a package re-exporting its own
submodules would otherwise be a cycle with each of them), and a plug-in found by name through the registry's
table (`fencecheck.plugin.registry.plugin(name)`: a string, which is how the core stays free of systems).

Read with `ast`, never by importing, so the test sees every import whether or not it would run.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

import pytest

from fencecheck.plugin.registry import REGISTRY as BUILT_IN  # the built-in systems' names, which the core never picks

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fencecheck"
SYSTEMS = PACKAGE / "systems"  # the built-in systems, one folder each
REGISTRY = PACKAGE / "plugin" / "registry.py"
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
    """A relative import's absolute module name (`from .plugins import x` in fencecheck/checker/history.py)."""
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
    return {_module_name(p) for p in SYSTEMS.rglob("*.py")}


def system_import(module: str, plugin_modules: set[str]) -> bool:
    top = module.split(".")[0]
    if top in SYSTEM_PACKAGES:
        return True
    return any(module == named or module.startswith(named + ".") for named in plugin_modules)


def _allowed(relative: str) -> bool:
    return any(relative == entry or (entry.endswith("/") and relative.startswith(entry)) for entry in ALLOWED)


def core_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if SYSTEMS not in p.parents)


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
    assert {"fencecheck.systems.journal.plugin", "fencecheck.systems.lantern.plugin"} <= _plugin_modules()


def test_the_core_imports_no_system():
    checked = [p for p in core_files() if not _allowed(str(p.relative_to(ROOT)))]
    found = violations(checked)
    assert found == [], ("the core must take a plug-in (fencecheck.plugin.registry.plugin(name)), not import a "
                         "system:\n"
                         + "\n".join(found))


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def system_names_spelled(source: str, names: Collection[str]) -> list[tuple[int, str]]:
    """(line, name) of every string literal in `source` that is exactly a system's name, docstrings aside: a
    default, a comparison or a lookup that picks a system, where the core must take one (text in a message
    names it in passing, inside a longer string, and is not counted)."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings]


def test_no_module_of_the_core_picks_a_system_by_name():
    """A default of "journal" in the core makes every other system a second-class one: the core takes a
    plug-in, and what a file that names no system means is the registry's
    (`fencecheck.plugin.registry.UNNAMED_SYSTEM`)."""
    names = set(BUILT_IN)
    found = [f"{path.relative_to(ROOT)}:{line} spells {name!r}" for path in core_files() if path != REGISTRY
             for line, name in system_names_spelled(path.read_text(encoding="utf-8"), names)]
    assert found == [], ("expected no system named in the core; take the plug-in as an argument, or ask the "
                         "registry (fencecheck.plugin.registry.UNNAMED_SYSTEM for files that name "
                         "none):\n" + "\n".join(found))


def test_the_name_finder_counts_defaults_and_comparisons_not_docstrings_or_messages():
    source = '''"""The journal: "journal" in a docstring."""
def f(system="journal"):
    """"lantern" here is a docstring too."""
    return system == "lantern" or f"the journal {system}"
'''
    assert system_names_spelled(source, {"journal", "lantern"}) == [(2, "journal"), (4, "lantern")]


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
    ("from .systems.journal.plugin import JOURNAL", 1, "fencecheck.systems.journal.plugin"),
    ("from .systems.journal import plugin", 1, "fencecheck.systems.journal.plugin"),
    ("from ..systems.lantern.plugin import LANTERN", 1, "fencecheck.systems.lantern.plugin"),
    ("import importlib\nimportlib.import_module('model.lantern')", 2, "model.lantern"),
    ("from importlib import import_module\nimport_module('fencecheck.systems.journal.plugin')", 2,
     "fencecheck.systems.journal.plugin"),
    ("def f(system):\n    return import_module(f'known_bad.{system}', 'what')", 2, "known_bad"),
    ("import_module(f'reference.{name}.errors')", 1, "reference"),
])
def test_the_detector_finds_each_form(source, line, module):
    package = "fencecheck.report" if source.startswith("from ..") else "fencecheck"  # where the source sits
    assert f"{line}: {module}" in _violations_in(source, package)


def test_the_detector_leaves_neutral_imports_alone():
    named = _plugin_modules()
    for module in ("fencecheck.plugin.registry", "fencecheck.plugin.registry.plugin", "fencecheck.plugin.records",
                   "modelling", "attrs"):
        assert not system_import(module, named), module
    neutral = "from . import plugin\nimport_module(f'{spec}')\nimport_module(f'fencecheck.{x}')\nimport_module(x)"
    assert _violations_in(neutral, "fencecheck") == []


# --- no import cycles inside fencecheck/ ---------------------------------------------------------------------


def fencecheck_modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of fencecheck (plug-ins included), by dotted name."""
    return {_module_name(path): path for path in sorted(package.rglob("*.py"))}


def _known(name: str, modules: Mapping[str, object]) -> str | None:
    """The module `name` is or is in (`fencecheck.plugin.registry.plugin`, a function, is in
    `fencecheck.plugin.registry`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


class _Imports(ast.NodeVisitor):
    """(line, module imported, where) for each import of one of `modules`; where is "module level",
    "inside a function" or "under TYPE_CHECKING"."""

    def __init__(self, package: str, modules: Mapping[str, object]) -> None:
        self.package, self.modules = package, modules
        self.functions = self.type_checking = 0
        self.found: list[tuple[int, str, str]] = []

    def _add(self, node: ast.AST, name: str) -> None:
        module = _known(name, self.modules)
        if module is not None:
            where = ("under TYPE_CHECKING" if self.type_checking
                     else "inside a function" if self.functions else "module level")
            self.found.append((node.lineno, module, where))

    def _function(self, node: ast.AST) -> None:
        self.functions += 1
        self.generic_visit(node)
        self.functions -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            self.type_checking += 1
            for child in node.body:
                self.visit(child)
            self.type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = _absolute(self.package, node.level, node.module)
        for alias in node.names:
            submodule = f"{module}.{alias.name}"
            self._add(node, submodule if submodule in self.modules else module)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if called in ("import_module", "__import__") and node.args and (name := _literal_name(node.args[0])):
            self._add(node, name)
        self.generic_visit(node)


def internal_imports_in(source: str, module: str, package: str, modules: Mapping[str, object]
                        ) -> list[tuple[int, str, str]]:
    """(line, imported module, where) for each import of another module of `modules` in `source`."""
    visitor = _Imports(package, modules)
    visitor.visit(ast.parse(source))
    return [(line, target, where) for line, target, where in visitor.found if target != module]


Edges = dict[str, dict[str, list[str]]]  # module -> imported module -> ["file:line (where)", ...]


def import_graph(modules: Mapping[str, Path]) -> Edges:
    graph: Edges = {name: {} for name in modules}
    for name, path in modules.items():
        for line, target, where in internal_imports_in(path.read_text("utf-8"), name, _package_of(path), modules):
            places = graph[name].setdefault(target, [])
            if (place := f"{path.relative_to(ROOT)}:{line} ({where})") not in places:  # once per statement
                places.append(place)
    return graph


def _components(graph: Mapping[str, Mapping[str, object]]) -> Iterator[list[str]]:
    """Strongly connected components (Tarjan), each sorted; iterative, so no recursion limit applies."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                yield sorted(component)


def _cycle_through(start: str, component: set[str], graph: Mapping[str, Mapping[str, object]]) -> list[str]:
    """A shortest cycle from `start` back to it inside its component (breadth first): [a, b, ..., a]."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == start:
                    return [*paths[node], start]
                if child in component and child not in paths:
                    paths[child] = [*paths[node], child]
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a component of several modules, so a cycle runs through it")


def import_cycles(graph: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """One cycle per group of modules that import each other, from the group's first module by name."""
    found = []
    for component in _components(graph):
        if len(component) > 1 or component[0] in graph[component[0]]:
            found.append(_cycle_through(component[0], set(component), graph))
    return found


def _short(module: str) -> str:
    return module.removeprefix("fencecheck.")


def cycle_text(cycle: list[str], graph: Edges) -> str:
    lines = [" -> ".join(_short(m) for m in cycle)]
    for here, there in zip(cycle, cycle[1:], strict=False):  # consecutive pairs
        lines.append(f"    {_short(here)} -> {_short(there)}: " + ", ".join(graph[here][there]))
    return "\n".join(lines)


def test_there_is_no_import_cycle_inside_fencecheck():
    graph = import_graph(fencecheck_modules())
    found = import_cycles(graph)
    assert found == [], (
        "expected no import cycle among fencecheck's modules (a function-level or TYPE_CHECKING import counts: "
        "see this file's docstring); found:\n" + "\n".join(cycle_text(c, graph) for c in found)
        + "\nfix: move the piece both need to the module it belongs to (usually the lower one), so the "
          "import runs one way; do not hide the import inside a function"
    )


# --- the cycle detector itself can fail ----------------------------------------------------------------------

MODULES = dict.fromkeys(("fencecheck", "fencecheck.a", "fencecheck.b", "fencecheck.sub", "fencecheck.sub.c"))


@pytest.mark.parametrize("source, package, module, where", [
    ("from . import b", "fencecheck", "fencecheck.b", "module level"),
    ("from .b import thing", "fencecheck", "fencecheck.b", "module level"),
    ("from fencecheck.b import thing", "fencecheck", "fencecheck.b", "module level"),
    ("import fencecheck.sub.c", "fencecheck", "fencecheck.sub.c", "module level"),
    ("from .sub import c", "fencecheck", "fencecheck.sub.c", "module level"),
    ("from .sub import name_in_init", "fencecheck", "fencecheck.sub", "module level"),
    ("from .. import b", "fencecheck.sub", "fencecheck.b", "module level"),
    ("def f():\n    from .b import thing\n", "fencecheck", "fencecheck.b", "inside a function"),
    ("if TYPE_CHECKING:\n    from .b import Thing\n", "fencecheck", "fencecheck.b", "under TYPE_CHECKING"),
    ("import importlib\nimportlib.import_module('fencecheck.b')", "fencecheck", "fencecheck.b", "module level"),
])
def test_the_import_reader_finds_each_form(source, package, module, where):
    assert [(target, found) for _, target, found in internal_imports_in(source, "fencecheck.a", package, MODULES)
            ] == [(module, where)]


def test_the_import_reader_leaves_other_packages_and_the_registry_table_alone():
    source = 'import attrs\nfrom model.journal import step\nREGISTRY = {"x": "fencecheck.b:X"}\nimport_module(x)'
    assert internal_imports_in(source, "fencecheck.a", "fencecheck", MODULES) == []


@pytest.mark.parametrize("graph, cycles", [
    ({"a": {"b": 1}, "b": {"a": 1}}, [["a", "b", "a"]]),
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}, [["a", "b", "c", "a"]]),
    ({"a": {"a": 1}}, [["a", "a"]]),
    ({"a": {"b": 1}, "b": {"a": 1}, "c": {"d": 1}, "d": {"c": 1}}, [["a", "b", "a"], ["c", "d", "c"]]),
    ({"a": {"b": 1, "c": 1}, "b": {"c": 1}, "c": {}}, []),
])
def test_the_cycle_finder_names_each_cycle(graph, cycles):
    assert sorted(import_cycles(graph)) == cycles


def test_a_cycle_message_names_the_modules_and_the_lines():
    graph = {"fencecheck.a": {"fencecheck.b": ["fencecheck/a.py:3 (module level)"]},
             "fencecheck.b": {"fencecheck.a": ["fencecheck/b.py:9 (inside a function)"]}}
    assert cycle_text(import_cycles(graph)[0], graph) == (
        "a -> b -> a\n"
        "    a -> b: fencecheck/a.py:3 (module level)\n"
        "    b -> a: fencecheck/b.py:9 (inside a function)"
    )


# --- no upward imports: the layers of fencecheck/ ------------------------------------------------------------

# Lowest first. A layer is a list of rooms: subpackages of fencecheck/ (or one of the package's own top-level
# modules; "" is its __init__), and every module of a room is in its room's layer. A module imports modules of
# its own layer or of lower ones, never of a higher one ("an upward arrow"). A new module joins the layer of the
# room it is put in; a new room, or a new module at the top of fencecheck/, fails
# `test_every_module_is_in_one_layer` until it is placed, by what it is for, not by what it happens to import.
LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("base", "what every room speaks: the package, its errors, the problem kinds and the file formats' schemas",
     ("", "errors", "problems", "schemas")),
    ("plugin", "the plug-in interface, the registry that finds a system by name, the implementation specs and the "
               "suites' parts; they name no system and touch no Firestore",
     ("plugin",)),
    ("checker", "histories and the checker: a function of a history and the model, with no Firestore",
     ("checker",)),
    ("mutation", "the mutants of a reference, their outcomes and the Stryker report: data, no process and no Firestore",
     ("mutation",)),
    ("shells", "the outside world: the emulator and Firestore clients, implementation processes, the wire proxy; they "
               "carry calls and faults, and know no runner or verdict",
     ("emulator", "protocol", "wire")),
    ("suites", "what pytest and the suites plug into: fixtures, Hypothesis profiles, progress lines",
     ("suites",)),
    ("runners", "drive a system through the shells and judge it with the checker: lockstep, contests, parallel "
                "programs, the rules probe",
     ("runners", "parallel")),
    ("systems", "one system each, built on the runners and shells it plugs into; the core reaches a system only by "
                "name through the registry, so nothing below imports one",
     ("systems",)),
    ("report", "the evidence: reads back what the runs wrote and renders it; nothing that runs a system needs it",
     ("report",)),
    ("commands", "the command line and the gate: the top, imported by nothing but each other",
     ("gate", "cli", "__main__")),
)


def _full(name: str) -> str:
    return f"fencecheck.{name}" if name else "fencecheck"


def rooms_of(module: str, layers: tuple[tuple[str, str, tuple[str, ...]], ...] = LAYERS) -> list[str]:
    """The rooms of `layers` that hold `module`: the room itself or a module inside it ("" holds only the
    package's __init__)."""
    return [room for _, _, rooms in layers for room in rooms
            if module == _full(room) or (room and module.startswith(_full(room) + "."))]


def layer_of(modules: Iterable[str], layers: tuple[tuple[str, str, tuple[str, ...]], ...] = LAYERS
             ) -> dict[str, int]:
    """Each module's layer (its room's index in `layers`, lowest 0); a module in no room, or in two, has none
    (`test_every_module_is_in_one_layer` names it)."""
    index = {room: number for number, (_, _, rooms) in enumerate(layers) for room in rooms}
    found = {}
    for module in modules:
        rooms = rooms_of(module, layers)
        if len(rooms) == 1:
            found[module] = index[rooms[0]]
    return found


def upward_imports(graph: Edges, layers: tuple[tuple[str, str, tuple[str, ...]], ...] = LAYERS) -> list[str]:
    """One line per import of a higher layer's module: where, from which layer to which."""
    where = layer_of(graph, layers)
    found = []
    for module in sorted(graph):
        for target in sorted(graph[module]):
            if module in where and target in where and where[target] > where[module]:
                found.extend(f"{place}: {_short(module)} ({layers[where[module]][0]}) imports {_short(target)} "
                             f"({layers[where[target]][0]})" for place in graph[module][target])
    return found


def test_every_module_is_in_one_layer():
    rooms = [room for _, _, members in LAYERS for room in members]
    twice = sorted({room for room in rooms if rooms.count(room) > 1})
    assert twice == [], f"expected each room in one layer of LAYERS; in several: {twice}"
    modules = fencecheck_modules()
    unplaced = sorted(module for module in modules if not rooms_of(module))
    assert unplaced == [], (f"expected every module of fencecheck in a room of LAYERS; not placed: {unplaced}. "
                            "Put it in the room its job belongs to, or add its room to the lowest layer whose "
                            "reason fits")
    nested = sorted(module for module in modules if len(rooms_of(module)) > 1)
    assert nested == [], f"expected each module in one room; in a room inside another room: {nested}"
    gone = sorted(room for room in rooms if not any(rooms_of(module, (("", "", (room,)),)) for module in modules))
    assert gone == [], f"LAYERS names rooms that do not exist: {gone}; drop them"
    for room in rooms:  # a room is a subpackage, or one of the package's own top-level modules
        path = PACKAGE.joinpath(*room.split(".")) if room else PACKAGE
        assert (path / "__init__.py").is_file() or path.with_suffix(".py").is_file(), room


def test_a_room_holds_its_modules_and_only_them():
    layers = (("low", "", ("", "a")), ("high", "", ("b",)))
    assert rooms_of("fencecheck.a.x", layers) == ["a"] and rooms_of("fencecheck", layers) == [""]
    assert rooms_of("fencecheck.ab", layers) == [] and rooms_of("fencecheck.b", layers) == ["b"]
    assert layer_of(["fencecheck.a.x", "fencecheck.b", "fencecheck.c"], layers) == {"fencecheck.a.x": 0,
                                                                                   "fencecheck.b": 1}


def test_no_module_imports_a_higher_layer():
    found = upward_imports(import_graph(fencecheck_modules()))
    assert found == [], (
        "expected every module to import only its own layer or lower ones (LAYERS, lowest first; a function-level "
        "or TYPE_CHECKING import counts); found:\n" + "\n".join(found)
        + "\nfix: move the piece the lower module needs down to where it belongs (or, if the module itself is "
          "misplaced, move it to its layer in LAYERS and say why there)"
    )


def test_the_layer_check_finds_an_upward_import():
    layers = (("low", "", ("a",)), ("high", "", ("b",)))
    graph = {"fencecheck.a": {"fencecheck.b": ["fencecheck/a.py:3 (inside a function)"]}, "fencecheck.b": {}}
    assert upward_imports(graph, layers) == ["fencecheck/a.py:3 (inside a function): a (low) imports b (high)"]
    downward = {"fencecheck.a": {}, "fencecheck.b": {"fencecheck.a": ["fencecheck/b.py:1 (module level)"]}}
    assert upward_imports(downward, layers) == []
