"""The lantern known-bad catalogue (known_bad.lantern) on the emulator: each seed finding, as it was before its
fix, must be caught by the seed scenario that shows it, and the same scenario must pass against the reference.

The judge runs a scenario call by call (or as a race) and reports findings instead of asserting:

- `answer`: a sequential call answered otherwise than the model (a `lantern_unavailable` answer is retried as
  a whole call, as a caller would, up to RETRIES times; the retries are reported with it);
- `order`: no order of a race's calls explains their answers (the model order search, as
  test_lantern_reference.linearize; a `lantern_unavailable` answer may have applied or not);
- `documents`: the stored documents are not the model's (after a sequential call), or not those of any order
  that explains a race's answers;
- `INV-1`..`INV-5`, `SHAPE`: `model.lantern.invariant_violations` over the stored documents;
- `write-set`: a transaction commit that breaks `write_set_violations` (batch commits are not recorded);
- `race`: a racer that never returned, or raised something other than the system's own error;
- `unavailable`: a race answered `lantern_unavailable` (retries exhausted) to a valid call;
- `B1 contention`: the 24-light scenario only: a light at the busy venue aborted an attempt (B1 promises that
  lights share no read lock: the reference lights 24 at once with zero aborts in well under a second, while
  #3's variant still lights all 24 with the exact count, but after dozens of aborted attempts and 11-28 s);
  `B1 latency`: some of those lights were still running at LIGHTS_CAP_SECONDS (the harness then refuses their
  transactions, so they answer lantern_unavailable; the cap is shorter than the runner needs to exhaust its
  attempts, so no such answer is the variant's own).

A sequential scenario stops at the first call with a finding (its size is the calls up to it); a race is
judged once it is over. Variants that only a race shows run their scenario up to MAX_REPETITIONS times, on an
emptied project each time, until a run reports the variant's EXPECTED findings (a run that fails otherwise,
e.g. A3's blind batch aborted by the emulator so that the read answers lantern_unavailable, is shown but does
not stop the loop). Each variant writes artifacts/known_bad/lantern-<name>.json with the fields of the
journal's known-bad results (fencecheck.report.artifacts.write_known_bad_result): `secondsToDetection` is the
wall time of the scenario runs up to the detecting one (emptying the project between runs excluded), `shrunkSteps`
the number of scenario calls up to the failing one (setup calls included, the judge's whole-call retries not),
`failingProperty` the test id and the first finding. There is no counterexample file (`counterexample` null):
the scenario is the reproduction.

The calls go through tests/systems/lantern/support.py's `call` and `race` with the system under test passed
explicitly (`REFERENCE_LANTERN`, or `variant_system(name)`: the variant's own copy and its own LanternError);
nothing is patched into a module, so scenarios of different systems could run side by side. The one injected
fault (#4's failing guard delete) is scoped to the judge's client (`GuardDeleteFaultClient`), not patched into
the Firestore library.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import firestore
from google.cloud.firestore_v1.document import DocumentReference

from fencecheck.checker import known_bad_verdict as verdicts
from fencecheck.problems import Problem, ProblemKind, harness
from fencecheck.report.artifacts import known_bad_recorder
from fencecheck.suites import artifacts_root
from known_bad.crashing import lantern_multi_line_crash, lantern_name_error
from known_bad.lantern import VARIANTS, variant
from model.lantern import (
    DeleteVenue,
    Extinguish,
    LanternState,
    Light,
    ReadActive,
    describe_op,
    documents,
    invariant_violations,
    step,
    write_set_violations,
)
from reference.lantern import AttemptLog
from tests.systems.lantern.support import (
    AT_BAR,
    AT_CLUB,
    BAR,
    CLUB,
    H2,
    REFERENCE_LANTERN,
    T0,
    US,
    LanternSystem,
    RecordingClient,
    call,
    race,
    stored_documents,
    typed,
    variant_system,
)

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[3]
MAX_REPETITIONS = 5  # a race-dependent variant must be caught within this many runs of its scenario
RETRIES = 2  # whole-call retries of a sequential call that answered lantern_unavailable
LIGHTS = 24  # the seed's hotspot width
LIGHTS_CAP_SECONDS = 20.0  # the hotspot scenario's cap: calls still running then are refused by the harness
UNAVAILABLE = "lantern_unavailable"


# --- the judge's clients ---------------------------------------------------------------------------------------


class DeadlineClient(RecordingClient):
    """A recording client with a cap: once `deadline` (time.monotonic) has passed, every new transaction
    (read-write attempt or lock-free look) fails at once with DeadlineExceeded, so a call still running answers
    lantern_unavailable within one look interval (the runner treats it as a Firestore failure)."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.deadline: float | None = None
        self.cancelled = 0

    def transaction(self, **kwargs: Any) -> Any:
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.cancelled += 1
            raise api_exceptions.DeadlineExceeded("the harness's cap on this scenario was reached")
        return super().transaction(**kwargs)


