"""The trusted clock, as both references read it: once per call, before any decision."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def read_trusted_clock(clock: Clock, unavailable: Callable[[], Exception]) -> datetime:
    """One reading of `clock`. A clock that raises, or answers anything but an aware UTC datetime, is no
    trusted time, and without trusted time there is no decision: `unavailable()` is raised instead."""
    try:
        now = clock()
    except Exception:
        now = None
    if not isinstance(now, datetime) or now.utcoffset() != timedelta(0):
        raise unavailable()
    return now
