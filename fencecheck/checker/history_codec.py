"""JSON forms of datetimes and stored documents, so histories can be saved as fixtures; each plug-in writes
its own operations (`SystemPlugin.ops_to_json` / `ops_from_json`: the journal's in
`fencecheck/systems/journal/codec.py`).

Datetimes are ISO 8601 strings with microseconds and a `+00:00` offset.

Stored document values are JSON values except timestamps, written `{"$timestamp": "<ISO 8601>"}` (any
Firestore timestamp type, a `datetime` subclass, reads back as a plain `datetime`); a map whose keys start
with `$` is wrapped as `{"$map": {...}}` so it cannot be mistaken for a tagged value.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

_ZERO = timedelta(0)

# --- datetimes -------------------------------------------------------------------------------------


def datetime_to_json(moment: datetime) -> str:
    """ISO 8601 with microseconds and the `+00:00` offset (an aware UTC datetime only)."""
    if not isinstance(moment, datetime) or moment.utcoffset() != _ZERO:
        raise ValueError("expected an aware UTC datetime")
    return datetime(
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        moment.microsecond,
        tzinfo=UTC,
    ).isoformat(timespec="microseconds")


def datetime_from_json(text: object) -> datetime:
    if not isinstance(text, str):
        raise ValueError("a datetime must be an ISO 8601 string")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 datetime: {text!r}") from exc
    if moment.utcoffset() != _ZERO:
        raise ValueError(f"datetime must carry a UTC offset: {text!r}")
    return moment.replace(tzinfo=UTC)


# --- stored documents ------------------------------------------------------------------------------


def value_to_json(value: Any) -> Any:
    """JSON form of a stored field value (timestamps tagged)."""
    if isinstance(value, datetime):
        return {"$timestamp": datetime_to_json(value)}
    if isinstance(value, Mapping):
        inner = {str(k): value_to_json(v) for k, v in value.items()}
        return {"$map": inner} if any(k.startswith("$") for k in inner) else inner
    if isinstance(value, list | tuple):
        return [value_to_json(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot encode a stored value of type {type(value).__name__}")


def value_from_json(data: Any) -> Any:
    if isinstance(data, dict):
        if len(data) == 1 and "$timestamp" in data:
            return datetime_from_json(data["$timestamp"])
        if len(data) == 1 and "$map" in data:
            if not isinstance(data["$map"], dict):
                raise ValueError("$map must wrap a JSON object")
            return {k: value_from_json(v) for k, v in data["$map"].items()}
        if any(k.startswith("$") for k in data):
            raise ValueError(f"unknown tagged value {sorted(data)}")
        return {k: value_from_json(v) for k, v in data.items()}
    if isinstance(data, list):
        return [value_from_json(v) for v in data]
    return data


def documents_to_json(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """{path: document} with tagged timestamps, paths and fields sorted."""
    return {path: {k: value_to_json(v) for k, v in sorted(doc.items())} for path, doc in sorted(docs.items())}


def documents_from_json(data: object) -> dict[str, dict[str, Any]]:
    if not isinstance(data, dict) or not all(isinstance(doc, dict) for doc in data.values()):
        raise ValueError("documents must be a JSON object of path -> document object")
    return {path: {k: value_from_json(v) for k, v in doc.items()} for path, doc in data.items()}
