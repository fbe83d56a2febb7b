"""Transition coverage of lockstep runs: which rows of a system's transition table fired, how often.

Each test process adds to `PROCESS_COUNTS[system]` (the stateful machines do) and, at the end of the session,
writes `artifacts/coverage/<system>-transitions-<worker>.json` (`<worker>` is the xdist worker id, or `main`;
`<system>` is a plug-in name, `fencecheck.plugin.registry`):

    {"schema": "fencecheck.journal-transitions/1", "worker": "gw0",
     "counts": {"register.absent.new": 812, ...every row id, in table order...},
     "unexercised_reachable": [...],
     "nearMiss": {"exact-retry": {"finish.retry_committed": 31, ...}, ...every class...}}

`nearMiss` counts the transitions each near-miss class of calls reached (fencecheck.checker.near_miss);
`merge_near_misses(files)` sums it.

`merge(files, system)` sums the counts of several such files; `unexercised(counts, system)` lists the
reachable rows that never fired. Every function takes the system by its plug-in's name.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from fencecheck.checker import near_miss
from fencecheck.plugin.registry import plugin

PROCESS_COUNTS: defaultdict[str, Counter[str]] = defaultdict(Counter)


def schema(system: str) -> str:
    return f"fencecheck.{system}-transitions/1"


def file_prefix(system: str) -> str:
    return f"{system}-transitions-"


def _rows(system: str):
    return plugin(system).transitions


def empty_counts(system: str) -> dict[str, int]:
    return {row.id: 0 for row in _rows(system)}


def normalized(counts: Mapping[str, int], system: str) -> dict[str, int]:
    """Every table row in table order (zeros included); ids not in the table are an error."""
    unknown = sorted(set(counts) - {row.id for row in _rows(system)})
    if unknown:
        raise ValueError(f"transition ids not in the {system} model's table: {unknown}")
    out = empty_counts(system)
    for transition, count in counts.items():
        out[transition] += int(count)
    return out


def unexercised(counts: Mapping[str, int], system: str) -> list[str]:
    """Reachable transition ids whose count is 0 (or absent), in table order."""
    return [row.id for row in _rows(system) if row.reachable and counts.get(row.id, 0) == 0]


def merge(files: Iterable[str | Path], system: str) -> dict[str, int]:
    """Sum the counts of coverage files (every table row present, zeros included)."""
    total = Counter()
    for file in files:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
        if data.get("schema") != schema(system):
            raise ValueError(f"{file}: not a {schema(system)} file")
        total.update(data["counts"])
    return normalized(total, system)


def merge_near_misses(files: Iterable[str | Path]) -> dict[str, dict[str, int]]:
    """Sum the near-miss counts of coverage files (class -> transition -> count, every class present); a file
    written before they were counted adds nothing."""
    return near_miss.merge(json.loads(Path(file).read_text(encoding="utf-8")).get("nearMiss", {}) for file in files)


def coverage_path(directory: str | Path, worker: str, system: str) -> Path:
    return Path(directory) / f"{file_prefix(system)}{worker}.json"


def write(directory: str | Path, worker: str, counts: Mapping[str, int], system: str,
          near_misses: Mapping[str, Mapping[str, int]] | None = None) -> Path:
    """Write one process's counts (and its near-miss counts, class -> transition -> count); returns the path."""
    full = normalized(counts, system)
    path = coverage_path(directory, worker, system)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"schema": schema(system), "worker": worker, "counts": full,
                "unexercised_reachable": unexercised(full, system),
                "nearMiss": near_miss.merge([near_misses or {}])}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def remove_stale(directory: str | Path, system: str) -> None:
    """Delete one system's coverage files of earlier runs (called once per run, before any worker writes)."""
    for path in Path(directory).glob(f"{file_prefix(system)}*.json"):
        path.unlink(missing_ok=True)