# --- the judge --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    property: str  # answer | order | documents | INV-n | SHAPE | write-set | unavailable | B1 contention | B1 latency
    detail: str
    # What it is under the one rule (fencecheck.problems): a property of the contract, except a `race` finding,
    # whose racer hung (a hang) or raised something other than the system's error (a crash).
    kind: ProblemKind = ProblemKind.CONTRACT

    def __str__(self) -> str:
        return f"{self.property}: {self.detail}"


class Detected(Exception):
    """A sequential call produced a finding: the scenario stops there."""


def _t(moment: datetime) -> str:
    micros = (moment - T0) // US
    return f"T{'-' if micros < 0 else '+'}{abs(micros) / 1e6:g}s"


def _show(value: Any) -> str:
    return _t(value) if isinstance(value, datetime) else repr(value)


def _short(answer: Any) -> str:
    """An answer as a caller sees it, briefly: `extinguished lan-1`, `lit lan-2`, `active_lanterns [lan-2]`."""
    if answer is None or isinstance(answer, str):
        return str(answer)
    if "lanterns" in answer:
        return f"{answer['outcome']} [{', '.join(view['lanternId'] for view in answer['lanterns'])}]"
    return f"{answer['outcome']} {answer.get('lanternId') or answer.get('venueId')}"


def _model_answer(result: Any) -> Any:
    return result.output if result.ok else result.code


def _calls(ops: Sequence[Any], answers: Sequence[Any]) -> str:
    pairs = zip(ops, answers, strict=True)
    return "; ".join(f"{i}. {describe_op(op, epoch=T0)} -> {_short(a)}" for i, (op, a) in enumerate(pairs, 1))


def _document(doc: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{key}: {_show(value)}" for key, value in sorted(doc.items())) + "}"


def document_diff(stored: dict[str, dict[str, Any]], expected: dict[str, dict[str, Any]]) -> list[str]:
    """What differs between stored documents and the model's, one entry per document."""
    have, want = typed(stored), typed(expected)
    out = []
    for path in sorted(have.keys() | want.keys()):
        if path not in want:
            out.append(f"{path} is stored, the model has no such document: {_document(stored[path])}")
        elif path not in have:
            out.append(f"{path} is missing (the model has it)")
        elif have[path] != want[path]:
            fields = sorted(k for k in have[path].keys() | want[path].keys() if have[path].get(k) != want[path].get(k))
            changes = (
                f"{k} stored {_show(stored[path].get(k, '<absent>'))}, model {_show(expected[path].get(k, '<absent>'))}"
                for k in fields
            )
            out.append(f"{path}: {', '.join(changes)}")
    return out


