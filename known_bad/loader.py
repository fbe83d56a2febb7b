"""Isolated copies of the reference journal, and one-function mutations of a copy.

`load_reference_copy(alias)` imports every module of `reference/journal/` again, from its file, under the
package name `known_bad._copies.<alias>.journal`: relative imports (`from .records import ...`) resolve
inside the copy, so the copy shares no module, function, class or global with `reference.journal` (or with
any other copy). Its `CommandJournalError` is therefore its own class; a `ReferenceAPI` built from the copy
catches that class.

`mutate(package, target, original, broken)` rewrites one function of a copy: it takes the function's
source, replaces one block of whole lines (`original`, which must occur exactly once, at any indentation)
with `broken` at the same indentation, compiles the result in the copy module's namespace and rebinds
every name in the copy that referred to the old function. The mutated source is registered with
`linecache`, so tracebacks and `inspect.getsource` show the broken lines.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import linecache
import sys
import textwrap
import types
from pathlib import Path

import reference.journal

REFERENCE_PACKAGE_DIR = Path(reference.journal.__file__).resolve().parent
COPIES = "known_bad._copies"


class MutationError(ValueError):
    """A mutation does not apply: its target or its original lines were not found exactly once."""


def _namespace(name: str) -> types.ModuleType:
    """An empty package module (no files), created once, so `name` and its children live in sys.modules."""
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name, "Namespace of isolated reference copies (see known_bad.loader).")
        module.__path__ = []  # a package without a search location: nothing can be imported from disk here
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent] if parent in sys.modules else importlib.import_module(parent), child, module)
    return module


def copy_modules(package: types.ModuleType) -> dict[str, types.ModuleType]:
    """The modules of a loaded copy by short name (`""` for the package itself, `"decide"`, ...)."""
    prefix = package.__name__ + "."
    found = {"": package}
    for name, module in list(sys.modules.items()):
        if name.startswith(prefix) and module is not None:
            found[name[len(prefix):]] = module
    return found


def load_reference_copy(
    alias: str, source_dir: Path = REFERENCE_PACKAGE_DIR, *, package_name: str = "journal"
) -> types.ModuleType:
    """Load a fresh copy of the reference journal as `known_bad._copies.<alias>.journal` and return it.

    `alias` must be a Python identifier not used before in this process (a copy is never reloaded or
    shared: reuse the returned module instead). Another reference package is copied the same way by passing
    its directory and name: `source_dir=<reference/lantern>, package_name="lantern"` loads
    `known_bad._copies.<alias>.lantern` (known_bad.lantern does).
    """
    if not alias.isidentifier():
        raise ValueError(f"alias must be an identifier, got {alias!r}")
    if not package_name.isidentifier():
        raise ValueError(f"package_name must be an identifier, got {package_name!r}")
    name = f"{COPIES}.{alias}.{package_name}"
    if name in sys.modules:
        raise ValueError(f"a copy named {name} is already loaded")
    _namespace(COPIES)
    parent = _namespace(f"{COPIES}.{alias}")
    spec = importlib.util.spec_from_file_location(
        name, source_dir / "__init__.py", submodule_search_locations=[str(source_dir)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    try:
        spec.loader.exec_module(package)  # its relative imports load the package's modules inside the copy
        for path in sorted(source_dir.glob("*.py")):  # and every module nobody imported yet
            if path.stem != "__init__":
                importlib.import_module(f"{name}.{path.stem}")
    except BaseException:
        for loaded in copy_modules(package):
            sys.modules.pop(f"{name}.{loaded}" if loaded else name, None)
        raise
    setattr(parent, package_name, package)
    return package


def _replace_block(source: str, original: str, broken: str) -> str:
    lines = source.splitlines()
    old = textwrap.dedent(original).strip("\n").splitlines()
    new = textwrap.dedent(broken).strip("\n").splitlines()
    if not old:
        raise MutationError("the original block is empty")
    hits = []
    for start in range(len(lines) - len(old) + 1):
        first = lines[start]
        indent = first[: len(first) - len(first.lstrip())]
        if all(lines[start + i] == (indent + line if line else "") for i, line in enumerate(old)):
            hits.append((start, indent))
    if len(hits) != 1:
        raise MutationError(f"the original block occurs {len(hits)} times (exactly once required):\n{original}")
    start, indent = hits[0]
    replaced = [indent + line if line else "" for line in new]
    return "\n".join([*lines[:start], *replaced, *lines[start + len(old):]]) + "\n"


def mutate(package: types.ModuleType, target: str, original: str, broken: str) -> types.FunctionType:
    """Replace the function `target` ("module.function" inside the copy) by its source with one block of lines
    swapped; returns the new function. Every module of the copy that bound the old function now binds the new.
    """
    module_name, _, function_name = target.rpartition(".")
    modules = copy_modules(package)
    module = modules.get(module_name)
    if module is None or not function_name:
        raise MutationError(f"no module {module_name!r} in {package.__name__}")
    old_function = getattr(module, function_name, None)
    if not isinstance(old_function, types.FunctionType) or old_function.__module__ != module.__name__:
        raise MutationError(f"{target} is not a function defined in {module.__name__}")
    source = _replace_block(textwrap.dedent(inspect.getsource(old_function)), original, broken)
    filename = f"<known_bad mutation of {module.__name__}.{function_name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec", flags=annotations.compiler_flag, dont_inherit=True)
    exec(code, vars(module))  # noqa: S102 - defines the mutated function in the copy module's own namespace
    new_function = vars(module)[function_name]
    for other in modules.values():
        for name, value in list(vars(other).items()):
            if value is old_function:
                setattr(other, name, new_function)
    return new_function
