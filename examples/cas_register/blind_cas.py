"""A known-bad compare-and-set register (known_bad.py, `blind_compare_and_set`): its compare-and-set swaps whatever
the register holds. Reads and writes are the reference's."""

from __future__ import annotations

from typing import Any

from examples.cas_register.implementation import _firestore, _ref, read_register, write_register

__all__ = ["compare_and_set", "read_register", "write_register"]


def compare_and_set(*, db: Any, key: str, expected: int | None, new: int, attempt_log: Any = None) -> dict[str, Any]:
    _firestore(lambda: _ref(db, key).set({"value": new}))  # the bug: it never reads the register to compare
    return {"outcome": "swapped", "value": new}