class Judge:
    """Runs a scenario's calls against the system under test and collects findings (see the module doc)."""

    def __init__(
        self, db: Any, system: LanternSystem, client: Callable[[Any], RecordingClient] = RecordingClient
    ) -> None:
        self.db = client(db)
        self.system = system
        self.state = LanternState.empty()
        self.findings: list[Finding] = []
        self.scenario_calls = 0  # the scenario's own calls (its size)
        self.retries = 0  # whole-call retries the judge added
        self._commits_seen = 0

    # sequential calls

    def step(self, op: Any) -> Any:
        """One call, judged at once against the model; raises Detected when it produced a finding."""
        self.scenario_calls += 1
        observed = call(self.db, op, system=self.system)
        new_state, result = step(self.state, op)
        where = describe_op(op, epoch=T0)
        if not result.matches(observed):
            detail = (
                f"{where} answered {_short(observed)}; the model answers {_short(_model_answer(result))} "
                f"({result.transition})"
            )
            if observed == UNAVAILABLE:  # indefinite: a caller retries the whole call with the same ids
                again = []
                while len(again) < RETRIES and not result.matches(observed):
                    observed = call(self.db, op, system=self.system)
                    self.retries += 1
                    again.append(_short(observed))
                detail += f"; {len(again)} whole-call retries answered {', '.join(again)}"
            if not result.matches(observed):
                self.findings.append(Finding("answer", detail))
        self.state = new_state
        self._check_documents((self.state,), f"after {where}")
        if self.findings:
            raise Detected
        return observed

    # races

    def race(self, ops: Sequence[Any], logs: Sequence[AttemptLog] | None = None) -> list[Any]:
        """The calls in threads released together (lantern_support.race); their answers in call order. The
        race's problems become findings: `race` (a racer hung or crashed) and `write-set` (any commit sent
        during the race, applied or not)."""
        self.scenario_calls += len(ops)
        outcome = race(self.db, ops, logs, system=self.system)
        self.findings += [Finding("race", problem.text, problem.kind) for problem in outcome.racer_problems]
        self.findings += [Finding("write-set", f"{problem} (in the race)") for problem in outcome.write_set_problems]
        self._commits_seen = len(self.db.commits)  # the race's commits are judged: not again after it
        return list(outcome.answers)

    def judge_race(self, ops: Sequence[Any], answers: Sequence[Any]) -> None:
        """The model order search: every order of the calls in which the model gives these answers (a
        lantern_unavailable answer: applied or not); the stored documents must be one such order's."""
        unavailable = [describe_op(op, epoch=T0) for op, a in zip(ops, answers, strict=True) if a == UNAVAILABLE]
        if unavailable:
            self.findings.append(Finding("unavailable", f"answered {UNAVAILABLE} to: {'; '.join(unavailable)}"))
        explained, tried = [], []
        for order in itertools.permutations(range(len(ops))):
            branches, model_answers, plain = [self.state], [], self.state
            for index in order:
                plain, result = step(plain, ops[index])
                model_answers.append(_short(_model_answer(result)))
                grown = []
                for state in branches:
                    new_state, result = step(state, ops[index])
                    if result.matches(answers[index]) or answers[index] == UNAVAILABLE:
                        grown.append(new_state)
                    if answers[index] == UNAVAILABLE:
                        grown.append(state)  # indefinite: perhaps never applied
                branches = grown
            explained += [(order, state) for state in branches]
            tried.append(f"order {','.join(str(i + 1) for i in order)} answers {', '.join(model_answers)}")
        if not explained:
            self.findings.append(
                Finding(
                    "order",
                    f"no order of the {len(ops)} racing calls explains their answers ({_calls(ops, answers)}); "
                    f"the model: {'; '.join(tried)}",
                )
            )
            self._check_documents((), "after the race")
            return
        stored = typed(stored_documents(self.db))
        fitting = [state for _order, state in explained if typed(documents(state)) == stored]
        self._check_documents(tuple(state for _order, state in explained), "after the race", quiet=True)
        if fitting:
            self.state = fitting[0]
            return
        order, state = explained[0]
        diff = "; ".join(document_diff(stored_documents(self.db), documents(state)))
        self.findings.append(
            Finding(
                "documents",
                f"the answers ({_calls(ops, answers)}) are explained by order {','.join(str(i + 1) for i in order)}, "
                f"but the stored documents are not that order's (nor any explaining order's): {diff}",
            )
        )

    def judge_commuting(self, ops: Sequence[Any], answers: Sequence[Any], *, cut_off: str = "") -> None:
        """Judge a race of calls that commute (lights of distinct users with distinct lantern ids): the model's
        answer to each is its answer now, in every order, and the final state is the same for every order (a
        lantern_unavailable call counts as applied iff its lantern is stored). `cut_off` (the cap, when the
        harness refused transactions after it): the lantern_unavailable answers are the harness's doing, and
        are reported as calls still running at the cap."""
        assert all(isinstance(op, Light) for op in ops)
        assert len({op.user_id for op in ops}) == len({op.lantern_id for op in ops}) == len(ops)
        stored = stored_documents(self.db)
        wrong, unavailable, state = [], [], self.state
        for op, answer in zip(ops, answers, strict=True):
            _new, result = step(self.state, op)
            if answer == UNAVAILABLE:
                unavailable.append(op.lantern_id)
                if f"lanterns/{op.lantern_id}" not in stored:
                    continue
            elif not result.matches(answer):
                model = _short(_model_answer(result))
                wrong.append(f"{describe_op(op, epoch=T0)} answered {_short(answer)}, the model {model}")
            state, _result = step(state, op)
        if unavailable and cut_off:
            self.findings.append(
                Finding(
                    "B1 latency",
                    f"{len(unavailable)} of {len(ops)} lights were still running at the harness's {cut_off} cap "
                    f"(cut off there, they answered {UNAVAILABLE}): {', '.join(unavailable)}",
                )
            )
        elif unavailable:
            self.findings.append(
                Finding(
                    "unavailable",
                    f"{len(unavailable)} of {len(ops)} lights answered {UNAVAILABLE}: {', '.join(unavailable)}",
                )
            )
        if wrong:
            self.findings.append(Finding("order", "; ".join(wrong)))
        self.state = state
        self._check_documents((state,), "after the race")

    # documents and commits

    def _check_documents(self, candidates: tuple[LanternState, ...], when: str, *, quiet: bool = False) -> None:
        """INV-1..5 over the stored documents, the new commits' write-sets, and (unless `quiet`) the documents
        against the first candidate state's."""
        stored = stored_documents(self.db)
        for violation in invariant_violations(stored):
            self.findings.append(Finding(violation.invariant, f"{violation.path}: {violation.detail} ({when})"))
        for commit in self.db.commits[self._commits_seen :]:
            for problem in write_set_violations(commit.paths) if commit.applied else ():
                self.findings.append(Finding("write-set", f"{problem} ({when}: {sorted(commit.paths)})"))
        self._commits_seen = len(self.db.commits)
        if quiet or not candidates:
            return
        diff = document_diff(stored, documents(candidates[0]))
        if diff:
            self.findings.append(Finding("documents", f"{when}: " + "; ".join(diff)))


