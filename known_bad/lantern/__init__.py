"""Known-bad variants of the lantern reference (`reference/lantern`): the seed's findings as they were before
the fix, and the fixes the seed rejected, looked up by name.

    from known_bad.lantern import VARIANTS, system, variant
    api = system("finding_5_read_then_write_extinguish")   # the patched copy of the reference.lantern package
    api.extinguish_lantern(db=..., user_id=..., lantern_id=..., clock=...)   # raises api.LanternError

Each variant is an isolated copy of `reference/lantern` (`known_bad.loader.load_reference_copy` with
`package_name="lantern"`), loaded as `known_bad._copies.lantern_<name>.lantern`, with one or two blocks of
source lines replaced (`known_bad.loader.mutate`, each block found exactly once; the bug is commented in
place). The real `reference.lantern` is never modified and never imports anything from here. A copy does share
the journal's runner (`reference.journal.runner`, imported by absolute name): the lantern wraps it by design,
and no variant touches it.

What a lantern system is: a module with the six operations (`light_lantern`, `activate_scheduled_lantern`,
`extinguish_lantern`, `read_active_lanterns`, `create_venue`, `delete_venue`) and its own `LanternError`;
`reference.lantern` is one, `variant(name).build()` is another. Systems are named `known_bad.lantern:<name>`
(`SYSTEM_SPEC`), as the journal's variants are named `known_bad.journal:<name>`.

Every variant names the seed scenario that must catch it (`scenario`, run by
tests/systems/lantern/test_lantern_known_bad.py) and the property that fails there (`failing_property`). The
catalogue itself is in `known_bad/lantern/variants.py`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType

import attrs

import reference.lantern
from known_bad.loader import load_reference_copy, mutate

SYSTEM_SPEC = "known_bad.lantern:{name}"
LANTERN_PACKAGE_DIR = Path(reference.lantern.__file__).resolve().parent
OPERATIONS = (
    "light_lantern",
    "activate_scheduled_lantern",
    "extinguish_lantern",
    "read_active_lanterns",
    "create_venue",
    "delete_venue",
)

_lock = threading.Lock()
_loaded: dict[str, ModuleType] = {}


@attrs.frozen
class Edit:
    """One replaced block: in the function `target` ("module.function" of reference/lantern), the block of whole
    lines `original` (exactly once, any indentation) becomes `broken`."""

    target: str
    original: str
    broken: str


@attrs.frozen
class Variant:
    """One deliberate bug (a seed finding before its fix, or a fix the seed rejected).

    `finding`: the seed's label (#3, #4, #5, #13, or the rejected option A3/C1). `rule`: the model transition
    (`model.lantern.TRANSITION_IDS`) whose row the bug breaks, `:aspect` when only a race or an injected
    failure shows it. `scenario`: the seed scenario that must catch it; `failing_property`: what fails there.
    `concurrent`: only a race shows it (the test repeats the scenario a bounded number of times)."""

    name: str
    finding: str
    rule: str
    description: str
    scenario: str
    failing_property: str
    edits: tuple[Edit, ...]
    concurrent: bool = False

    @property
    def alias(self) -> str:
        return "lantern_" + self.name.replace("-", "_")

    @property
    def system_spec(self) -> str:
        return SYSTEM_SPEC.format(name=self.name)

    def load(self) -> ModuleType:
        """The patched copy of the reference lantern package (loaded and patched once per process)."""
        with _lock:
            package = _loaded.get(self.name)
            if package is None:
                package = load_fresh_copy(self.alias, self.edits)
                _loaded[self.name] = package
            return package

    def build(self) -> ModuleType:
        """The system under test: the patched package (its six operations and its own LanternError)."""
        return self.load()


def load_fresh_copy(alias: str, edits: tuple[Edit, ...] = ()) -> ModuleType:
    """A new copy of reference/lantern under `known_bad._copies.<alias>.lantern`, with `edits` applied in order."""
    package = load_reference_copy(alias, LANTERN_PACKAGE_DIR, package_name="lantern")
    for edit in edits:
        mutate(package, edit.target, edit.original, edit.broken)
    return package


from .variants import CATALOGUE as VARIANTS  # noqa: E402 - the catalogue needs Variant defined above

_BY_NAME = {v.name: v for v in VARIANTS}
assert len(_BY_NAME) == len(VARIANTS), "duplicate variant name"


def variant(name: str) -> Variant:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no known-bad lantern variant {name!r}; known: {', '.join(_BY_NAME)}") from None


def system(name: str) -> ModuleType:
    """The named variant's lantern system (what `known_bad.lantern:<name>` resolves to)."""
    return variant(name).build()


__all__ = ["LANTERN_PACKAGE_DIR", "OPERATIONS", "SYSTEM_SPEC", "VARIANTS", "Edit", "Variant", "system", "variant"]
