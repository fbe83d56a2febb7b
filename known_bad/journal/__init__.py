"""Known-bad variants of the reference command journal (`reference/journal`), looked up by name.

    from known_bad.journal import VARIANTS, system, variant
    variant("expiry-equality-active").build()     # its ReferenceAPI (loads the patched copy once)
    system("expiry-equality-active")              # the same
    [v.name for v in VARIANTS]

Counterexamples name a variant's system as `"known_bad.journal:<name>"` (`SYSTEM_SPEC`), which
fencecheck.runners.counterexamples renders as `from known_bad.journal import system; SYSTEM = system("<name>")`.
The catalogue itself is in `known_bad/journal/variants.py`.
"""

from __future__ import annotations

import threading
from types import ModuleType

import attrs

from fencecheck.systems.journal.plugin import ReferenceAPI
from known_bad.loader import load_reference_copy, mutate
from model.journal import Operation

SYSTEM_SPEC = "known_bad.journal:{name}"

_lock = threading.Lock()
_loaded: dict[str, ModuleType] = {}


@attrs.frozen
class Mutation:
    """One more block of one more function, for a bug that spans two functions (`Variant.also`)."""

    target: str
    original: str
    broken: str


@attrs.frozen
class Variant:
    """One deliberate bug: `target` ("module.function" of reference/journal) with the block of lines `original`
    replaced by `broken`. `rule` names the broken rule (a model transition id, `:aspect` optional);
    `witness` is a short program on which the model and this variant disagree at the last step."""

    name: str
    rule: str
    description: str
    target: str
    original: str
    broken: str
    witness: tuple[Operation, ...] = ()
    also: tuple[Mutation, ...] = ()  # further blocks replaced in the same copy

    @property
    def alias(self) -> str:
        return "v_" + self.name.replace("-", "_")

    def load(self) -> ModuleType:
        """The patched copy of the reference journal package (loaded once per process)."""
        with _lock:
            package = _loaded.get(self.name)
            if package is None:
                package = load_reference_copy(self.alias)
                mutate(package, self.target, self.original, self.broken)
                for more in self.also:
                    mutate(package, more.target, more.original, more.broken)
                _loaded[self.name] = package
            return package

    def build(self) -> ReferenceAPI:
        """The four journal functions of the patched copy (and its own CommandJournalError)."""
        return attrs.evolve(ReferenceAPI.from_module(self.load()), module=SYSTEM_SPEC.format(name=self.name))


from .concurrent_variants import CONCURRENT_CATALOGUE as CONCURRENT_VARIANTS  # noqa: E402 - only a race shows these
from .variants import CATALOGUE as VARIANTS  # noqa: E402 - the catalogue needs Variant defined above
from .wire_variants import WIRE_CATALOGUE as WIRE_VARIANTS  # noqa: E402 - only wire faults show these

_BY_NAME = {v.name: v for v in (*VARIANTS, *CONCURRENT_VARIANTS, *WIRE_VARIANTS)}
assert len(_BY_NAME) == len(VARIANTS) + len(CONCURRENT_VARIANTS) + len(WIRE_VARIANTS), "duplicate variant name"


def variant(name: str) -> Variant:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no known-bad variant {name!r}; known: {', '.join(_BY_NAME)}") from None


def system(name: str) -> ReferenceAPI:
    """The ReferenceAPI of the named variant (what a counterexample file replays against)."""
    return variant(name).build()


__all__ = ["CONCURRENT_VARIANTS", "SYSTEM_SPEC", "VARIANTS", "Variant", "system", "variant"]
