"""Progress of a running pytest suite, for people watching a gate (or a long pytest run) that would otherwise
print nothing for minutes: tests done of total, elapsed time, and the stateful machines' examples so far.

Who writes what, in one directory (the gate's `<artifacts>/progress/<suite>/`, else a temporary one):

* the pytest controller (or the only pytest process) writes `tests.json`: `{"done": 3, "total": 12}`, after
  collection and after every test (fencecheck.suites.pytest_progress);
* every process that runs a lockstep machine writes `examples-<pid>.json`: `{"JournalMachine": 42}`, after
  every example (stateful_tests/machine_runner.end_example calls `example_done`).

`snapshot()` reads them all; `format_line` makes the line; `Ticker` decides when one is due. Nothing here
waits or prints: the callers own the clock and the terminal, so all of it is tested with numbers.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ENV_SECONDS = "FENCECHECK_PROGRESS_SECONDS"  # at least this long between two progress lines (default 30)
ENV_REQUEST = "FENCECHECK_PROGRESS_DIR"  # set by the gate for a suite's pytest: write progress here
ENV_SHARED = "FENCECHECK_PROGRESS_SHARED"  # set by that pytest's controller for its workers (and itself)
DEFAULT_SECONDS = 30.0
TESTS_FILE = "tests.json"
EXAMPLES_GLOB = "examples-*.json"

_examples: Counter[str] = Counter()  # this process's examples per machine, over every machine run


def interval(env: Mapping[str, str] | None = None) -> float:
    """Seconds between progress lines: $FENCECHECK_PROGRESS_SECONDS (a positive number), else 30."""
    raw = (os.environ if env is None else env).get(ENV_SECONDS, "")
    try:
        value = float(raw) if raw else DEFAULT_SECONDS
    except ValueError:
        return DEFAULT_SECONDS
    return value if value > 0 else DEFAULT_SECONDS


@dataclass(frozen=True)
class Snapshot:
    done: int | None = None  # None: not collected yet (or nothing written)
    total: int | None = None
    examples: Mapping[str, int] = field(default_factory=dict)  # machine -> examples run so far


def format_line(label: str, snapshot: Snapshot, elapsed: float) -> str:
    """`[4/6] stateful: 3/12 tests done, 95 s elapsed, examples: JournalMachine 42, LanternMachine 17`."""
    if snapshot.total is None:
        tests = "collecting"
    else:
        tests = f"{snapshot.done or 0}/{snapshot.total} tests done"
    line = f"{label}: {tests}, {elapsed:.0f} s elapsed"
    if snapshot.examples:
        line += ", examples: " + ", ".join(f"{name} {count}" for name, count in sorted(snapshot.examples.items()))
    return line


class Ticker:
    """Says when a progress line is due: `seconds` after the start, then `seconds` after the last line."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds, self._clock = seconds, clock
        self.started = self._last = clock()

    def elapsed(self) -> float:
        return self._clock() - self.started

    def due(self) -> bool:
        """True (and the next line is `seconds` from now) when `seconds` passed since the last line."""
        now = self._clock()
        if now - self._last < self.seconds:
            return False
        self._last = now
        return True

    def poll_seconds(self) -> float:
        """How long a waiting caller may sleep between checks and still print on time."""
        return max(0.05, min(1.0, self.seconds / 4))


def _write_json(path: Path, data: object) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    tmp.replace(path)  # a reader never sees half a file


def write_tests(directory: Path, done: int, total: int) -> None:
    _write_json(directory / TESTS_FILE, {"done": done, "total": total})


def example_done(machine: str) -> None:
    """One more example of `machine` in this process; written where this run's progress is collected."""
    _examples[machine] += 1
    shared = os.environ.get(ENV_SHARED)
    if not shared or not Path(shared).is_dir():
        return
    try:
        _write_json(Path(shared) / f"examples-{os.getpid()}.json", dict(_examples))
    except OSError:  # progress is for people watching; it never fails a test
        pass


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def snapshot(directory: Path) -> Snapshot:
    tests = _read_json(directory / TESTS_FILE)
    done = total = None
    if isinstance(tests, dict) and isinstance(tests.get("done"), int) and isinstance(tests.get("total"), int):
        done, total = tests["done"], tests["total"]
    examples: Counter[str] = Counter()
    for path in sorted(directory.glob(EXAMPLES_GLOB)):
        counts = _read_json(path)
        if isinstance(counts, dict):
            examples.update({k: v for k, v in counts.items() if isinstance(k, str) and type(v) is int})
    return Snapshot(done, total, dict(examples))
