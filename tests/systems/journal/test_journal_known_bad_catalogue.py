"""The known-bad catalogue (known_bad/), without the emulator.

- the catalogue has at least 10 variants, with distinct names and distinct rules naming model transitions;
- loading the copies leaves `reference` untouched, and each copy shares nothing with it but the trusted
  clock reader (`reference.clock`);
- each variant's bug is real and localized: on its witness program, run through the in-memory fake
  Firestore, the real reference agrees with the model at every step, and the variant agrees at every step
  but the last;
- a counterexample file can name a variant, and resolves it back to the same system.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import time
import types
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

import reference
import reference.journal
from fencecheck.emulator.firestore_io import typed
from fencecheck.runners.counterexamples import program_source
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE, ReferenceAPI
from known_bad import loader
from known_bad.journal import SYSTEM_SPEC, VARIANTS, Variant, system, variant
from model.journal import TRANSITION_IDS, InjectFault, Operation, documents, documents_for, step
from tests.fakes import FakeFirestore

NAMES = [v.name for v in VARIANTS]


# --- the catalogue ----------------------------------------------------------------------------------------


def test_at_least_ten_variants_with_distinct_names_and_rules():
    assert len(VARIANTS) >= 10
    assert len(set(NAMES)) == len(NAMES)
    rules = [v.rule for v in VARIANTS]
    assert len(set(rules)) == len(rules), "two variants break the same rule"
    for v in VARIANTS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", v.name), v.name
        assert v.rule.partition(":")[0] in TRANSITION_IDS, f"{v.name}: rule {v.rule!r} names no model transition"
        assert "BUG" in v.broken, f"{v.name}: the bug must be commented where it is"
        assert v.description and v.witness


def test_variants_are_found_by_name():
    assert variant(NAMES[0]) is VARIANTS[0]
    with pytest.raises(KeyError, match="no known-bad variant"):
        variant("no-such-variant")


# --- isolation: the reference is never affected -------------------------------------------------------------


def _reference_snapshot() -> dict[str, dict[str, Any]]:
    """Every global of every loaded `reference` module, by identity (and functions by code and defaults)."""
    snapshot = {}
    for name, module in sorted(sys.modules.items()):
        if module is None or not (name == "reference" or name.startswith("reference.")):
            continue
        entries = {}
        for key, value in vars(module).items():
            entries[key] = (id(value), getattr(value, "__code__", None), getattr(value, "__defaults__", None))
        snapshot[name] = entries
    return snapshot


def _fresh_mutated_copies() -> list[tuple[Variant, types.ModuleType]]:
    copies = []
    for v in VARIANTS:
        package = loader.load_reference_copy(f"t{uuid.uuid4().hex}")
        loader.mutate(package, v.target, v.original, v.broken)
        copies.append((v, package))
    return copies


def test_loading_every_variant_leaves_the_reference_untouched():
    before = _reference_snapshot()
    code_before = reference.journal.decide._acquire.__code__
    copies = _fresh_mutated_copies()
    for v in VARIANTS:
        v.build()
    assert _reference_snapshot() == before
    assert reference.journal.decide._acquire.__code__ is code_before
    assert reference.acquire_commerce_command_lease is reference.journal.api.acquire_commerce_command_lease
    for v, package in copies:
        module_name, _, function_name = v.target.rpartition(".")
        mutated = getattr(loader.copy_modules(package)[module_name], function_name)
        original = getattr(sys.modules[f"reference.journal.{module_name}"], function_name)
        assert mutated is not original and mutated.__code__ is not original.__code__
        assert package.CommandJournalError is not reference.CommandJournalError


# The trusted clock reader is pure and no variant patches it: both systems' copies use the reference's.
SHARED_BY_DESIGN = {"reference.clock"}


def test_a_copy_shares_no_module_function_or_class_with_the_reference():
    package = loader.load_reference_copy(f"t{uuid.uuid4().hex}")
    modules = loader.copy_modules(package)
    assert {name for name in modules if name} >= {"api", "decide", "errors", "identity", "inputs", "records"}
    reference_objects = {
        id(value)
        for name, module in sys.modules.items()
        if module is not None and name.startswith("reference.journal")
        for value in vars(module).values()
        if isinstance(value, types.FunctionType | type) and value.__module__.startswith("reference")
    }
    for module in modules.values():
        assert module.__name__.startswith(package.__name__)
        for value in vars(module).values():
            if isinstance(value, types.ModuleType):
                assert not value.__name__.startswith("reference"), f"{module.__name__} imports {value.__name__}"
            if isinstance(value, types.FunctionType | type) and value.__module__ not in SHARED_BY_DESIGN:
                assert id(value) not in reference_objects, f"{module.__name__} shares {value.__qualname__}"


def test_a_mutation_must_match_exactly_once():
    package = loader.load_reference_copy(f"t{uuid.uuid4().hex}")
    with pytest.raises(loader.MutationError, match="0 times"):
        loader.mutate(package, "decide._acquire", "this line is not there", "# BUG")
    with pytest.raises(loader.MutationError, match="not a function"):
        loader.mutate(package, "decide.LEASED", "x", "# BUG")
    with pytest.raises(loader.MutationError, match="no module"):
        loader.mutate(package, "nowhere._acquire", "x", "# BUG")


def test_the_mutated_source_is_visible_in_tracebacks():
    package = variant("expiry-equality-active").load()
    assert "now <= lifecycle.expires_at" in inspect.getsource(package.decide._acquire)


# --- each bug is real and localized (fake Firestore) --------------------------------------------------------


def _write_key(fake: FakeFirestore, key_hash: str, docs: dict[str, dict]) -> None:
    for path in [path for path in fake.dump() if key_hash in path]:
        if path not in docs:
            fake.remove(path)
    for path, doc in docs.items():
        fake.seed(path, dict(doc))


def first_disagreement(api: ReferenceAPI, ops: Sequence[Operation]) -> tuple[int, str, str] | None:
    """Run `ops` on the model and on `api` over a fresh fake Firestore; the first step (0-based) whose answer,
    stored documents or untouched-document update counts differ, with the model's transition there and the
    reason; None if all agree."""
    fake = FakeFirestore()
    lockstep = Lockstep(fake, system=api, plugin=JOURNAL)
    previous: dict[str, Any] = {}
    for index, op in enumerate(ops):
        counts = fake.update_counts()
        if isinstance(op, InjectFault):
            lockstep.state, result = step(lockstep.state, op)
            if result.wrote:
                _write_key(fake, op.command.key_hash, documents_for(lockstep.state, op.command.key_hash))
        else:
            transition = step(lockstep.state, op)[1].transition
            try:
                result, observed = lockstep.apply(op)
                lockstep.check_answer(op, result, observed)
            except LockstepMismatch as mismatch:
                return index, transition, str(mismatch).splitlines()[1].strip()
        expected = {path: typed(doc) for path, doc in documents(lockstep.state).items()}
        stored = {path: typed(doc) for path, doc in fake.dump().items()}
        if stored != expected:
            differing = sorted(stored.keys() ^ expected.keys()) or "content"
            return index, result.transition, f"stored documents differ: {differing}"
        for path, doc in expected.items():
            if previous.get(path) == doc and fake.update_count(path) != counts.get(path, 0):
                return index, result.transition, f"{path} rewritten although its content did not change"
        previous = expected
    return None


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_agrees_with_the_model_on_the_witness(name):
    assert first_disagreement(REFERENCE, variant(name).witness) is None


@pytest.mark.parametrize("name", NAMES)
def test_the_variant_disagrees_exactly_at_the_last_step_of_its_witness(name):
    v = variant(name)
    found = first_disagreement(v.build(), v.witness)
    assert found is not None, f"{name}: the variant behaves like the model on its witness (the bug is not real)"
    index, transition, reason = found
    assert index == len(v.witness) - 1, f"{name}: disagrees already at step {index + 1}: {reason}"
    assert "raised" not in reason, f"{name}: the variant crashed instead of misbehaving: {reason}"
    assert transition == v.rule.partition(":")[0], f"{name}: the witness ends in {transition}, not in its rule"


# --- minimizing a failing program (stateful_tests/test_known_bad.py) -----------------------------------------


def test_minimize_reaches_a_one_minimal_failing_program():
    from stateful_tests.test_known_bad import minimize

    def fails(candidate: list) -> list | None:  # fails at 15 once 3 and 7 came before it
        if {3, 7, 15} <= set(candidate) and candidate.index(3) < candidate.index(15):
            return candidate[: candidate.index(15) + 1]
        return None

    assert minimize(list(range(20)), fails, time.monotonic() + 60) == [3, 7, 15]
    assert minimize(list(range(20)), fails, time.monotonic() - 1) == list(range(20))  # past the deadline: as is


def test_minimize_tries_the_failing_operations_partition_first():
    from stateful_tests.test_known_bad import minimize

    tried: list[list] = []

    def fails(candidate: list) -> list | None:  # partition "a" (even numbers) fails at 14 once 2 came before it
        tried.append(candidate)
        if {2, 14} <= set(candidate) and candidate.index(2) < candidate.index(14):
            return candidate[: candidate.index(14) + 1]
        return None

    program = list(range(15))
    assert minimize(program, fails, time.monotonic() + 60, partition_of=lambda n: "ab"[n % 2]) == [2, 14]
    assert tried[0] == list(range(0, 15, 2))  # the slice on 14's partition, before any halving
    tried.clear()
    assert minimize(program, fails, time.monotonic() + 60) == [2, 14]
    assert len(tried) > 6  # without the slice, delta debugging takes more replays to get there


# --- counterexample files name a variant --------------------------------------------------------------------


def test_a_counterexample_names_the_variant_and_resolves_it():
    v = VARIANTS[0]
    spec = v.build().module
    assert spec == SYSTEM_SPEC.format(name=v.name)
    source = program_source(list(v.witness), machine="KnownBadX", failure="boom", system_module=spec, plugin=JOURNAL)
    assert "from known_bad.journal import system" in source
    assert f"SYSTEM = system({v.name!r})" in source
    assert "replay(firestore_db, OPS, system=SYSTEM)" in source
    namespace: dict = {"__name__": "counterexample"}
    exec(compile(ast.parse(source), "<counterexample>", "exec"), namespace)  # noqa: S102
    assert namespace["SYSTEM"] == system(v.name)
    assert namespace["OPS"] == list(v.witness)