@dataclass
class Verdict:
    scenario: str
    findings: list[Finding]
    calls: int  # the scenario's calls up to the failing one (or all of them)
    retries: int
    notes: list[str] = field(default_factory=list)

    @property
    def caught(self) -> bool:
        return bool(self.findings)

    @property
    def properties(self) -> set[str]:
        return {finding.property for finding in self.findings}

    @property
    def headline(self) -> str:
        """The first finding, invariants and the contention property first (they name the broken rule)."""
        ranked = sorted(self.findings, key=lambda f: not f.property.startswith(("INV", "SHAPE", "B1")))
        return str(ranked[0]) if ranked else "no finding"

    def explain(self) -> str:
        retries = f" (+{self.retries} whole-call retries)" if self.retries else ""
        lines = [f"scenario {self.scenario}: {self.calls} calls{retries}"]
        lines += [f"  - {finding}" for finding in self.findings] or ["  (no finding)"]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


# --- the seed's scenarios ---------------------------------------------------------------------------------------


def double_extinguish(judge: Judge, notes: list[str]) -> None:
    """#5: alice's lantern is extinguished twice at once; bob's keeps the venue's count at 1."""
    for op in (BAR, Light("alice", "lan-1", "bar", *AT_BAR, now=T0), Light("bob", "lan-2", "bar", *AT_BAR, now=T0)):
        judge.step(op)
    put_out = Extinguish("alice", "lan-1", now=T0 + timedelta(minutes=10))
    judge.judge_race([put_out, put_out], judge.race([put_out, put_out]))


