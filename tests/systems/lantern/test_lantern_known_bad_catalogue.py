"""The lantern known-bad catalogue (known_bad/lantern/), without the emulator.

- the catalogue holds the seed's four findings (#3, #4, #5, #13) and the rejected fixes, with distinct names,
  rules naming model transitions, a scenario and a failing property each, and every bug commented in place;
- every replaced block occurs exactly once in its reference function, and a variant changes nothing but its
  target functions (every other function of the copy has the reference's bytecode);
- loading the copies leaves `reference.lantern` untouched, and a copy shares no module, function or class
  with it (only the journal runner it wraps and the trusted clock reader, by design), not even its LanternError;
- the loader's new `package_name` keeps the journal's default.

Whether each bug is caught is the emulator's job (tests/systems/lantern/test_lantern_known_bad.py): the in-memory
fake Firestore has no Increment, batch or query, which every lantern scenario needs.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
import types
import uuid
from typing import Any

import pytest

import reference.journal
import reference.lantern
from known_bad import loader
from known_bad.lantern import (
    LANTERN_PACKAGE_DIR,
    OPERATIONS,
    SYSTEM_SPEC,
    VARIANTS,
    Edit,
    Variant,
    load_fresh_copy,
    system,
    variant,
)
from model.lantern import TRANSITION_IDS

NAMES = [v.name for v in VARIANTS]
SEED_FINDINGS = {
    "finding_3_venue_in_read_set": "#3",
    "finding_4_guard_cleared_after_commit": "#4",
    "finding_5_read_then_write_extinguish": "#5",
    "finding_13_blind_decrement_deleted_venue": "#13",
}
# What a lantern copy may share with `reference`: the journal runner the lantern runner wraps (by design).
# The journal runner it wraps, and the trusted clock reader (pure, and no variant patches it).
SHARED_BY_DESIGN = {"reference.journal.runner", "reference.journal.errors", "reference.clock"}


def _fresh(edits: tuple[Edit, ...] = ()) -> types.ModuleType:
    return load_fresh_copy(f"t{uuid.uuid4().hex}", edits)


def _reference_function(target: str) -> types.FunctionType:
    module_name, _, function_name = target.rpartition(".")
    return getattr(sys.modules[f"reference.lantern.{module_name}"], function_name)


# --- the catalogue ----------------------------------------------------------------------------------------------


def test_the_seed_findings_and_the_rejected_fixes_are_all_there():
    assert len(set(NAMES)) == len(NAMES)
    assert {name: variant(name).finding for name in SEED_FINDINGS} == SEED_FINDINGS
    assert {v.finding for v in VARIANTS} >= {"#3", "#4", "#5", "#13", "A3", "C1"}
    rules = [v.rule for v in VARIANTS]
    assert len(set(rules)) == len(rules), "two variants break the same rule"


@pytest.mark.parametrize("name", NAMES)
def test_a_variant_is_described_completely(name):
    v = variant(name)
    assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", v.name), v.name
    assert v.rule.partition(":")[0] in TRANSITION_IDS, f"{name}: rule {v.rule!r} names no model transition"
    assert v.description and v.scenario and v.failing_property and v.edits
    for edit in v.edits:
        assert "BUG" in edit.broken, f"{name}: the bug must be commented where it is ({edit.target})"
    assert v.system_spec == SYSTEM_SPEC.format(name=name) == f"known_bad.lantern:{name}"


def test_variants_are_found_by_name():
    assert variant(NAMES[0]) is VARIANTS[0]
    with pytest.raises(KeyError, match="no known-bad lantern variant"):
        variant("no_such_variant")


# --- each replacement applies exactly once, and changes nothing else --------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_replaced_block_occurs_exactly_once_in_its_reference_function(name):
    for edit in variant(name).edits:
        source = textwrap.dedent(inspect.getsource(_reference_function(edit.target)))
        replaced = loader._replace_block(source, edit.original, edit.broken)  # raises unless exactly once
        assert replaced != source and "BUG" in replaced
        assert "BUG" not in source
        # and the same block twice would not do: the loader refuses anything but exactly one occurrence
        with pytest.raises(loader.MutationError, match="2 times"):
            loader._replace_block(source + source, edit.original, edit.broken)


def _functions(package: types.ModuleType) -> dict[str, types.FunctionType]:
    """Every function defined in a copy's modules, by `module.function`."""
    found = {}
    for short, module in loader.copy_modules(package).items():
        for key, value in vars(module).items():
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
                found[f"{short}.{key}"] = value
    return found


