"""Which implementation a suite runs against: the reference, or the system $FENCECHECK_SYSTEM names.

$FENCECHECK_SYSTEM names an implementation of one system (plug-in), spelled one of `SPELLINGS`:

- `<system>:<module>` names both, for any registered system (`lantern:mypkg.lantern_impl`,
  `cas_register:examples.cas_register.implementation`): the plug-in's `resolve` gets the whole spec and takes
  the module after its name (`module_of_spec`);
- `journal:exec:<command line>`: a journal in another process (docs/implementation-protocol.md);
- a spec a plug-in owns (`SystemPlugin.owns_spec`: its reference's spelling, `reference.lantern`, and its
  catalogue's, `known_bad.<system>:<variant>`, with any `implementations.spec_prefixes` it adds);
- anything else belongs to the one system whose plug-in resolves it (a bare module with the journal's four
  functions is the journal's, as it always was, because the journal's `resolve` takes it, not because the core
  prefers a system: `system_of_spec`). A spec no system claims or resolves is an error that lists every
  spelling and what each system said.

Suites of the other systems run against their reference: `configured_implementation(plugin)`. Each plug-in
resolves its own specs (`SystemPlugin.resolve`: the journal's spelling is in `fencecheck/systems/journal/plugin.py`).

`fencecheck gate --known-bad NAME` sets the variable for the suites' processes; the stateful machines and the
race and parallel suites' fixtures read it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import SYSTEM_NAMES
from fencecheck.plugin.registry import plugin as plugin_named

ENV_SYSTEM = "FENCECHECK_SYSTEM"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


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


EXEC_MARK = "exec:"
SPELLINGS = (
    "<system>:<module> (an importable module implementing that system's operations; systems: {systems}; one "
    "of your own is registered by --plugin or an entry point, docs/plugins-from-your-package.md)",
    "journal:exec:<command line> (a journal in another process, docs/implementation-protocol.md)",
    "known_bad.<system>:<variant> (a variant of a known-bad catalogue)",
    "reference.lantern or reference.gateway (that system's reference)",
    "a bare module with the four journal functions (the journal's, as before <system>:<module>)",
)


def spellings() -> str:
    """The ways to spell an implementation, for messages that must say what was expected."""
    return "; ".join(SPELLINGS).format(systems=", ".join(SYSTEM_NAMES))


def module_of_spec(name: str, spec: str | None) -> str | None:
    """The module a `<name>:<module>` spec names for the system `name` (None: the spec is not of that form).
    `<name>:exec:...` is no module: a SystemNotFoundError (a plug-in that speaks the implementation process
    protocol, the journal's, takes its `exec:` specs before it asks for a module)."""
    spec = (spec or "").strip()
    head, colon, module = spec.partition(":")
    if head != name or not colon:
        return None
    if module.startswith(EXEC_MARK):
        raise SystemNotFoundError(
            f"{name} system {spec!r}: an implementation in another process (<system>:exec:) is the journal's only "
            f"(docs/implementation-protocol.md); for the {name}, give {name}:<module>, an importable module with "
            "its operations.")
    if not module:
        raise SystemNotFoundError(f"{name} system {spec!r}: expected {name}:<module>, an importable module.")
    return module


def implementation_module(name: str, spec: str, functions: Iterable[str]) -> ModuleType:
    """The module a `<name>:<module>` spec names (`module_of_spec`), imported, with every one of `functions`
    callable on it: what a plug-in's `resolve` calls to take a user's module (the lantern's, the gateway's)."""
    module_name = module_of_spec(name, spec)
    if module_name is None:
        raise SystemNotFoundError(f"{name} system {spec!r}: expected {name}:<module>.")
    hint = f"Expected {name}:<module>, an importable module with {', '.join(functions)}."
    module = import_module(module_name, f"{name} system {spec!r}", hint)
    missing = [function for function in functions if not callable(getattr(module, function, None))]
    if missing:
        raise SystemNotFoundError(f"{name} system {spec!r}: module {module_name} has no {', '.join(missing)}. {hint}")
    return module


def _claimant(spec: str) -> str | None:
    """The system that claims a (stripped, non-empty) spec, or None when none does."""
    named, colon, _rest = spec.partition(":")
    if colon and named in SYSTEM_NAMES:  # `<system>:<module>`, `<system>:exec:<command line>`
        return named
    return next((name for name in SYSTEM_NAMES if plugin_named(name).owns_spec(spec)), None)


def _resolver(spec: str) -> str:
    """The one system whose plug-in resolves a (stripped) spec that none claims by its name or its prefixes:
    every registered plug-in is asked alike, so no system is the default. None resolving it, or two, is a
    SystemNotFoundError that lists the spellings and what each system said."""
    found, refusals = [], []
    for name in SYSTEM_NAMES:
        try:
            plugin_named(name).resolve(spec)
        except SystemNotFoundError as error:
            refusals.append(f"{name}: {error}")
        else:
            found.append(name)
    if len(found) == 1:
        return found[0]
    if found:
        raise SystemNotFoundError(f"the spec {spec!r} is an implementation of {' and of '.join(found)}: name "
                                  f"its system, <system>:<module> ({found[0]}:{spec}).")
    raise SystemNotFoundError(f"no system claims or resolves the spec {spec!r}. An implementation is spelled one "
                              f"of: {spellings()}. What each system said: " + " ".join(refusals))


def system_of_spec(spec: str | None) -> str | None:
    """The plug-in a system spec belongs to ("journal", "lantern", "gateway", or a system registered from
    outside), None for an empty spec: the system it names or whose prefixes claim it, else the one whose
    plug-in resolves it (`_resolver`); a SystemNotFoundError when no system does."""
    spec = (spec or "").strip()
    if not spec:
        return None
    return _claimant(spec) or _resolver(spec)


def configured_implementation(plugin: SystemPlugin, env: Mapping[str, str] | None = None) -> Any:
    """The implementation of `plugin`'s system that the suites run against: the one $FENCECHECK_SYSTEM names
    when it names one of this system, else the plug-in's reference (the same object, so `is` tells)."""
    env = os.environ if env is None else env
    spec = env.get(ENV_SYSTEM)
    if system_of_spec(spec) != plugin.name:
        return plugin.reference
    return plugin.resolve(spec)


def reference_run(env: Mapping[str, str] | None = None, *, system: str) -> bool:
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
    """An implementation of whichever system the spec belongs to (`system_of_spec`). No spec names no system:
    a SystemNotFoundError (a caller with a system in hand asks its plug-in, `configured_implementation`)."""
    name = system_of_spec(spec)
    if name is None:
        raise SystemNotFoundError(f"no implementation named: expected one of: {spellings()}.")
    return plugin_named(name).resolve(spec)


def describe_system(system: Any) -> str:
    """How output names an implementation, as its plug-in says (`SystemPlugin.describe_impl`: "the reference"
    for the journal's, "the lantern reference", or its spec)."""
    for name in SYSTEM_NAMES:
        described = plugin_named(name).describe_impl(system)
        if described is not None:
            return described
    return "an unnamed system"
