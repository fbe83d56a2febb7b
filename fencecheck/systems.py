"""Which implementation a suite runs against: the reference, or the system $FENCECHECK_SYSTEM names.

$FENCECHECK_SYSTEM names an implementation of one system (plug-in): each plug-in says which specs are its own
(`SystemPlugin.spec_prefixes`: the lantern's `reference.lantern` and `known_bad.lantern:<variant>`, the
gateway's `reference.gateway` and `known_bad.gateway:<variant>`), and a spec no plug-in owns is the journal's
(DEFAULT_SYSTEM: any importable module with its four functions) (`system_of_spec`). Suites of the other
systems run against their reference: `configured_implementation(plugin)`. Each plug-in resolves its own
specs (`SystemPlugin.resolve`: the journal's spelling is in `fencecheck/plugins/journal.py`).

`fencecheck gate --known-bad NAME` sets the variable for the suites' processes; the stateful machines and the
race and parallel suites' fixtures read it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin import SystemPlugin
from fencecheck.plugins import SYSTEM_NAMES
from fencecheck.plugins import plugin as plugin_named

ENV_SYSTEM = "FENCECHECK_SYSTEM"
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def import_module(name: str, what: str, hint: str = "") -> ModuleType:
    """`importlib.import_module`, with an ImportError turned into a SystemNotFoundError that says how to fix it."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        top = name.partition(".")[0]
        if isinstance(error, ModuleNotFoundError) and error.name == top and (PROJECT_ROOT / top).is_dir():
            # The checkout has it, the installed package metadata does not (an older editable install).
            fix = (f"The package {top}/ is in this checkout but not installed: reinstall the project "
                   f"(.venv/bin/pip install -e .) or run `.venv/bin/python -m fencecheck` from {PROJECT_ROOT}.")
        else:
            fix = hint
        raise SystemNotFoundError(
            f"{what}: module {name!r} cannot be imported ({type(error).__name__}: {error}). {fix}".rstrip()
        ) from None


def resolve_system(spec: str | None) -> Any:
    """The journal implementation a spec names (`plugin("journal").resolve`): fencecheck/parallel/case.py
    resolves with it (removed when w-parallel lands)."""
    return plugin_named("journal").resolve(spec)


DEFAULT_SYSTEM = "journal"  # owns every spec no plug-in claims: its implementations may be any module


def system_of_spec(spec: str | None) -> str | None:
    """The plug-in a system spec belongs to ("journal", "lantern", "gateway"), None for an empty spec."""
    spec = (spec or "").strip()
    if not spec:
        return None
    named, mark, _command = spec.partition(":exec:")
    if mark and named in SYSTEM_NAMES:  # `<system>:exec:<command line>`: an implementation in another process
        return named
    return next((name for name in SYSTEM_NAMES if plugin_named(name).owns_spec(spec)), DEFAULT_SYSTEM)


def configured_implementation(plugin: SystemPlugin, env: Mapping[str, str] | None = None) -> Any:
    """The implementation of `plugin`'s system that the suites run against: the one $FENCECHECK_SYSTEM names
    when it names one of this system, else the plug-in's reference (the same object, so `is` tells)."""
    env = os.environ if env is None else env
    spec = env.get(ENV_SYSTEM)
    if system_of_spec(spec) != plugin.name:
        return plugin.reference
    return plugin.resolve(spec)


def reference_run(env: Mapping[str, str] | None = None, system: str = "journal") -> bool:
    """True when `system`'s suites run against its reference. Evidence about the reference (transition
    coverage, the stateful summary, per-run race results) is neither written nor cleared by a run against
    another implementation."""
    found = plugin_named(system)
    return configured_implementation(found, env) is found.reference


def check_configured(env: Mapping[str, str] | None = None) -> None:
    """Resolve $FENCECHECK_SYSTEM once, whichever system it names: a spec naming nothing is an error."""
    env = os.environ if env is None else env
    name = system_of_spec(env.get(ENV_SYSTEM))
    if name is not None:
        configured_implementation(plugin_named(name), env)


def resolve_implementation(spec: str | None) -> Any:
    """An implementation of whichever system the spec belongs to (`system_of_spec`; no spec: the journal's
    reference)."""
    return plugin_named(system_of_spec(spec) or "journal").resolve(spec)


def describe_system(system: Any) -> str:
    """How output names an implementation, as its plug-in says (`SystemPlugin.describe_impl`: "the reference"
    for the journal's, "the lantern reference", or its spec)."""
    for name in SYSTEM_NAMES:
        described = plugin_named(name).describe_impl(system)
        if described is not None:
            return described
    return "an unnamed system"
