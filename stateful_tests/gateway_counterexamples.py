"""Stopgap: counterexample files of gateway programs that import what they spell.

`fencecheck.counterexamples` imports from `model.<system>` only the operations' own classes (and the journal's
`CommandRef`, the lantern's `FaultKind`). A gateway operation holds attrs values of other classes (its
`JournalRef`, a `HostedAnswer`, an `Evidence`), which the file spells out but does not import, so it fails
with NameError when loaded. The core is not the gateway's to change (issue 14), so until
`fencecheck.counterexamples._model_imports` imports every attrs class an operation holds, `patched()` wraps
the writer that the stateful runners use (`stateful_tests.machine_runner`, `stateful_tests.known_bad_support`)
and adds the missing names to a gateway file's model import. Other systems' files are untouched.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import attrs

from fencecheck import counterexamples

_IMPORT = re.compile(r"^from model\.gateway import (.+)$", re.MULTILINE)


def _held_classes(value: Any, found: set[str]) -> None:
    for field in attrs.fields(type(value)):
        inner = getattr(value, field.name)
        if attrs.has(type(inner)):
            found.add(type(inner).__name__)
            _held_classes(inner, found)


def write_counterexample(directory: str | Path, ops: Any, **kwargs: Any) -> Path:
    path = counterexamples.write_counterexample(directory, ops, **kwargs)
    plugin = kwargs.get("plugin")
    if plugin is None or plugin.name != "gateway":
        return path
    needed: set[str] = set()
    for op in ops:
        _held_classes(op, needed)
    source = path.read_text(encoding="utf-8")
    match = _IMPORT.search(source)
    if match is not None and needed:
        names = sorted({*match.group(1).split(", "), *needed})
        source = source[: match.start()] + f"from model.gateway import {', '.join(names)}" + source[match.end():]
        path.write_text(source, encoding="utf-8")
    return path


@contextlib.contextmanager
def patched() -> Iterator[None]:
    with mock.patch("stateful_tests.machine_runner.write_counterexample", write_counterexample), \
            mock.patch("stateful_tests.known_bad_support.write_counterexample", write_counterexample):
        yield
