"""Which implementation a suite runs against: the reference, or the system $FENCECHECK_SYSTEM names.

$FENCECHECK_SYSTEM names an implementation of one system (plug-in): `known_bad.lantern:<variant>` and
`reference.lantern` belong to the lantern (`fencecheck.plugins.lantern`), anything else to the journal.
Suites of the other system run against their reference: `configured_implementation(plugin)`.

For the journal:

A system spec is spelled as counterexample files spell it: an importable module with the four journal
functions, and `CommandJournalError` if it declares its error type (without one, its errors are told by their
`.code` alone: `ReferenceAPI.from_module`), or `package.module:name` for a named system
the module builds with `system(name)` (the known-bad catalogue: `known_bad.journal:<variant>`).

`fencecheck gate --known-bad NAME` sets the variable for the suites' processes; the stateful machine
(`JournalMachine.system`) and the race suite (`race_tests/conftest.py`'s `system` fixture) read it.
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
from fencecheck.plugins.journal import REFERENCE, ReferenceAPI
from fencecheck.plugins.journal_exec import exec_journal, is_exec_spec

ENV_SYSTEM = "FENCECHECK_SYSTEM"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
HINT = "Expected an importable module with the four journal functions, or known_bad.journal:<variant>."


def import_module(name: str, what: str) -> ModuleType:
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
            fix = HINT
        raise SystemNotFoundError(
            f"{what}: module {name!r} cannot be imported ({type(error).__name__}: {error}). {fix}"
        ) from None


def resolve_system(spec: str | None) -> ReferenceAPI:
    """The ReferenceAPI a spec names; the reference itself (the `REFERENCE` object) for None, "" or
    "reference", so identity checks against REFERENCE keep meaning "the real thing"."""
    spec = (spec or "").strip()
    if spec in ("", REFERENCE.module):
        return REFERENCE
    if is_exec_spec(spec):
        return exec_journal(spec)
    module_name, named, name = spec.partition(":")
    module = import_module(module_name, f"journal system {spec!r}")
    if named:
        build = getattr(module, "system", None)
        if not callable(build):
            raise SystemNotFoundError(f"journal system {spec!r}: {module_name} has no system(name) function. {HINT}")
        try:
            return build(name)
        except KeyError as error:  # known_bad.journal.variant lists the known names in its message
            raise SystemNotFoundError(f"journal system {spec!r}: {error.args[0] if error.args else error}") from None
    try:
        return ReferenceAPI.from_module(module)
    except AttributeError as error:
        raise SystemNotFoundError(f"journal system {spec!r}: {error}. {HINT}") from None


LANTERN_SPECS = ("reference.lantern", "known_bad.lantern:")


def system_of_spec(spec: str | None) -> str | None:
    """The plug-in a system spec belongs to ("journal", "lantern"), None for an empty spec."""
    spec = (spec or "").strip()
    if not spec:
        return None
    named, mark, _command = spec.partition(":exec:")
    if mark and named in SYSTEM_NAMES:  # `<system>:exec:<command line>`: an implementation in another process
        return named
    return "lantern" if spec == LANTERN_SPECS[0] or spec.startswith(LANTERN_SPECS[1]) else "journal"


def configured_implementation(plugin: SystemPlugin, env: Mapping[str, str] | None = None) -> Any:
    """The implementation of `plugin`'s system that the suites run against: the one $FENCECHECK_SYSTEM names
    when it names one of this system, else the plug-in's reference (the same object, so `is` tells)."""
    env = os.environ if env is None else env
    spec = env.get(ENV_SYSTEM)
    if system_of_spec(spec) != plugin.name:
        return plugin.reference
    return plugin.resolve(spec)


def configured_system(env: Mapping[str, str] | None = None) -> ReferenceAPI:
    """The journal implementation the suites run against (the reference unless $FENCECHECK_SYSTEM names
    another journal)."""
    return configured_implementation(plugin_named("journal"), env)


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
    """How output names an implementation: "the reference" (the journal's), "the lantern reference", or its spec."""
    if isinstance(system, ReferenceAPI):
        return "the reference" if system is REFERENCE else (system.module or "an unnamed system")
    lantern = plugin_named("lantern")
    return "the lantern reference" if system is lantern.reference else (lantern.spec_of(system) or "an unnamed system")
