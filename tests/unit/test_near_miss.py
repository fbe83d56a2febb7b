"""Near-miss classes (fencecheck.checker.near_miss): the core's, told from the program, and the journal's, told from
its state; counted per class in the coverage file and merged for the evidence."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from fencecheck.checker import coverage, near_miss
from fencecheck.plugin.registry import plugin
from model.journal import Acquire, CommandRef, Complete, Fail, JournalState, Register, step

T0 = datetime(2026, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)
REF = CommandRef("test", "firebase_uid", "uid-0", "0f8fad5b-d9cb-469f-a165-70867728950e", "c", 1, "{}")
HOLDER, OTHER = "7c9e6679-7425-40de-944b-e07fc1f90ae7", "886313e1-3b8a-4372-9b90-0c9aee199e5d"
JOURNAL = plugin("journal")


def _after(*ops):
    state = JournalState.empty()
    for op in ops:
        state, _result = step(state, op)
    return state


def test_the_same_call_at_another_time_is_an_exact_retry():
    assert near_miss.program_classes(Register(REF, T0 + US), [Register(REF, T0)], JOURNAL.clock_of) == {
        near_miss.EXACT_RETRY}


def test_one_changed_field_at_any_depth_is_one_field_changed_and_two_are_neither():
    one = Register(attrs.evolve(REF, payload='{"a":1}'), T0)
    two = Register(attrs.evolve(REF, payload='{"a":1}', command_type="d"), T0)
    assert near_miss.program_classes(one, [Register(REF, T0)], JOURNAL.clock_of) == {near_miss.ONE_FIELD_CHANGED}
    assert near_miss.program_classes(two, [Register(REF, T0)], JOURNAL.clock_of) == set()
    # another operation is never a retry of this one
    assert near_miss.program_classes(Acquire(REF, HOLDER, T0), [Register(REF, T0)], JOURNAL.clock_of) == set()


def test_a_types_change_is_a_change():
    assert near_miss._leaves({"x": True}) != near_miss._leaves({"x": 1})


def test_the_journal_tells_a_current_fence_from_another_holder_and_the_clock_at_the_expiry():
    state = _after(Register(REF, T0), Acquire(REF, HOLDER, T0))
    record = state.get(REF.key_hash)
    expiry = record.lifecycle.expires_at
    assert "current-fence-other-holder" in JOURNAL.near_misses(state, Complete(REF, OTHER, 1, "a" * 64, T0))
    assert "current-fence-other-holder" not in JOURNAL.near_misses(state, Complete(REF, HOLDER, 1, "a" * 64, T0))
    assert "current-fence-other-holder" not in JOURNAL.near_misses(state, Fail(REF, OTHER, 2, T0))
    for moment in (expiry - US, expiry, expiry + US):
        assert "clock-boundary" in JOURNAL.near_misses(state, Fail(REF, HOLDER, 1, moment))
    assert "clock-boundary" not in JOURNAL.near_misses(state, Fail(REF, HOLDER, 1, expiry + 2 * US))


def test_the_journal_tells_an_identity_one_field_from_the_stored_registration():
    state = _after(Register(REF, T0))
    changed = Register(attrs.evolve(REF, endpoint_schema_version=2), T0 + US)
    assert "stored-but-one-field" in JOURNAL.near_misses(state, changed)
    assert "stored-but-one-field" not in JOURNAL.near_misses(state, Register(REF, T0 + US))


def test_a_class_the_model_does_not_know_is_an_error():
    weird = attrs.evolve(JOURNAL, model=attrs.evolve(JOURNAL.model, near_misses=lambda _s, _o: ("nearly",)))
    with pytest.raises(ValueError, match="'nearly'"):
        near_miss.classes(weird, JournalState.empty(), Register(REF, T0), [])


def test_the_coverage_file_carries_every_class_and_merges(tmp_path):
    first = coverage.write(tmp_path, "gw0", {}, "journal", {near_miss.EXACT_RETRY: {"register.retry": 2}})
    second = coverage.write(tmp_path, "gw1", {}, "journal", {near_miss.EXACT_RETRY: {"register.retry": 1},
                                                              near_miss.CLOCK_BOUNDARY: {"acquire.takeover": 4}})
    assert list(json.loads(first.read_text())["nearMiss"]) == list(near_miss.CLASSES)
    merged = coverage.merge_near_misses([first, second])
    assert merged[near_miss.EXACT_RETRY] == {"register.retry": 3}
    assert merged[near_miss.CLOCK_BOUNDARY] == {"acquire.takeover": 4}
    assert merged[near_miss.ONE_FIELD_CHANGED] == {}
    with pytest.raises(ValueError, match="unknown near-miss class"):
        near_miss.merge([{"nearly": {}}])