class _FailingDeleteReference(DocumentReference):
    """A document reference whose plain `delete` fails (recording its path in `hits`); everything else, including
    a transaction's delete of it, is a real reference's."""

    hits: list[str]

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        self.hits.append(self.path)
        raise api_exceptions.ServiceUnavailable("injected: the process died before the guard delete")


class GuardDeleteFaultClient(RecordingClient):
    """A recording client that can fail plain deletes: while `plain_deletes_fail()` is active, every document
    reference it hands out fails a plain `delete` (a separate write sent outside any transaction: the reference
    deletes only inside transactions, so it never meets the fault). Only calls made with this client see it."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self._failed_deletes: list[str] | None = None

    def document(self, *path: str) -> DocumentReference:
        reference = self._client.document(*path)
        if self._failed_deletes is None:
            return reference
        failing = _FailingDeleteReference(*reference._path, client=reference._client)
        failing.hits = self._failed_deletes
        return failing

    @contextlib.contextmanager
    def plain_deletes_fail(self) -> Iterator[list[str]]:
        """Yields the paths whose delete failed while it was active."""
        self._failed_deletes = hits = []
        try:
            yield hits
        finally:
            self._failed_deletes = None


def extinguish_then_relight_guard_delete_fails(judge: Judge, notes: list[str]) -> None:
    """#4: alice extinguishes (a failure is injected into any separate delete sent after the commit), then
    lights again at another venue."""
    assert isinstance(judge.db, GuardDeleteFaultClient)
    for op in (BAR, CLUB, Light("alice", "lan-1", "bar", *AT_BAR, now=T0)):
        judge.step(op)
    with judge.db.plain_deletes_fail() as hits:
        try:
            judge.step(Extinguish("alice", "lan-1", now=T0 + US))
        finally:
            notes.append(f"injected delete failures: {', '.join(hits) if hits else 'none (never reached)'}")
    judge.step(Light("alice", "lan-2", "club", *AT_CLUB, now=T0 + 2 * US))


def relight_old_venue_deleted(judge: Judge, notes: list[str]) -> None:
    """#13: alice's lantern at bar expires, bar is deleted, alice lights again at club."""
    for op in (BAR, CLUB, Light("alice", "lan-1", "bar", *AT_BAR, now=T0), DeleteVenue("bar")):
        judge.step(op)
    judge.step(Light("alice", "lan-2", "club", *AT_CLUB, now=T0 + H2))


def lights_24_at_one_venue(judge: Judge, notes: list[str]) -> None:
    """#3: 24 users light at one venue at once; capped at LIGHTS_CAP_SECONDS (see DeadlineClient)."""
    judge.step(BAR)
    ops = [Light(f"user-{n:02d}", f"lan-{n:02d}", "bar", *AT_BAR, now=T0 + n * US) for n in range(LIGHTS)]
    logs = [AttemptLog() for _ in ops]
    first_abort: list[float] = []
    done = threading.Event()
    started = time.monotonic()

    def watch() -> None:
        while not done.wait(0.05):
            if not first_abort and any(log.aborts for log in logs):
                first_abort.append(time.monotonic() - started)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    judge.db.deadline = started + LIGHTS_CAP_SECONDS
    try:
        answers = judge.race(ops, logs)
    finally:
        done.set()
        watcher.join()
        judge.db.deadline = None
    elapsed = time.monotonic() - started
    aborts = [log.aborts for log in logs]
    notes.append(
        f"{LIGHTS} lights: {elapsed:.1f} s, {sum(log.attempts for log in logs)} read-write attempts, "
        f"{sum(aborts)} aborted, {sum(log.looks for log in logs)} lock-free looks"
        + (f", first abort after {first_abort[0]:.1f} s" if first_abort else "")
        + (
            f"; {judge.db.cancelled} transactions refused at the {LIGHTS_CAP_SECONDS:g} s cap"
            if judge.db.cancelled
            else ""
        )
    )
    if any(aborts):
        judge.findings.append(
            Finding(
                "B1 contention",
                f"{sum(1 for a in aborts if a)} of {LIGHTS} concurrent lights at one venue aborted at least once "
                f"({sum(aborts)} aborted attempts, at most {max(aborts)} for one call; {elapsed:.1f} s for all "
                f"{LIGHTS}): B1 requires zero, since lights take no lock on the venue",
            )
        )
    judge.judge_commuting(ops, answers, cut_off=f"{LIGHTS_CAP_SECONDS:g} s" if judge.db.cancelled else "")


