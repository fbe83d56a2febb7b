"""The compare-and-set register's known-bad catalogue: deliberately broken implementations that the suites must
catch (`fencecheck gate --plugin examples.cas_register.plugin:CAS_REGISTER --known-bad blind_compare_and_set`
runs the stateful and race suites against one and says whether it was caught). The plug-in names it as its
`SuiteParts.catalogue` and spells each variant's spec in `known_bad_variants`: `cas_register:<its module>`.

None is concurrent (only a race would show it), so no race module's CATCHES or parallel variant names one; run by
the gate, `blind_compare_and_set` is caught by the lockstep machine and by the `cas_from_same_value` race.
"""

from __future__ import annotations

import attrs

SYSTEM = "cas_register"


@attrs.frozen
class Variant:
    """One deliberate bug: `rule` is the model transition (model.TRANSITIONS) whose row it breaks; `module` the
    implementation module that has it."""

    name: str
    rule: str
    description: str
    module: str

    @property
    def spec(self) -> str:
        return f"{SYSTEM}:{self.module}"


VARIANTS = (
    Variant("blind_compare_and_set", "cas_mismatch", "a compare-and-set swaps whatever the register holds: it "
            "never compares", "examples.cas_register.blind_cas"),
)
_BY_NAME = {v.name: v for v in VARIANTS}


def variant(name: str) -> Variant:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no known-bad cas_register variant {name!r}; known: {', '.join(_BY_NAME)}") from None


def specs() -> dict[str, str]:
    """Variant name -> the spec that resolves it, in catalogue order (the plug-in's `known_bad_variants`)."""
    return {v.name: v.spec for v in VARIANTS}
