"""Which implementation a suite runs against: the reference, or the system $FENCECHECK_SYSTEM names.

$FENCECHECK_SYSTEM names an implementation of one system (plug-in), spelled one of `SPELLINGS`:

- `<system>:<module>` names both, for any registered system (`lantern:mypkg.lantern_impl`,
  `cas_register:examples.cas_register.implementation`): the plug-in's `resolve` gets the whole spec and takes
  the module after its name (`module_of_spec`);
- `journal:exec:<command line>`: a journal in another process (docs/implementation-protocol.md);
- a spec a plug-in owns (`SystemPlugin.spec_prefixes`: `reference.lantern`, `known_bad.lantern:<variant>`,
  `reference.gateway`, `known_bad.gateway:<variant>`, `known_bad.journal:<variant>`);
- anything else is the journal's (DEFAULT_SYSTEM: a bare module with its four functions, as it always was). When
  the journal cannot resolve such a spec either, the error lists every spelling (`resolve_implementation`).

Suites of the other systems run against their reference: `configured_implementation(plugin)`. Each plug-in
resolves its own specs (`SystemPlugin.resolve`: the journal's spelling is in `fencecheck/plugins/journal.py`).

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
from fencecheck.plugin import SystemPlugin
from fencecheck.plugins import SYSTEM_NAMES, UNNAMED_SYSTEM
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
    """The implementation of the unnamed system (the journal) a spec names, for callers from before specs named
    their system (benchmarks/protocol_throughput.py)."""
    return plugin_named(UNNAMED_SYSTEM).resolve(spec)


DEFAULT_SYSTEM = UNNAMED_SYSTEM  # owns every spec no plug-in claims: its implementations may be any module
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


def system_of_spec(spec: str | None) -> str | None:
    """The plug-in a system spec belongs to ("journal", "lantern", "gateway", or a system registered from
    outside), None for an empty spec. A spec no plug-in claims is the journal's (DEFAULT_SYSTEM)."""
    spec = (spec or "").strip()
    if not spec:
        return None
    return _claimant(spec) or DEFAULT_SYSTEM


def _resolve(plugin: SystemPlugin, spec: str | None) -> Any:
    """`plugin.resolve(spec)`; for a spec no plug-in claimed (taken as a bare journal module), a failure says
    so and lists the spellings, since the journal's own message would mislead about a typo in another's."""
    try:
        return plugin.resolve(spec)
    except SystemNotFoundError as error:
        stripped = (spec or "").strip()
        if not stripped or _claimant(stripped) is not None:
            raise
        raise SystemNotFoundError(
            f"no system claims the spec {stripped!r}, so it was taken as a bare journal module, and that failed: "
            f"{error} An implementation is spelled one of: {spellings()}.") from None


def configured_implementation(plugin: SystemPlugin, env: Mapping[str, str] | None = None) -> Any:
    """The implementation of `plugin`'s system that the suites run against: the one $FENCECHECK_SYSTEM names
    when it names one of this system, else the plug-in's reference (the same object, so `is` tells)."""
    env = os.environ if env is None else env
    spec = env.get(ENV_SYSTEM)
    if system_of_spec(spec) != plugin.name:
        return plugin.reference
    return _resolve(plugin, spec)


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
    """An implementation of whichever system the spec belongs to (`system_of_spec`; no spec: the journal's
    reference)."""
    return _resolve(plugin_named(system_of_spec(spec) or DEFAULT_SYSTEM), spec)


def describe_system(system: Any) -> str:
    """How output names an implementation, as its plug-in says (`SystemPlugin.describe_impl`: "the reference"
    for the journal's, "the lantern reference", or its spec)."""
    for name in SYSTEM_NAMES:
        described = plugin_named(name).describe_impl(system)
        if described is not None:
            return described
    return "an unnamed system"