def read_racing_extinguish(judge: Judge, notes: list[str]) -> None:
    """A3: a read of active lanterns (which retires alice's expired lantern) races alice's own extinguish of it."""
    for op in (
        BAR,
        Light("alice", "lan-1", "bar", *AT_BAR, now=T0),
        Light("bob", "lan-2", "bar", *AT_BAR, now=T0 + H2),
    ):
        judge.step(op)
    later = T0 + H2 + timedelta(seconds=1)
    ops = [ReadActive(now=later), Extinguish("alice", "lan-1", now=later)]
    judge.judge_race(ops, judge.race(ops))


SCENARIOS: dict[str, Callable[[Judge, list[str]], None]] = {
    "double_extinguish": double_extinguish,
    "extinguish_then_relight_guard_delete_fails": extinguish_then_relight_guard_delete_fails,
    "relight_old_venue_deleted": relight_old_venue_deleted,
    "lights_24_at_one_venue": lights_24_at_one_venue,
    "read_racing_extinguish": read_racing_extinguish,
}
CLIENTS: dict[str, Callable[[Any], RecordingClient]] = {
    "extinguish_then_relight_guard_delete_fails": GuardDeleteFaultClient,
    "lights_24_at_one_venue": DeadlineClient,
}
# What each variant's scenario must report (every one of these finding kinds; others may come with them).
EXPECTED: dict[str, tuple[str, ...]] = {
    "finding_3_venue_in_read_set": ("B1 contention",),
    "finding_4_guard_cleared_after_commit": ("INV-2", "documents"),
    "finding_5_read_then_write_extinguish": ("INV-3", "order"),
    "finding_13_blind_decrement_deleted_venue": ("answer", "documents"),
    "rejected_c1_upsert_old_venue": ("SHAPE", "documents"),
    "rejected_a3_auto_extinguish_batch": ("INV-3", "documents"),
}


def run_scenario(system: LanternSystem, scenario: str, db: Any) -> Verdict:
    """One run of `scenario` against `system` (on an empty project); a finding is a verdict, never an exception."""
    judge, notes = Judge(db, system, CLIENTS.get(scenario, RecordingClient)), []
    try:
        SCENARIOS[scenario](judge, notes)
    except Detected:
        pass
    return Verdict(scenario, judge.findings, judge.scenario_calls, judge.retries, notes)


# --- tests ------------------------------------------------------------------------------------------------------


def test_every_variant_has_its_scenario_and_expected_findings():
    assert {v.scenario for v in VARIANTS} <= SCENARIOS.keys()
    assert EXPECTED.keys() == {v.name for v in VARIANTS}


