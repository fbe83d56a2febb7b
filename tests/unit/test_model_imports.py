"""The model depends on no reference (issue 23, point 4).

`model/<system>` is the executable specification; `reference/<system>` and `known_bad/<system>` are the code it
checks. A model module that imported a reference's helper (as model/journal/ops.py once imported
`reference.journal.identity`) would make the spec share the reference's mistakes: a wrong formula would be
in both, and no lockstep run could see it. So no module under model/ imports reference/ or known_bad/, in any
form (`import`, `from ... import`, inside a function, or `importlib.import_module("...")` with a literal
name); each side keeps its own copy of what both need (identity: model/journal/identity.py and
reference/journal/identity.py), and the golden vectors pin each copy on its own
(tests/systems/journal/test_journal_identity_golden.py, tests/systems/gateway/test_gateway_identity.py). The
converse holds too: the reference imports no model.

Read with `ast`, never by importing, so the test sees every import whether or not it would run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_core_imports_no_system import imports_in, imports_of

ROOT = Path(__file__).resolve().parents[2]

# package -> the packages it must not import, and why, for the failure message
FORBIDDEN = {
    "model": (("reference", "known_bad"), "the model is the spec: write what it needs from the contract in "
                                          "model/<system>/ (as model/journal/identity.py does), not import it"),
    "reference": (("model",), "the reference is checked against the model: keep its own copy in "
                              "reference/<system>/ (as reference/gateway/identity.py does)"),
}


def _forbidden(module: str, packages: tuple[str, ...]) -> bool:
    return module.split(".")[0] in packages


def violations(package: str) -> list[str]:
    """`file:line imports module`, once per import statement."""
    packages, _ = FORBIDDEN[package]
    found: dict[tuple[Path, int], str] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in imports_of(path):
            if _forbidden(module, packages):
                found.setdefault((path, line), f"{path.relative_to(ROOT)}:{line} imports {module}")
    return list(found.values())


def test_there_are_model_and_reference_modules_to_check():
    for package in FORBIDDEN:
        assert len(list((ROOT / package).rglob("*.py"))) > 10, package
    assert (ROOT / "model" / "journal" / "identity.py").exists()


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_the_spec_and_the_code_it_checks_import_nothing_of_each_other(package):
    found = violations(package)
    packages, fix = FORBIDDEN[package]
    assert found == [], (f"expected no module under {package}/ to import {' or '.join(packages)}; found:\n"
                         + "\n".join(found) + f"\nfix: {fix}")


# --- the detector itself can fail ----------------------------------------------------------------------------


@pytest.mark.parametrize("source, module", [
    ("from reference.journal import identity", "reference.journal"),
    ("from reference.journal.identity import audit_path", "reference.journal.identity"),
    ("import reference", "reference"),
    ("def f():\n    from known_bad.journal import variant\n", "known_bad.journal"),
    ("import importlib\nimportlib.import_module('reference.lantern.geo')", "reference.lantern.geo"),
])
def test_the_detector_finds_each_form_in_a_model_module(source, module):
    found = [name for _, name in imports_in(source, "model.journal") if _forbidden(name, FORBIDDEN["model"][0])]
    assert module in found


def test_the_detector_leaves_the_models_own_imports_alone():
    source = "from . import identity\nfrom .identity import digest\nfrom model.journal.constants import X\n"
    assert [name for _, name in imports_in(source, "model.journal")
            if _forbidden(name, FORBIDDEN["model"][0])] == []
