"""Known-bad variants of the gateway reference (`reference/gateway`): the contract's hazards, each as a
realistic bug, looked up by name (docs/gateway-contract.md, "Races and known-bad variants").

    from known_bad.gateway import VARIANTS, system, variant
    api = system("release_at_the_deadline")   # the patched copy of the reference.gateway package
    api.record_manual_terminal(db=..., ..., clock=...)   # raises api.GatewayError

Each variant is an isolated copy of `reference/gateway` (`known_bad.loader.load_reference_copy` with
`package_name="gateway"`), loaded as `known_bad._copies.gateway_<name>.gateway`, with one or two blocks of
source lines replaced (`known_bad.loader.mutate`, each block found exactly once; the bug is commented in place
with `BUG`). The copy's dispatch table (`decide._DECIDE`) is rebound to the mutated functions (the loader
rebinds module names, not dict values). The real `reference.gateway` is never modified and never imports
anything from here. Systems are named `known_bad.gateway:<name>` (`SYSTEM_SPEC`) and resolved by
`fencecheck.systems.gateway.plugin.resolve`.

`rule` names the model transition whose row the bug breaks; `concurrent` variants are indistinguishable from
the reference in any sequential program (only a race shows them) and are left to the race scenarios.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType

import attrs

import reference.gateway
from known_bad.loader import copy_modules, load_reference_copy, mutate

SYSTEM_SPEC = "known_bad.gateway:{name}"
GATEWAY_PACKAGE_DIR = Path(reference.gateway.__file__).resolve().parent

_lock = threading.Lock()
_loaded: dict[str, ModuleType] = {}


@attrs.frozen
class Edit:
    """One replaced block: in the function `target` ("module.function" of reference/gateway), the block of whole
    lines `original` (exactly once, any indentation) becomes `broken`."""

    target: str
    original: str
    broken: str


@attrs.frozen
class Variant:
    name: str
    rule: str  # the model transition (model.gateway.TRANSITION_IDS) whose row the bug breaks
    description: str
    edits: tuple[Edit, ...]
    concurrent: bool = False  # only a race shows it

    @property
    def alias(self) -> str:
        return "gateway_" + self.name.replace("-", "_")

    @property
    def system_spec(self) -> str:
        return SYSTEM_SPEC.format(name=self.name)

    def build(self) -> ModuleType:
        """The patched copy of the reference gateway package (loaded and patched once per process)."""
        with _lock:
            package = _loaded.get(self.name)
            if package is None:
                package = load_fresh_copy(self.alias, self.edits)
                _loaded[self.name] = package
            return package


def load_fresh_copy(alias: str, edits: tuple[Edit, ...] = ()) -> ModuleType:
    """A new copy of reference/gateway under `known_bad._copies.<alias>.gateway`, with `edits` applied in order."""
    package = load_reference_copy(alias, GATEWAY_PACKAGE_DIR, package_name="gateway")
    for edit in edits:
        mutate(package, edit.target, edit.original, edit.broken)
    decide = copy_modules(package)["decide"]
    for operation, function in list(decide._DECIDE.items()):
        decide._DECIDE[operation] = getattr(decide, function.__name__)  # the mutated function, if any
    return package


from .variants import CATALOGUE as VARIANTS  # noqa: E402 - the catalogue needs Variant defined above

_BY_NAME = {v.name: v for v in VARIANTS}
assert len(_BY_NAME) == len(VARIANTS), "duplicate variant name"


def variant(name: str) -> Variant:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no known-bad gateway variant {name!r}; known: {', '.join(_BY_NAME)}") from None


def system(name: str) -> ModuleType:
    """The named variant's gateway system (what `known_bad.gateway:<name>` resolves to)."""
    return variant(name).build()


__all__ = ["GATEWAY_PACKAGE_DIR", "SYSTEM_SPEC", "VARIANTS", "Edit", "Variant", "system", "variant"]
