"""The compare-and-set register's race scenarios, as contests for `fencecheck.runners.contest` (the plug-in's
`SuiteParts.races`; race_tests/test_race_reference.py races them as `[cas_register-<scenario>]`).

Each scenario is data: a name, its promise in words, a `build()` that returns the `Contest` (the setup, then 24
racers released at once, one operation each) and a `promise(run)` listing what the race must show beyond
linearizability (which the checker judges against the final stored documents) and the register's invariants
(`structural_problems`). Every run starts on an empty project of its own, so the keys are fixed.

A promise accepts an indefinite final answer (still `cas_unavailable` after the harness's whole-call retries):
the checker judges those calls; when one's answer was lost, "exactly one swaps" becomes "at most one".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from examples.cas_register.model import CompareAndSet, Read, Write, invariant_violations
from examples.cas_register.plugin import CAS_REGISTER, PREFIX
from fencecheck.runners.contest import Contest, ContestRun, Racer, RacerRecord
from fencecheck.runners.contest_results import ScenarioResult, execute_contest
from fencecheck.wire.mix import FaultMix

WIDTH = 24  # callers per race, as the built-in systems' races
KEY = "x"
START = 0  # the register's value after the setup
WRITERS = 6  # of the writes-racing-reads scenario's callers; the rest read


@attrs.frozen
class CasScenario:
    name: str
    promise_text: str
    build: Callable[[], Contest]
    promise: Callable[[ContestRun], list[str]]

    def contest(self) -> Contest:
        contest = self.build()
        if contest.scenario != self.name:
            raise ValueError(f"{self.name}: the contest is called {contest.scenario}")
        return contest

    def execute(self, db: Any, *, implementation: Any, repeat: int, artifacts_dir: Path | None,
                counterexamples_dir: Path, emulator: Any, project_id: str,
                wire_mix: FaultMix | None = None) -> tuple[ScenarioResult, ContestRun]:
        """Race this scenario against `implementation` and judge it: the checker, the invariants, the promise.
        The result goes to `artifacts_dir/cas_register_<name>-<repeat>.json` when `artifacts_dir` is given; under
        `wire_mix` every racer's calls go through a faulted wire lane of its own (the implementation answers
        `cas_unavailable` to a Firestore failure, which the checker lets have applied or not)."""
        return execute_contest(
            db,
            self.contest(),
            plugin=CAS_REGISTER,
            implementation=implementation,
            structural=structural_problems,
            promise=self.promise,
            repeat=repeat,
            artifacts_dir=artifacts_dir,
            counterexamples_dir=counterexamples_dir,
            emulator=emulator,
            project_id=project_id,
            wire_mix=wire_mix,
        )


def structural_problems(run: ContestRun) -> list[str]:
    """REG-1 on every stored document at the end (`model.invariant_violations`)."""
    return invariant_violations(run.documents)


# --- promise helpers ------------------------------------------------------------------------------------------


def _stored(run: ContestRun) -> Any:
    doc = run.documents.get(f"{PREFIX}{KEY}")
    return None if doc is None else doc.get("value")


def _answered(record: RacerRecord) -> Any:
    observed = record.final.observed
    return observed.get("value") if isinstance(observed, dict) else None


def _expect_each(records: Iterable[RacerRecord], allowed: set[str]) -> list[str]:
    """Every definite final answer is one of `allowed`."""
    return [f"{record.racer.name}: answered {record.label}, expected one of {sorted(allowed)}"
            for record in records if record.definite and record.label not in allowed]


# --- (a) compare-and-sets from the same value -------------------------------------------------------------------


def build_cas_from_same_value() -> Contest:
    """The register holds 0; 24 callers compare-and-set it from 0, each to a value of its own."""
    racers = [Racer(f"caller-{i:02d}", CompareAndSet(KEY, START, i + 1)) for i in range(WIDTH)]
    return Contest("cas_from_same_value", (Write(KEY, START),), racers)


def promise_cas_from_same_value(run: ContestRun) -> list[str]:
    """Exactly one swapped (at most one when an answer was lost), the register holds its value, and every
    mismatch answered that value: only one swap from 0 can ever apply."""
    problems = _expect_each(run.racers, {"swapped", "mismatch"})
    winners = [record for record in run.racers if record.label == "swapped"]
    lost = any(record.lost_an_answer for record in run.racers)
    if len(winners) > 1 or (not winners and not lost):
        problems.append(f"{len(winners)} callers answered swapped, exactly one expected")
    stored = _stored(run)
    if len(winners) == 1 and stored != winners[0].racer.op.new:
        problems.append(f"{KEY} holds {stored!r}, not {winners[0].racer.op.new} ({winners[0].racer.name} swapped)")
    problems += [f"{record.racer.name}: answered mismatch with {_answered(record)!r}, the register holds {stored!r}"
                 for record in run.racers if record.label == "mismatch" and _answered(record) != stored]
    return problems


# --- (b) writes racing reads ------------------------------------------------------------------------------------


def build_writes_racing_reads() -> Contest:
    """The register holds 0; 6 callers write values of their own while 18 read it."""
    racers = [Racer(f"writer-{i:02d}", Write(KEY, 100 + i)) for i in range(WRITERS)]
    racers += [Racer(f"reader-{i:02d}", Read(KEY)) for i in range(WIDTH - WRITERS)]
    return Contest("writes_racing_reads", (Write(KEY, START),), racers)


def promise_writes_racing_reads(run: ContestRun) -> list[str]:
    """Every write answered written and every read a value the register held (0 or a racing write's); the
    register ends holding one of the writes (0 only if no write was answered)."""
    writes = [record for record in run.racers if isinstance(record.racer.op, Write)]
    written = {record.racer.op.value for record in writes}
    problems = _expect_each(writes, {"written"})
    problems += [f"{record.racer.name}: read {_answered(record)!r}, which no write stored"
                 for record in run.racers if isinstance(record.racer.op, Read) and record.definite
                 and _answered(record) not in written | {START}]
    stored = _stored(run)
    allowed = written if any(record.label == "written" for record in writes) else written | {START}
    if stored not in allowed:
        problems.append(f"{KEY} holds {stored!r}, expected one of the written values {sorted(allowed)}")
    return problems


# --- the scenarios --------------------------------------------------------------------------------------------

SCENARIOS: tuple[CasScenario, ...] = (
    CasScenario(
        "cas_from_same_value",
        "24 compare-and-sets of one register from the value it holds: exactly one answers swapped, the rest "
        "mismatch with the winner's value, which the register holds",
        build_cas_from_same_value,
        promise_cas_from_same_value,
    ),
    CasScenario(
        "writes_racing_reads",
        "6 writes race 18 reads of one register: every write answered written, every read a value the register "
        "held, the register ends holding one of the writes",
        build_writes_racing_reads,
        promise_writes_racing_reads,
    ),
)

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}

# What a race is judged by besides the checker, as its failure messages name them (race_tests/conftest.py
# `assert_race_passed`). No CATCHES: the example has no known-bad catalogue.
INVARIANTS = "REG-1 (every stored document a register holding an int)"
PROMISE = "the register's promise"
