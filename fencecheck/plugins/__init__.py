"""The systems the harness verifies, each as a `fencecheck.plugin.SystemPlugin`, by name.

The core finds a plug-in here by name and never imports a plug-in module itself
(tests/unit/test_core_imports_no_system.py). Adding a system is one line of `REGISTRY`: its name and where its
plug-in object lives, `"module:attribute"`; the module is imported on first use.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin import SystemPlugin

REGISTRY: dict[str, str] = {
    "journal": "fencecheck.plugins.journal:JOURNAL",
    "lantern": "fencecheck.plugins.lantern:LANTERN",
    "gateway": "fencecheck.plugins.gateway:GATEWAY",
}

SYSTEM_NAMES = tuple(REGISTRY)


def _where(name: str) -> tuple[str, str]:
    try:
        module, _, attribute = REGISTRY[name].partition(":")
    except (KeyError, TypeError):
        raise SystemNotFoundError(f"no system called {name!r}: expected one of {', '.join(SYSTEM_NAMES)}.") from None
    return module, attribute


def plugin_module(name: str) -> ModuleType:
    """The module that defines the plug-in called `name` (imported on first use)."""
    return importlib.import_module(_where(name)[0])


def plugin(name: str) -> SystemPlugin:
    """The plug-in called `name` (one of `SYSTEM_NAMES`); imported on first use."""
    found = getattr(plugin_module(name), _where(name)[1])
    if not isinstance(found, SystemPlugin) or found.name != name:
        raise SystemNotFoundError(f"{REGISTRY[name]} is not the SystemPlugin called {name!r}: fix its REGISTRY line.")
    return found
