"""Read pytest's JUnit XML into per-suite counts (pure: text in, numbers out).

Against one implementation (`--only-system`: `fencecheck gate --known-bad` / `--system`) each test says what it
drove, as the JUnit property `fencecheck_drives` (fencecheck.suites.pytest_plugin): the implementation under
test, only the reference (a test marked reference_only), or no implementation (a check of the suite's parts).
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field

from fencecheck.suites import DRIVES_PROPERTY, DROVE_IMPLEMENTATION, DROVE_NOTHING, DROVE_REFERENCE


@dataclass(frozen=True)
class SuiteCounts:
    tests: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failing: tuple[str, ...] = field(default_factory=tuple)
    drove_implementation: int = 0  # tests that drove the implementation under test
    reference_only: tuple[str, ...] = field(default_factory=tuple)  # tests of its system that drove only the reference
    no_implementation: int = 0  # tests that drove none (checks of the suite's parts)

    def to_json(self) -> dict:
        data = asdict(self)
        data["failing"] = list(self.failing)
        data["reference_only"] = list(self.reference_only)
        return data



def parse_junit(xml_text: str) -> SuiteCounts:
    root = ElementTree.fromstring(xml_text)
    cases = root.iter("testcase")
    tests = failed = errors = skipped = 0
    seconds = 0.0
    failing: list[str] = []
    drove: dict[str, list[str]] = {DROVE_IMPLEMENTATION: [], DROVE_REFERENCE: [], DROVE_NOTHING: []}
    for case in cases:
        tests += 1
        seconds += float(case.get("time", 0) or 0)
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        for prop in case.iter("property"):
            if prop.get("name") == DRIVES_PROPERTY and prop.get("value") in drove:
                drove[prop.get("value")].append(name)
        if case.find("failure") is not None:
            failed += 1
            failing.append(name)
        elif case.find("error") is not None:
            errors += 1
            failing.append(name)
        elif case.find("skipped") is not None:
            skipped += 1
    passed = tests - failed - errors - skipped
    return SuiteCounts(tests, passed, failed, errors, skipped, round(seconds, 3), tuple(failing),
                       len(drove[DROVE_IMPLEMENTATION]), tuple(drove[DROVE_REFERENCE]), len(drove[DROVE_NOTHING]))
