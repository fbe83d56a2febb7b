"""What happened to each mutant, kept so a run can be split and resumed: one JSON line per mutant, appended to a
file of the shard that ran it (`<work>/results/<k>-of-<n>.jsonl`) as soon as it is decided.

A run resumes by reading every results file in the work directory and skipping the mutants already decided;
shards on other machines each write their own file, and copying those files into one work directory merges them
(the last line for a mutant wins). The statuses are the judge's (fencecheck.checker.known_bad_verdict: caught,
survived, timeout, error) plus the two a mutant gets without being run: equivalent by construction and
compile-error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from fencecheck.checker.known_bad_verdict import CAUGHT, STATUSES, SURVIVED, TIMEOUT
from fencecheck.errors import UsageError

EQUIVALENT, COMPILE_ERROR = "equivalent", "compile-error"
OUTCOME_STATUSES = (*STATUSES, EQUIVALENT, COMPILE_ERROR)
RESULTS_DIR = "results"


@attrs.frozen
class Outcome:
    """One mutant's result: `status` (OUTCOME_STATUSES), `reason` (the judge's paragraph, or why it was not run),
    `seconds` it took, and the suite and test that failed on it (None when none did)."""

    id: str
    status: str
    reason: str
    seconds: float = 0.0
    suite: str | None = None
    test: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.status not in OUTCOME_STATUSES:
            raise ValueError(f"status must be one of {OUTCOME_STATUSES}, not {self.status!r}")

    @property
    def killed(self) -> bool:
        return self.status == CAUGHT

    @property
    def counted(self) -> bool:
        """Whether it counts towards the score: a mutant that compiles, is not equivalent, and was judged (a
        timeout counts as not killed). An error is left out, as Stryker leaves out a RuntimeError: a crash is
        never a kill, and it is no survivor either, since the reference does not crash there; the report
        counts the errors beside the score."""
        return self.status in (CAUGHT, SURVIVED, TIMEOUT)

    def to_json(self) -> dict:
        return attrs.asdict(self)


@attrs.frozen
class Shard:
    """Shard `index` of `count` (1-based): the mutants whose position in the full, ordered list is index-1 modulo
    count. Every shard of a count together holds each mutant once."""

    index: int = 1
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        index, slash, count = text.partition("/")
        if not slash or not index.isdigit() or not count.isdigit() or not 1 <= int(index) <= int(count):
            raise UsageError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. 2/4")
        return cls(int(index), int(count))

    def take(self, items: Sequence) -> list:
        return [item for position, item in enumerate(items) if position % self.count == self.index - 1]

    @property
    def file_name(self) -> str:
        return f"{self.index}-of-{self.count}.jsonl"


def results_path(work: Path, shard: Shard) -> Path:
    return work / RESULTS_DIR / shard.file_name


def load(work: Path) -> dict[str, Outcome]:
    """Every outcome recorded in the work directory's results files, by mutant id. A line cut short by an
    interruption (the last of a file) is skipped: that mutant runs again."""
    found: dict[str, Outcome] = {}
    for path in sorted((work / RESULTS_DIR).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                outcome = Outcome(**json.loads(line))
            except (ValueError, TypeError):
                continue
            found[outcome.id] = outcome
    return found


def append(path: Path, outcome: Outcome) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(outcome.to_json(), sort_keys=True) + "\n")
        handle.flush()


def score(outcomes: Iterable[Outcome]) -> tuple[int, int]:
    """(killed, counted): the mutation score is killed / counted."""
    counted = [outcome for outcome in outcomes if outcome.counted]
    return sum(outcome.killed for outcome in counted), len(counted)