def _misbehaving_system() -> LanternSystem:
    """A lantern system that breaks the harness's race checks on purpose: its light commits a pin without its
    lantern (a write-set violation), its extinguish raises something that is not its error type."""

    class MisbehavingError(Exception):
        code = "misbehaving"

    def light_lantern(*, db: Any, lantern_id: str, **_: Any) -> Any:
        @firestore.transactional
        def body(transaction: Any) -> None:
            transaction.set(db.document(f"publicPins/{lantern_id}"), {"lanternId": lantern_id})

        body(db.transaction())
        return SimpleNamespace(to_json=lambda: {"outcome": "lit", "lanternId": lantern_id})

    def extinguish_lantern(**_: Any) -> Any:
        raise RuntimeError("not a lantern answer")

    api = ModuleType("misbehaving_lantern")
    api.light_lantern, api.extinguish_lantern, api.LanternError = light_lantern, extinguish_lantern, MisbehavingError
    return LanternSystem.of("misbehaving_lantern", api)


def test_race_problems_are_reported_as_findings(firestore_db):
    """The harness's own control: `race` returns its problems (never asserts) and the judge keeps them."""
    judge = Judge(firestore_db, _misbehaving_system())
    ops = [Light("alice", "lan-1", "bar", *AT_BAR, now=T0), Extinguish("bob", "lan-2", now=T0)]
    answers = judge.race(ops)
    assert answers == [{"outcome": "lit", "lanternId": "lan-1"}, None]
    assert [f.property for f in judge.findings] == ["race", "write-set"], judge.findings
    assert "RuntimeError: not a lantern answer" in judge.findings[0].detail
    assert "lantern lan-1 and its pin not written together" in judge.findings[1].detail


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_seed_scenario_passes_against_the_reference(scenario, firestore_db):
    verdict = run_scenario(REFERENCE_LANTERN, scenario, firestore_db)
    print(f"\nreference: {verdict.explain()}")
    assert not verdict.caught, f"the real reference fails its own seed scenario:\n{verdict.explain()}"


def finding_of(finding: Finding) -> Problem:
    """A seed finding as a problem for the one rule (fencecheck.checker.known_bad_verdict), of the kind it was found as:
    a `race` racer that hung or crashed; every other property the contract's."""
    return Problem(finding.kind, str(finding))


@dataclass
class Judged:
    verdict: verdicts.KnownBadVerdict
    runs: list[Verdict]
    seconds: float  # the scenario runs' wall time, up to the detecting one (emptying the project excluded)


def judge_seed_variant(system: LanternSystem, scenario: str, *, expected: set[str], repetitions: int, db: Any,
                       emulator: Any, project_id: str) -> Judged:
    """Run `scenario` against `system` up to `repetitions` times (until a run shows the `expected` findings);
    caught when the detecting run's findings are the contract's, the scenario shows them again against the
    variant (within `repetitions` more runs) and passes against the reference. A crash is an error."""
    runs: list[Verdict] = []
    seconds = 0.0

    def run(on: LanternSystem) -> Verdict:
        emulator.reset(project_id)
        try:
            return run_scenario(on, scenario, db)
        finally:
            emulator.reset(project_id)

    try:
        for _ in range(repetitions):
            started = time.monotonic()
            runs.append(run(system))
            seconds += time.monotonic() - started
            if expected <= runs[-1].properties:
                break
    except Exception as crash:  # the harness (or the variant, outside the system's error) crashed
        return Judged(verdicts.judge([harness(f"{type(crash).__name__}: {crash}")]), runs, round(seconds, 2))
    caught = [run_ for run_ in runs if run_.caught]
    if not caught:
        return Judged(verdicts.judge([]), runs, round(seconds, 2))
    detecting = runs[-1] if runs[-1].caught else caught[0]  # caught by another property in an earlier run
    found = [finding_of(f) for run_ in runs for f in run_.findings]
    early = verdicts.run_verdict(found)
    if early is not None:  # a racer crashed or hung: nothing to replay
        return Judged(early, runs, round(seconds, 2))
    try:
        replay: list[Problem] = []
        for _ in range(repetitions):  # until a run shows a finding again, as the detecting run did
            replay = [finding_of(f) for f in run(system).findings]
            if replay:
                break
        reference = run(REFERENCE_LANTERN)
    except Exception as crash:
        return Judged(verdicts.judge([harness(f"on replay: {type(crash).__name__}: {crash}")]), runs,
                      round(seconds, 2))
    first = [finding_of(f) for f in detecting.findings]
    return Judged(verdicts.judge(first, replay=replay, reference=[finding_of(f) for f in reference.findings],
                                 reproduction=f"scenario {scenario} again; against the reference: "
                                 f"{reference.explain()}"), runs, round(seconds, 2))


