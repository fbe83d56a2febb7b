"""fencecheck.checker.coverage: per-process transition counts, their files, merge and the unexercised list."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from fencecheck.checker import coverage
from model.journal import TRANSITIONS

REACHABLE = [row.id for row in TRANSITIONS if row.reachable]
UNREACHABLE = [row.id for row in TRANSITIONS if not row.reachable]


def test_write_names_the_file_after_the_worker_and_lists_every_row(tmp_path):
    path = coverage.write(tmp_path, "gw1", Counter({"register.absent.new": 3}), "journal")
    assert path == tmp_path / "journal-transitions-gw1.json"
    data = json.loads(path.read_text())
    assert data["schema"] == coverage.schema("journal") and data["worker"] == "gw1"
    assert list(data["counts"]) == [row.id for row in TRANSITIONS]  # table order, zeros included
    assert data["counts"]["register.absent.new"] == 3
    assert "register.absent.new" not in data["unexercised_reachable"]
    assert "register.existing.same" in data["unexercised_reachable"]


def test_merge_sums_counts_across_files(tmp_path):
    a = coverage.write(tmp_path, "gw0", {"register.absent.new": 2, "acquire.first": 1}, "journal")
    b = coverage.write(tmp_path, "gw1", {"register.absent.new": 5, "any.corrupt": 4}, "journal")
    merged = coverage.merge([a, b], "journal")
    assert merged["register.absent.new"] == 7
    assert merged["acquire.first"] == 1 and merged["any.corrupt"] == 4
    assert merged["fail.exact"] == 0
    assert set(merged) == {row.id for row in TRANSITIONS}


def test_merge_of_nothing_is_all_zeros():
    assert coverage.merge([], "journal") == coverage.empty_counts("journal")


def test_merge_rejects_a_foreign_file(tmp_path):
    path = tmp_path / "journal-transitions-x.json"
    path.write_text(json.dumps({"counts": {}}))
    with pytest.raises(ValueError, match="not a"):
        coverage.merge([path], "journal")


def test_unknown_transition_ids_are_an_error(tmp_path):
    with pytest.raises(ValueError, match="not in the journal model's table"):
        coverage.write(tmp_path, "main", {"acquire.teleport": 1}, "journal")


def test_unexercised_lists_only_reachable_rows_with_zero_counts_in_table_order():
    assert coverage.unexercised({}, "journal") == REACHABLE
    counts = dict.fromkeys(REACHABLE, 1)
    assert coverage.unexercised(counts, "journal") == []
    counts[REACHABLE[3]] = 0
    assert coverage.unexercised(counts, "journal") == [REACHABLE[3]]
    # Rows only a fault reaches never count as missing.
    assert not set(coverage.unexercised({}, "journal")) & set(UNREACHABLE)


def test_remove_stale_deletes_only_coverage_files(tmp_path):
    coverage.write(tmp_path, "gw0", {}, "journal")
    other = tmp_path / "keep.json"
    other.write_text("{}")
    coverage.remove_stale(tmp_path, "journal")
    assert [p.name for p in tmp_path.iterdir()] == ["keep.json"]
