"""The systems the harness verifies, each as a `fencecheck.plugin.SystemPlugin`, by name.

The core finds a plug-in here by name and never imports a plug-in module itself
(tests/unit/test_core_imports_no_system.py). Adding a built-in system is one line of `REGISTRY`: its name and
where its plug-in object lives, `"module:attribute"`; the module is imported on first use.

Systems from outside this package join the built-in ones (docs/plugins-from-your-package.md):

- an entry point of the group `fencecheck.systems` (`ENTRY_POINT_GROUP`) in any installed distribution: the
  entry's name is the system's name, its value `"module:attribute"` of its plug-in, imported on first use;
- `$FENCECHECK_PLUGINS` (`ENV_PLUGINS`): `"module:attribute"` entries separated by commas, each imported when the
  registry is first asked (a plug-in's name is its object's `.name`). `fencecheck gate|check|replay --plugin`
  adds to it, so the gate's suite processes and a replay's pytest inherit the plug-in (`add_to_environment`).

A name two registrations share (a built-in and an entry point, two entry points, an entry point and
$FENCECHECK_PLUGINS) is a `PluginRegistrationError` naming both: which one was meant cannot be told.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from types import ModuleType
from typing import Any

from fencecheck.errors import PluginRegistrationError, SystemNotFoundError
from fencecheck.plugin.records import SystemPlugin

REGISTRY: dict[str, str] = {
    "journal": "fencecheck.systems.journal.plugin:JOURNAL",
    "lantern": "fencecheck.systems.lantern.plugin:LANTERN",
    "gateway": "fencecheck.systems.gateway.plugin:GATEWAY",
}
# What a file or a spec means when it names no system: the journal, the first system, from before the others
# were named (histories, parallel programs and reports written then; a bare module spec). The core asks for it
# here, never spells a system itself (tests/unit/test_core_imports_no_system.py).
UNNAMED_SYSTEM = "journal"
ENTRY_POINT_GROUP = "fencecheck.systems"
ENV_PLUGINS = "FENCECHECK_PLUGINS"
HOW_TO_REGISTER = (f"a system from outside fencecheck is registered by an entry point of the group "
                   f"{ENTRY_POINT_GROUP!r}, by --plugin module:attribute or by ${ENV_PLUGINS}")
EXPECTED_ENTRY = "expected module:attribute naming a fencecheck.plugin.SystemPlugin object"


def _split(where: str, label: str) -> tuple[str, str]:
    module, colon, attribute = where.strip().partition(":")
    if not colon or not module or not attribute or ":" in attribute:
        raise PluginRegistrationError(f"{label}: {EXPECTED_ENTRY} (e.g. mypackage.plugin:MY_SYSTEM).")
    return module, attribute


def load_entry(where: str, label: str | None = None) -> SystemPlugin:
    """The SystemPlugin `"module:attribute"` names; a `PluginRegistrationError` saying what was expected when
    there is no colon, the module cannot be imported, the attribute is missing or is not a SystemPlugin.
    `label`: how messages name the registration (default: `--plugin '<where>'`)."""
    label = f"--plugin {where!r}" if label is None else label
    module_name, attribute = _split(where, label)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise PluginRegistrationError(
            f"{label}: module {module_name!r} cannot be imported ({type(error).__name__}: {error}); "
            f"{EXPECTED_ENTRY}, with the module on sys.path (installed, or under the working directory)."
        ) from None
    if not hasattr(module, attribute):
        raise PluginRegistrationError(f"{label}: module {module_name} has no attribute {attribute!r}; "
                                      f"{EXPECTED_ENTRY}.")
    found = getattr(module, attribute)
    if not isinstance(found, SystemPlugin):
        raise PluginRegistrationError(f"{label} is a {type(found).__name__}, not a SystemPlugin; {EXPECTED_ENTRY}.")
    return found


def environment_entries(env: Mapping[str, str] | None = None) -> list[str]:
    """The `"module:attribute"` entries of $FENCECHECK_PLUGINS, in order."""
    env = os.environ if env is None else env
    return [entry.strip() for entry in env.get(ENV_PLUGINS, "").split(",") if entry.strip()]


def add_to_environment(where: str, env: MutableMapping[str, str] | None = None) -> SystemPlugin:
    """Check `"module:attribute"` (`load_entry`) and add it to $FENCECHECK_PLUGINS in `env` (default: this
    process's environment, so the processes it starts register it too); returns the plug-in. A name it shares
    with a system already registered is a `PluginRegistrationError`."""
    env = os.environ if env is None else env
    found = load_entry(where)
    entries = environment_entries(env)
    if where.strip() not in entries:
        entries.append(where.strip())
    _extra(tuple(entries))  # a clash is found now, before anything runs
    env[ENV_PLUGINS] = ",".join(entries)
    return found


# Computed once per ($FENCECHECK_PLUGINS, entry_points function): the registry is asked on hot paths (every
# test's system marker), and scanning the installed distributions each time costs milliseconds. The function
# is part of the key so a test that swaps `importlib.metadata.entry_points` (monkeypatch) sees its own, and
# the real ones again once it is restored.
_EXTRA_CACHE: dict[tuple[tuple[str, ...], object], dict[str, tuple[str, str]]] = {}


def _extra(env_entries: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """name -> ("module:attribute", where it was registered) of every system beyond `REGISTRY`."""
    key = (env_entries, importlib.metadata.entry_points)
    if key not in _EXTRA_CACHE:
        _EXTRA_CACHE.clear()
        _EXTRA_CACHE[key] = _collect_extra(env_entries)
    return _EXTRA_CACHE[key]


def _entry_point_source(entry: importlib.metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    owner = f" of the distribution {dist.name!r}" if dist is not None else ""
    return f"the entry point {entry.name} = {entry.value!r}{owner} (group {ENTRY_POINT_GROUP!r})"


def _collect_extra(env_entries: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}

    def add(name: str, where: str, source: str) -> None:
        if name in REGISTRY:
            raise PluginRegistrationError(
                f"two systems are called {name!r}: the built-in one ({REGISTRY[name]}) and {source}; rename "
                "the outside one (a system's name is its entry point's name and its plug-in's .name).")
        if name in found:
            if found[name][0] == where:  # the same plug-in registered twice (an entry point and --plugin)
                return
            raise PluginRegistrationError(
                f"two systems are called {name!r}: {found[name][1]} and {source}; remove or rename one of them.")
        found[name] = (where, source)

    for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        _split(entry.value, _entry_point_source(entry))
        add(entry.name, entry.value, _entry_point_source(entry))
    for where in env_entries:
        add(load_entry(where, f"${ENV_PLUGINS} entry {where!r}").name, where,
            f"the plug-in {where!r} of --plugin/${ENV_PLUGINS}")
    return found


def _table() -> dict[str, str]:
    """Every registered system: name -> "module:attribute", the built-in ones first."""
    extra = _extra(tuple(environment_entries()))
    return {**REGISTRY, **{name: where for name, (where, _source) in extra.items()}}


def system_names() -> tuple[str, ...]:
    """The names of every registered system: the built-in ones, then those from outside (by name)."""
    return tuple(_table())


class _SystemNames(Sequence[str]):
    """`SYSTEM_NAMES`: the registered systems' names, read afresh each time it is used, so a plug-in registered
    after this module was imported (`--plugin`, $FENCECHECK_PLUGINS set later) is among them wherever a module
    imported the name."""

    def __getitem__(self, index: Any) -> Any:  # an int gives a name, a slice a tuple of them
        return system_names()[index]

    def __len__(self) -> int:
        return len(system_names())

    def __iter__(self) -> Iterator[str]:
        return iter(system_names())

    def __contains__(self, name: object) -> bool:
        return name in system_names()

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) and not isinstance(other, str) else other)

    __hash__ = None  # type: ignore[assignment]  # it changes with the registry

    def __repr__(self) -> str:
        return repr(system_names())


SYSTEM_NAMES: Sequence[str] = _SystemNames()


def _where(name: str) -> tuple[str, str]:
    table = _table()
    if not isinstance(name, str) or name not in table:
        raise SystemNotFoundError(
            f"no system called {name!r}: expected one of {', '.join(table)}. ({HOW_TO_REGISTER}.)")
    module, _, attribute = table[name].partition(":")
    return module, attribute


def plugin_module(name: str) -> ModuleType:
    """The module that defines the plug-in called `name` (imported on first use)."""
    module = _where(name)[0]
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if name in REGISTRY:
            raise
        raise SystemNotFoundError(f"system {name!r}: its plug-in module {module!r} cannot be imported "
                                  f"({type(error).__name__}: {error}).") from None


def plugin(name: str) -> SystemPlugin:
    """The plug-in called `name` (one of `SYSTEM_NAMES`); imported on first use."""
    module = plugin_module(name)
    attribute = _where(name)[1]
    found = getattr(module, attribute, None)
    if not isinstance(found, SystemPlugin) or found.name != name:
        if name in REGISTRY:
            raise SystemNotFoundError(
                f"{REGISTRY[name]} is not the SystemPlugin called {name!r}: fix its REGISTRY line.")
        what = "nothing" if found is None else (f"the SystemPlugin called {found.name!r}"
                                                if isinstance(found, SystemPlugin) else f"a {type(found).__name__}")
        raise SystemNotFoundError(f"system {name!r} is registered as {_table()[name]}, which is {what}: expected "
                                  f"the SystemPlugin whose .name is {name!r}; fix the registration.")
    return found