@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_known_bad_lantern_variant_is_caught(name, emulator, project_id, firestore_db, request, record_property):
    v = variant(name)
    nodeid = request.node.nodeid
    record = known_bad_recorder(artifacts_root(ROOT), name=f"lantern-{name}", rule=v.rule,
                                failing_property=f"{nodeid}: {v.failing_property}")
    try:
        system = variant_system(name)
    except Exception:
        record("error", found=f"{nodeid}: the variant could not be built")
        raise
    expected = set(EXPECTED[name])
    repetitions = MAX_REPETITIONS if v.concurrent else 1
    judged = judge_seed_variant(system, v.scenario, expected=expected, repetitions=repetitions, db=firestore_db,
                                emulator=emulator, project_id=project_id)
    outcome, runs, seconds = judged.verdict, judged.runs, judged.seconds
    history = "\n".join(f"run {i}: {run.explain()}" for i, run in enumerate(runs, 1))
    caught = [run for run in runs if run.caught]
    verdict = runs[-1] if runs and runs[-1].caught else (caught[0] if caught else None)
    if outcome.caught and verdict is not None:
        record("caught", seconds=seconds, steps=verdict.calls,
               found=f"{nodeid}: {verdict.headline or v.failing_property}")
    else:
        record(outcome.status, seconds=seconds if outcome.status == "error" else None,
               found=f"{nodeid}: {outcome.reason}" if outcome.status == "error" else None)
    if not outcome.caught:
        pytest.fail(
            f"known-bad lantern variant {name} ({v.finding}) {outcome.status.upper()} after {len(runs)} run(s) of "
            f"{v.scenario} ({seconds} s): {outcome.reason}\n({v.failing_property} was expected to fail)\n{history}",
            pytrace=False,
        )
    assert verdict is not None
    for key, value in (
        ("secondsToDetection", seconds),
        ("scenarioCalls", verdict.calls),
        ("runsToDetection", len(runs)),
        ("failingProperty", verdict.headline),
    ):
        record_property(key, value)
    print(f"\n{name} ({v.finding}): caught in run {len(runs)} of {repetitions} after {seconds} s\n{history}")
    missing = expected - verdict.properties
    assert not missing, f"{name}: caught, but never with the expected {sorted(missing)} in {len(runs)} runs:\n{history}"


@pytest.mark.parametrize("raising", [(), ("extinguish_lantern",)], ids=["every-transaction", "the-racing-extinguish"])
def test_a_variant_that_only_raises_name_error_is_an_error_not_a_catch(raising, emulator, project_id,
                                                                       firestore_db):
    # Every transaction raising crashes the scenario's first (sequential) call; the racing extinguishes
    # raising is a `race` finding. Neither is a property of the contract.
    judged = judge_seed_variant(lantern_name_error(*raising), "double_extinguish", expected={"INV-3"},
                                repetitions=1, db=firestore_db, emulator=emulator, project_id=project_id)
    assert judged.verdict.status == "error" and "NameError" in judged.verdict.reason, judged.verdict


def test_a_racing_extinguish_that_crashes_with_a_multi_line_message_is_an_error_not_a_catch(emulator, project_id,
                                                                                            firestore_db):
    # The race's `race` finding is a crash by its kind, whatever its message says over how many lines.
    judged = judge_seed_variant(lantern_multi_line_crash("extinguish_lantern"), "double_extinguish",
                                expected={"INV-3"}, repetitions=1, db=firestore_db, emulator=emulator,
                                project_id=project_id)
    assert judged.verdict.status == "error" and "BUG: a crash\nTraceback" in judged.verdict.reason, judged.verdict
