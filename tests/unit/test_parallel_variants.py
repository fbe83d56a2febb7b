"""The concurrent known-bad catalogue (known_bad/journal/concurrent_variants.py), without the emulator.

- its variants are apart from the sequential catalogue (which the lockstep machine must catch) and found by
  name like every other variant, so a counterexample naming one resolves;
- each patch applies to its own copy, carries its commented BUG, and leaves the reference untouched;
- each bug is the one described: the patched function's source shows the concurrency mistake.
"""

from __future__ import annotations

import inspect

import pytest

import reference.journal
from fencecheck.systems.journal.plugin import REFERENCE
from known_bad import loader
from known_bad.journal import CONCURRENT_VARIANTS, SYSTEM_SPEC, VARIANTS, system, variant
from model.journal import TRANSITION_IDS

NAMES = [v.name for v in CONCURRENT_VARIANTS]


def test_three_concurrent_variants_kept_apart_from_the_sequential_catalogue():
    assert len(CONCURRENT_VARIANTS) >= 3
    assert not set(NAMES) & {v.name for v in VARIANTS}
    for v in CONCURRENT_VARIANTS:
        assert v.rule.partition(":")[0] in TRANSITION_IDS and v.rule.endswith(
            (":concurrent", ":stale-next-audit-id")
        ), v.rule
        assert "BUG" in v.broken and v.description and v.witness == ()


@pytest.mark.parametrize("name", NAMES)
def test_found_by_name_and_spec(name):
    v = variant(name)
    api = system(name)
    assert api.module == SYSTEM_SPEC.format(name=name) and api != REFERENCE
    assert api.error_type is not reference.journal.CommandJournalError  # the copy's own class
    assert v.build() == api


@pytest.mark.parametrize("name", NAMES)
def test_the_patch_is_the_described_mistake_and_the_reference_is_untouched(name):
    v = variant(name)
    module_name, _, function_name = v.target.rpartition(".")
    original = getattr(getattr(reference.journal, module_name), function_name)
    before = original.__code__
    patched = getattr(loader.copy_modules(v.load())[module_name], function_name)
    source = inspect.getsource(patched)
    assert "BUG" in source and "BUG" not in inspect.getsource(original)
    assert original.__code__ is before
    expected = {
        "acquire-checked-outside-transaction": ("get_all=db.get_all", "tx.set("),
        "finish-split-transactions": ("read_and_decide", "tx.set("),
        "audit-id-from-stale-read": ("db.document(identity.lifecycle_path(key)).get()", "next_id"),
    }[name]
    assert all(fragment in source for fragment in expected), source
