"""A small JSON codec for the report's frozen attrs classes: snake_case fields become camelCase keys.

Why generic: the report has a dozen record types whose JSON is exactly their fields; writing a to/from pair
by hand for each would double the code and let the two directions drift apart. The codec is strict on
reading (missing keys without a default, unknown keys and wrong types raise `ValueError`), so a file of
another schema version or a hand-edited typo fails loudly instead of rendering a wrong report.

A class may list read-only properties in `_json_derived` (e.g. `CoverageRow.unexercised`): they are written
for readers of the JSON and ignored when reading it back.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union

import attrs

_NONE = type(None)


def camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def encode(value: Any) -> Any:
    """JSON-ready form of an attrs record, tuple, dict or plain value."""
    if attrs.has(type(value)):
        out = {camel(f.name): encode(getattr(value, f.name)) for f in attrs.fields(type(value))}
        for name in getattr(type(value), "_json_derived", ()):
            out[camel(name)] = encode(getattr(value, name))
        return out
    if isinstance(value, tuple | list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {str(key): encode(item) for key, item in value.items()}
    return value


def decode(kind: Any, data: Any, where: str = "$") -> Any:
    """Read `data` as type `kind` (an attrs class, `X | None`, `tuple[X, ...]`, `dict[str, X]`, a scalar)."""
    origin = typing.get_origin(kind)
    if kind is Any:
        return data
    if origin in (Union, types.UnionType):
        options = [arg for arg in typing.get_args(kind) if arg is not _NONE]
        if data is None and len(options) < len(typing.get_args(kind)):
            return None
        if len(options) != 1:
            raise TypeError(f"{where}: unsupported union {kind}")
        return decode(options[0], data, where)
    if attrs.has(kind):
        return _decode_record(kind, data, where)
    if origin is tuple:
        if not isinstance(data, list):
            raise ValueError(f"{where}: expected a JSON array")
        item_kind = typing.get_args(kind)[0]
        return tuple(decode(item_kind, item, f"{where}[{i}]") for i, item in enumerate(data))
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object")
        value_kind = typing.get_args(kind)[1]
        return {str(key): decode(value_kind, item, f"{where}.{key}") for key, item in data.items()}
    return _decode_scalar(kind, data, where)


def _decode_scalar(kind: Any, data: Any, where: str) -> Any:
    if kind is bool:
        ok = isinstance(data, bool)
    elif kind is int:
        ok = isinstance(data, int) and not isinstance(data, bool)
    elif kind is float:
        ok = isinstance(data, int | float) and not isinstance(data, bool)
        data = float(data) if ok else data
    elif kind is str:
        ok = isinstance(data, str)
    else:
        raise TypeError(f"{where}: unsupported type {kind}")
    if not ok:
        raise ValueError(f"{where}: expected {kind.__name__}, got {type(data).__name__}")
    return data


def _decode_record(kind: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object for {kind.__name__}")
    hints = typing.get_type_hints(kind)
    fields = attrs.fields(kind)
    known = {camel(f.name) for f in fields} | {camel(n) for n in getattr(kind, "_json_derived", ())}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown} for {kind.__name__}")
    kwargs = {}
    for f in fields:
        key = camel(f.name)
        if key in data:
            kwargs[f.name] = decode(hints[f.name], data[key], f"{where}.{key}")
        elif f.default is attrs.NOTHING:
            raise ValueError(f"{where}: missing key {key!r} for {kind.__name__}")
    return kind(**kwargs)
