"""Transition coverage of the journal's lockstep runs: which rows of `model.journal.TRANSITIONS` fired, how often.

Each test process adds to `PROCESS_COUNTS` (the stateful machines do) and, at the end of the session, writes
`artifacts/coverage/journal-transitions-<worker>.json` (`<worker>` is the xdist worker id, or `main`):

    {"schema": "fencecheck.journal-transitions/1", "worker": "gw0",
     "counts": {"register.absent.new": 812, ...every row id, in table order...},
     "unexercised_reachable": [...]}

`merge(files)` sums the counts of several such files; `unexercised(counts)` lists the reachable rows that
never fired.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from model.journal import TRANSITIONS

SCHEMA = "fencecheck.journal-transitions/1"
FILE_PREFIX = "journal-transitions-"

PROCESS_COUNTS: Counter[str] = Counter()


def empty_counts() -> dict[str, int]:
    return {row.id: 0 for row in TRANSITIONS}


def normalized(counts: Mapping[str, int]) -> dict[str, int]:
    """Every table row in table order (zeros included); ids not in the table are an error."""
    unknown = sorted(set(counts) - {row.id for row in TRANSITIONS})
    if unknown:
        raise ValueError(f"transition ids not in model.journal.TRANSITIONS: {unknown}")
    out = empty_counts()
    for transition, count in counts.items():
        out[transition] += int(count)
    return out


def unexercised(counts: Mapping[str, int]) -> list[str]:
    """Reachable transition ids whose count is 0 (or absent), in table order."""
    return [row.id for row in TRANSITIONS if row.reachable and counts.get(row.id, 0) == 0]


def merge(files: Iterable[str | Path]) -> dict[str, int]:
    """Sum the counts of coverage files (every table row present, zeros included)."""
    total = Counter()
    for file in files:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{file}: not a {SCHEMA} file")
        total.update(data["counts"])
    return normalized(total)


def coverage_path(directory: str | Path, worker: str) -> Path:
    return Path(directory) / f"{FILE_PREFIX}{worker}.json"


def write(directory: str | Path, worker: str, counts: Mapping[str, int]) -> Path:
    """Write one process's counts; returns the file's path."""
    full = normalized(counts)
    path = coverage_path(directory, worker)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"schema": SCHEMA, "worker": worker, "counts": full, "unexercised_reachable": unexercised(full)}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def remove_stale(directory: str | Path) -> None:
    """Delete coverage files of earlier runs (called once per run, before any worker writes)."""
    for path in Path(directory).glob(f"{FILE_PREFIX}*.json"):
        path.unlink(missing_ok=True)