def _fingerprint(code: types.CodeType) -> tuple:
    """A function's bytecode with that of the functions nested in it (closures such as light_body's `body`)."""
    consts = tuple(_fingerprint(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.co_code, consts, code.co_names


@pytest.mark.parametrize("name", NAMES)
def test_a_variant_changes_its_target_functions_and_nothing_else(name):
    v = variant(name)
    clean, broken = _functions(_fresh()), _functions(v.build())
    assert clean.keys() == broken.keys()
    changed = {key for key in clean if _fingerprint(clean[key].__code__) != _fingerprint(broken[key].__code__)}
    assert changed == {edit.target for edit in v.edits}
    for edit in v.edits:
        assert "BUG" in inspect.getsource(broken[edit.target])  # the mutated source is what tracebacks show


def test_a_variant_is_built_once_per_process():
    v = VARIANTS[0]
    assert v.build() is v.build() is system(v.name)


# --- isolation: reference.lantern is never affected ----------------------------------------------------------


def _reference_snapshot() -> dict[str, dict[str, Any]]:
    """Every global of every loaded `reference` module, by identity (and functions by code and defaults)."""
    snapshot = {}
    for name, module in sorted(sys.modules.items()):
        if module is None or not (name == "reference" or name.startswith("reference.")):
            continue
        snapshot[name] = {
            key: (id(value), getattr(value, "__code__", None), getattr(value, "__defaults__", None))
            for key, value in vars(module).items()
        }
    return snapshot


def test_loading_every_variant_leaves_the_reference_untouched():
    before = _reference_snapshot()
    codes = {v.name: [_reference_function(e.target).__code__ for e in v.edits] for v in VARIANTS}
    copies = [(v, _fresh(v.edits)) for v in VARIANTS]
    for v in VARIANTS:
        v.build()
    assert _reference_snapshot() == before
    for v, package in copies:
        for edit, code in zip(v.edits, codes[v.name], strict=True):
            assert _reference_function(edit.target).__code__ is code
            module_name, _, function_name = edit.target.rpartition(".")
            mutated = getattr(loader.copy_modules(package)[module_name], function_name)
            assert mutated.__code__ is not code
    assert reference.lantern.extinguish_lantern is reference.lantern.api.extinguish_lantern
    assert reference.lantern.light_lantern is reference.lantern.api.light_lantern


def test_a_copy_shares_nothing_with_the_reference_but_the_journal_runner():
    package = _fresh()
    modules = loader.copy_modules(package)
    assert package.__name__.startswith(f"{loader.COPIES}.") and package.__name__.endswith(".lantern")
    assert {name for name in modules if name} >= {"api", "decide", "errors", "layer", "records", "runner"}
    reference_objects = {
        id(value): name
        for name, module in sys.modules.items()
        if module is not None and (name == "reference" or name.startswith("reference."))
        for value in vars(module).values()
        if isinstance(value, types.FunctionType | type) and value.__module__.startswith("reference")
    }
    shared = set()
    for module in modules.values():
        assert module.__name__.startswith(package.__name__)
        for value in vars(module).values():
            if isinstance(value, types.ModuleType):
                assert not value.__name__.startswith("reference"), f"{module.__name__} imports {value.__name__}"
            if isinstance(value, types.FunctionType | type) and id(value) in reference_objects:
                shared.add(value.__module__)
    assert shared <= SHARED_BY_DESIGN, f"a copy shares objects of {sorted(shared - SHARED_BY_DESIGN)}"
    assert package.LanternError is not reference.lantern.LanternError
    assert not issubclass(package.LanternError, reference.lantern.LanternError)


@pytest.mark.parametrize("name", NAMES)
def test_a_variant_is_a_lantern_system_with_its_own_error(name):
    api = system(name)
    for operation in OPERATIONS:
        assert callable(getattr(api, operation)), operation
        assert getattr(api, operation) is not getattr(reference.lantern, operation)
    # invalid input is refused before any Firestore call, with the copy's own error class
    with pytest.raises(api.LanternError) as raised:
        api.extinguish_lantern(db=None, user_id="", lantern_id="lan-1")
    assert raised.value.code == "invalid_lantern_input"
    assert not isinstance(raised.value, reference.lantern.LanternError)


# --- the loader's package_name ----------------------------------------------------------------------------------


def test_the_loader_copies_the_journal_by_default_and_another_package_by_name():
    alias = f"t{uuid.uuid4().hex}"
    journal = loader.load_reference_copy(alias)
    lantern = loader.load_reference_copy(alias, LANTERN_PACKAGE_DIR, package_name="lantern")
    assert journal.__name__ == f"{loader.COPIES}.{alias}.journal"
    assert lantern.__name__ == f"{loader.COPIES}.{alias}.lantern"
    assert sys.modules[f"{loader.COPIES}.{alias}"].journal is journal
    assert sys.modules[f"{loader.COPIES}.{alias}"].lantern is lantern
    assert hasattr(journal, "CommandJournalError") and hasattr(lantern, "LanternError")
    assert loader.REFERENCE_PACKAGE_DIR == __import__("pathlib").Path(reference.journal.__file__).resolve().parent
    with pytest.raises(ValueError, match="already loaded"):
        loader.load_reference_copy(alias, LANTERN_PACKAGE_DIR, package_name="lantern")
    with pytest.raises(ValueError, match="package_name"):
        loader.load_reference_copy(f"t{uuid.uuid4().hex}", LANTERN_PACKAGE_DIR, package_name="not-an-identifier")


def test_a_variant_value_is_plain_data():
    v = VARIANTS[0]
    assert isinstance(v, Variant) and all(isinstance(edit, Edit) for edit in v.edits)
    assert v.alias.isidentifier() and v.alias.startswith("lantern_")
