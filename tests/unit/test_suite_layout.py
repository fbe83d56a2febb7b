"""Most test folders have no `__init__.py` (pytest's rootdir import mode): there two test modules with one
basename clash at collection under xdist ("import file mismatch"), and only a full run shows it. (tests/systems/ is
a package, for its systems' modules of one name, machine.py and races.py; its test modules keep unique names too.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("tests", "stateful_tests", "race_tests", "parallel_tests")


def test_every_test_module_basename_is_unique_across_the_suites():
    names = Counter(path.name for suite in SUITES for path in (ROOT / suite).rglob("test_*.py"))
    assert len(names) > 30  # the suites were found
    assert [name for name, count in names.items() if count > 1] == []
