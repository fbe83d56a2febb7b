"""Escaping by default for the HTML report: every value is escaped unless it is already `Safe` markup.

Why a builder instead of f-strings: history op descriptions, caller names, test names and paths come from
user data, and one forgotten `escape()` in a long template would let a `<script>` in an op description run
in a reviewer's browser. Here text is escaped unless a function of this module built it.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

_VOID = frozenset({"meta", "input", "br", "hr", "link"})


class Safe(str):
    """Markup that is already escaped (built by this module, or a trusted constant)."""


def esc(value: Any) -> Safe:
    if isinstance(value, Safe):
        return value
    return Safe(html.escape("" if value is None else str(value), quote=True))


def _attributes(attributes: dict[str, Any]) -> str:
    out = []
    for key, value in attributes.items():
        name = key.rstrip("_").replace("_", "-")  # class_ -> class, data_run -> data-run
        if value is None or value is False:
            continue
        out.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    return "".join(out)


def el(tag: str, *children: Any, **attributes: Any) -> Safe:
    """`<tag attributes>children</tag>`; children that are lists or tuples are flattened, None is dropped."""
    if tag in _VOID:
        return Safe(f"<{tag}{_attributes(attributes)}>")
    return Safe(f"<{tag}{_attributes(attributes)}>{join(children)}</{tag}>")


def join(children: Iterable[Any]) -> Safe:
    parts = []
    for child in children:
        if child is None:
            continue
        if isinstance(child, list | tuple):
            parts.append(join(child))
        else:
            parts.append(esc(child))
    return Safe("".join(parts))
