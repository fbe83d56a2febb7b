"""Read pytest's JUnit XML into per-suite counts (pure: text in, numbers out)."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class SuiteCounts:
    tests: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failing: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        data = asdict(self)
        data["failing"] = list(self.failing)
        return data


def parse_junit(xml_text: str) -> SuiteCounts:
    root = ElementTree.fromstring(xml_text)
    cases = root.iter("testcase")
    tests = failed = errors = skipped = 0
    seconds = 0.0
    failing: list[str] = []
    for case in cases:
        tests += 1
        seconds += float(case.get("time", 0) or 0)
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None:
            failed += 1
            failing.append(name)
        elif case.find("error") is not None:
            errors += 1
            failing.append(name)
        elif case.find("skipped") is not None:
            skipped += 1
    passed = tests - failed - errors - skipped
    return SuiteCounts(tests, passed, failed, errors, skipped, round(seconds, 3), tuple(failing))
