"""Input validation, before any clock reading or Firestore call: every rule broken is invalid_lantern_input.

- ids (user, lantern, venue): str of 1-128 characters from [A-Za-z0-9_-], starting with a letter or digit
  (a Firestore document id that needs no escaping and is never reserved);
- latitude in [-90, 90], longitude in [-180, 180], radius in (0, 100000] metres: int or float (never bool),
  finite; stored as float;
- venue name: str of 1-200 characters;
- scheduled_for: an aware datetime at UTC offset 0.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any

from .errors import LanternError

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
MAX_RADIUS_METERS = 100_000.0


def _invalid() -> LanternError:
    return LanternError("invalid_lantern_input")


def prepare_id(value: Any) -> str:
    if type(value) is not str or _ID.fullmatch(value) is None:
        raise _invalid()
    return value


def _number(value: Any, low: float, high: float) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or not low <= value <= high:
        raise _invalid()
    return float(value)


def prepare_latitude(value: Any) -> float:
    return _number(value, -90.0, 90.0)


def prepare_longitude(value: Any) -> float:
    return _number(value, -180.0, 180.0)


def prepare_radius(value: Any) -> float:
    radius = _number(value, 0.0, MAX_RADIUS_METERS)
    if radius == 0.0:
        raise _invalid()
    return radius


def prepare_name(value: Any) -> str:
    if type(value) is not str or not 1 <= len(value) <= 200:
        raise _invalid()
    return value


def prepare_moment(value: Any) -> datetime:
    if not isinstance(value, datetime) or value.utcoffset() != timedelta(0):
        raise _invalid()
    return value
