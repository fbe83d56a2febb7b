"""Shared helpers for the lantern emulator tests (docs/lantern-contract.md): the reference's own tests
(test_lantern_reference.py) and the known-bad catalogue's (test_lantern_known_bad.py).

- `LanternSystem` (the plug-in's, `fencecheck.systems.lantern.plugin`): a lantern system under test.
  `REFERENCE_LANTERN` is `reference.lantern`; `variant_system(name)` is a known-bad copy (known_bad.lantern).
  Every helper that calls the system takes it as an explicit `system=` parameter: nothing is swapped.
- `call`: one model operation (model.lantern's CreateVenue, Light, ...) through a system; `answer`: any
  zero-argument call of a system, as the caller sees it (`.to_json()` or the error code).
- `stored_documents`, `typed`, `make_stored`: the four collections as stored, compared with exact types.
- `RecordingClient`: a client proxy recording every transaction commit that carries writes (`SentCommit`).
- `race`: operations in threads released together by one barrier (`fencecheck.runners.contest.race_callers`, the race
  suite's contest runner, one call per racer); a `RaceOutcome` with the answers and the problems seen (racers
  that hung or raised, commits that break `write_set_violations`), never an assertion.
- Scenario constants: the clock origin `T0`, `US`, `H2` (the lantern TTL), venues and positions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from google.cloud.firestore_v1.transaction import Transaction

from fencecheck.problems import Problem, ProblemKind, hang
from fencecheck.runners.contest import Racer, RacerRecord, race_callers
from fencecheck.systems.lantern.plugin import LANTERN, REFERENCE_LANTERN, LanternSystem
from known_bad.lantern import variant
from model.lantern import (
    LANTERN_TTL,
    CreateVenue,
    write_set_violations,
)
from reference.lantern import AttemptLog

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
US = timedelta(microseconds=1)
H2 = LANTERN_TTL
COLLECTIONS = ("venues", "lanterns", "publicPins", "activeLanterns")
BAR = CreateVenue("bar", "Bar Lantern", 52.5200, 13.4050, 150)
CLUB = CreateVenue("club", "Club Lantern", 52.5230, 13.4110, 100)
CAFE = CreateVenue("cafe", "Cafe Lantern", 52.5170, 13.3990, 80)
AT_BAR, AT_CLUB, FAR = (52.5200, 13.4050), (52.5230, 13.4110), (52.5300, 13.4300)

Answer = dict[str, Any] | str


# --- the system under test ------------------------------------------------------------------------------------


def variant_system(name: str) -> LanternSystem:
    """The known-bad variant `name` (known_bad.lantern) as a system: its own copy and its own LanternError."""
    return LANTERN.resolve(variant(name).system_spec)


def call(
    db: Any, op: Any, attempt_log: AttemptLog | None = None, *, system: LanternSystem = REFERENCE_LANTERN
) -> Answer:
    """Run one model operation through `system` (the plug-in's call mapping): its output's `.to_json()`, or
    its error code."""
    return LANTERN.answer(system, db, op, lambda: op.now, attempt_log)


def answer(function: Callable[[], Any], *, system: LanternSystem = REFERENCE_LANTERN) -> Answer:
    """A zero-argument call of `system`'s api as its caller sees it: `.to_json()`, or the error code."""
    try:
        return function().to_json()
    except system.error as error:
        return error.code


# --- stored documents ---------------------------------------------------------------------------------------------


def stored_documents(db: Any) -> dict[str, dict[str, Any]]:
    found = {}
    for name in COLLECTIONS:
        for snapshot in db.collection(name).stream():
            found[f"{name}/{snapshot.id}"] = snapshot.to_dict()
    return found


def _typed(value: Any) -> Any:
    """A comparison key that tells bool from int from float and requires aware UTC datetimes."""
    if isinstance(value, datetime):
        assert value.utcoffset() == timedelta(0), "stored timestamps must be aware UTC"
        return ("timestamp", (value - T0) // US)
    return (type(value).__name__, value)


def typed(docs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {path: {field: _typed(value) for field, value in doc.items()} for path, doc in docs.items()}


def make_stored(db: Any, docs: dict[str, dict[str, Any]]) -> None:
    """Make the four collections hold exactly `docs` (admin path, one batch): how a fault's documents, or
    damaged data the layer must cope with, are put in place."""
    batch = db.batch()
    for path in stored_documents(db).keys() - docs.keys():
        batch.delete(db.document(path))
    for path, data in docs.items():
        batch.set(db.document(path), dict(data))
    batch.commit()


# --- recording commits ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SentCommit:
    """One commit RPC that carried writes: the paths written (updates, creates, sets and deletes alike)."""

    paths: tuple[str, ...]
    applied: bool


class _RecordingTransaction(Transaction):
    def __init__(self, client: Any, recorder: RecordingClient, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self._recorder = recorder

    def _commit(self) -> list:
        if not self._write_pbs:
            return super()._commit()  # a read-only decision sends no write
        prefix = self._client._database_string + "/documents/"
        paths = tuple((write.update.name or write.delete).removeprefix(prefix) for write in self._write_pbs)
        try:
            result = super()._commit()
        except Exception:
            self._recorder.commits.append(SentCommit(paths, applied=False))
            raise
        self._recorder.commits.append(SentCommit(paths, applied=True))
        return result


class RecordingClient:
    """A thin proxy around a real client that records every transaction commit carrying writes (batch commits
    are not recorded)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.commits: list[SentCommit] = []

    def transaction(self, **kwargs: Any) -> Transaction:
        return _RecordingTransaction(self._client, self, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    @property
    def applied(self) -> list[SentCommit]:
        return [commit for commit in self.commits if commit.applied]


# --- races ------------------------------------------------------------------------------------------------------


@attrs.frozen
class RaceOutcome:
    """What a race left: each operation's answer (in operation order; None for a racer that raised or never
    returned) and the problems seen, one sentence each: `racer_problems` (structured, fencecheck.problems: a
    racer that never returned is a hang, one that raised something other than the system's error a crash) and
    `write_set_problems` (a commit sent during the race breaks `write_set_violations`)."""

    answers: tuple[Answer | None, ...]
    racer_problems: tuple[Problem, ...]
    write_set_problems: tuple[str, ...]

    @property
    def problems(self) -> tuple[str, ...]:
        """Every problem's text (empty when the race was clean)."""
        return tuple(p.text for p in self.racer_problems) + self.write_set_problems


def race(
    db: RecordingClient,
    ops: Sequence[Any],
    logs: Sequence[AttemptLog | None] | None = None,
    *,
    system: LanternSystem = REFERENCE_LANTERN,
    timeout: float = 300,
) -> RaceOutcome:
    """Run the operations through `system` in threads released together by one barrier (the contest runner's
    `fencecheck.runners.contest.race_callers`, without whole-call retries: each racer calls once). `logs[i]`, when
    given, is the attempt log of operation i (a test may watch it while the race runs).

    Problems (reported, never asserted): a racer still running after `timeout` seconds, a racer that raised
    anything but the system's error, and every commit sent during the race (applied or not) whose written
    paths break `write_set_violations`."""
    sent_before = len(db.commits)
    racers = [Racer(f"racer {i + 1}", op) for i, op in enumerate(ops)]
    given = list(logs) if logs is not None else [None] * len(ops)
    records, _history, hung = race_callers(
        LANTERN,
        system,
        db,
        racers,
        max_retries=0,
        new_log=lambda index, _attempt: given[index] if given[index] is not None else AttemptLog(),
        join_timeout=timeout,
        label="race",
    )
    crashed = [Problem(call.unexpected_kind or ProblemKind.CRASH, f"{r.racer.name} raised {call.unexpected}")
               for r in records for call in r.calls if call.unexpected]
    write_set = [
        f"{problem} ({'applied' if commit.applied else 'not applied'}: {sorted(commit.paths)})"
        for commit in db.commits[sent_before:]
        for problem in write_set_violations(commit.paths)
    ]
    return RaceOutcome(
        tuple(_answer(record) for record in records),
        tuple([hang(f"{name} never returned (after {timeout:g} s)") for name in hung] + crashed),
        tuple(write_set),
    )


def _answer(record: RacerRecord) -> Answer | None:
    """What the racer saw: the output or error code; None when it raised something else or never returned."""
    outcome = record.final
    if outcome.definite:
        return outcome.observed
    return outcome.reason if outcome.reason == LANTERN.unavailable_code else None
