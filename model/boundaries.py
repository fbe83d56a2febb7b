"""What the models' near-miss classes share (fencecheck.checker.near_miss): a clock reading at a stored moment, or
within a width either side of it (1 µs: the smallest step a stored time has)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

US = timedelta(microseconds=1)


def near(now: datetime | None, moments: Iterable[datetime | None], width: timedelta = US) -> bool:
    """`now` is one of `moments`, or within `width` either side of one (None readings and moments never are)."""
    return now is not None and any(moment is not None and abs(now - moment) <= width for moment in moments)
