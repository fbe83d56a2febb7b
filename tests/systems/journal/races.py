"""The concurrent scenarios of seeds 000 (leases, fences, terminal commitment) and 001 (registration), as
contests for `fencecheck.runners.contest`.

Each scenario is data: a name, a width, the seed's promise in words, a `build(ids)` that returns a `RacePlan`
(one command key, sequential setup ops with explicit clock readings, then the concurrent callers, each a model
op with its own clock reading, plus optional sequential follow-up calls, and the number of terminal events
stored at the end) and a `promise(run)` that lists what the seed promises for that race beyond
linearizability and the journal plug-in's structural invariants (`fencecheck.systems.journal.structure`).
A plan becomes a `Contest` (`RacePlan.contest`): a `commit_failure_first` caller is a racer whose first attempt
is its op with `commit_fails=True` (the emulator rejects that commit atomically; the retries are plain), the
terminal event count is the contest's `facts["terminalEvents"]`. `execute` runs one scenario end to end.
Promises accept an indefinite final answer (a caller still `journal_unavailable` after its whole-call
retries): the checker judges those, the benchmark counts them.

Times are offsets from T0; the lease lasts 60 s, so a lease taken at T0+1 s is expired from T0+61 s on.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.linearizability import DEFAULT_BUDGET
from fencecheck.plugin.records import exact_answer_matches
from fencecheck.runners.contest import Contest, ContestRun, Ids, Racer, RacerRecord, answer_label
from fencecheck.runners.contest_results import ScenarioResult, execute_contest
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE, ReferenceAPI
from fencecheck.wire.mix import FaultMix
from model.journal import (
    Acquire,
    CommandRef,
    Complete,
    Fail,
    FaultKind,
    InjectFault,
    Operation,
    Register,
    commitment_hash_of,
    owner_fingerprint_of,
    step,
    timestamp_parts,
)
from reference.journal.identity import audit_path, lifecycle_path, root_path

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WIDTH = 24
UNAVAILABLE = "journal_unavailable"
JournalOp = Register | Acquire | Complete | Fail


def at(seconds: float, microseconds: int = 0) -> datetime:
    return T0 + timedelta(seconds=seconds, microseconds=microseconds)


def new_command(ids: Ids, scenario: str, payload: dict[str, Any] | None = None, command_id: str | None = None):
    return CommandRef.from_inputs(
        environment="test",
        caller_scope={"kind": "internal_system", "value": "race-tests"},
        command_id=command_id or ids.uuid(),
        command_type="race_command",
        endpoint_schema_version=1,
        payload=payload if payload is not None else {"scenario": scenario},
    )


def reference_fingerprint(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


# --- plans --------------------------------------------------------------------------------------------------


@attrs.frozen
class Caller:
    """One caller of a plan: its name (unique in the plan) and the call it makes (with its clock reading)."""

    name: str
    op: JournalOp
    commit_failure_first: bool = False  # first attempt's commit is rejected by the emulator; retries are plain

    def racer(self) -> Racer:
        first = attrs.evolve(self.op, commit_fails=True) if self.commit_failure_first else None
        return Racer(self.name, self.op, first_op=first)


@attrs.frozen
class RacePlan:
    scenario: str
    command: CommandRef  # every op of the plan has this command's key hash
    setup: tuple[Operation, ...]
    callers: tuple[Caller, ...]
    after: tuple[Caller, ...] = ()
    terminal_events: int = 0  # terminal audit events stored at the end (the setup's included)
    epoch: datetime | None = None  # times in descriptions are shown relative to it

    def __attrs_post_init__(self) -> None:
        key = self.command.key_hash
        for op in self.setup:
            if op.command.key_hash != key:
                raise ValueError(f"{self.scenario}: setup op on another command key")
        names = [c.name for c in (*self.callers, *self.after)]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.scenario}: caller names must be unique")
        for caller in (*self.callers, *self.after):
            if caller.op.command.key_hash != key:
                raise ValueError(f"{self.scenario}: caller {caller.name} calls another command key")
            if caller.op.commit_fails:
                raise ValueError(f"{self.scenario}: use commit_failure_first, not an op with commit_fails")
        if not self.callers:
            raise ValueError(f"{self.scenario}: a race needs callers")

    @property
    def key_hash(self) -> str:
        return self.command.key_hash

    @property
    def width(self) -> int:
        return len(self.callers)

    def contest(self) -> Contest:
        return Contest(
            self.scenario,
            self.setup,
            [caller.racer() for caller in self.callers],
            followers=[caller.racer() for caller in self.after],
            epoch=self.epoch,
            facts={"terminalEvents": self.terminal_events},
        )


@attrs.frozen
class Scenario:
    name: str
    seed: str  # "000" or "001"
    width: int
    promise_text: str
    build: Callable[[Ids], RacePlan]
    promise: Callable[[ContestRun], list[str]]

    def plan(self, ids: Ids) -> RacePlan:
        plan = self.build(ids)
        if plan.scenario != self.name or plan.width != self.width:
            raise ValueError(f"{self.name}: plan is {plan.scenario} with {plan.width} callers")
        return plan

    def contest(self, ids: Ids | None = None) -> Contest:
        """The contest raced with `ids`; None: fixed ids (Ids(0)), to look at a contest without racing it."""
        return self.plan(Ids(0) if ids is None else ids).contest()

    def execute(self, db: Any, *, implementation: ReferenceAPI, repeat: int, artifacts_dir: Path | None,
                counterexamples_dir: Path, emulator: Any, project_id: str,
                wire_mix: FaultMix | None = None) -> tuple[ScenarioResult, ContestRun]:
        """The race scenarios' interface (docs/suites.md): `execute` below, fresh ids, `implementation` raced."""
        return execute(db, self, repeat=repeat, artifacts_dir=artifacts_dir, counterexamples_dir=counterexamples_dir,
                       emulator=emulator, project_id=project_id, system=implementation, wire_mix=wire_mix)


def execute(
    db: Any,
    scenario: Scenario,
    *,
    repeat: int = 0,
    ids_seed: int | None = None,
    artifacts_dir: Path | None = None,
    counterexamples_dir: Path | None = None,
    emulator: Any = None,
    project_id: str | None = None,
    system: ReferenceAPI = REFERENCE,
    budget: int = DEFAULT_BUDGET,
    wire_mix: FaultMix | None = None,
) -> tuple[ScenarioResult, ContestRun]:
    """Build `scenario` with fresh ids (from `ids_seed`, else a random seed, saved with the result), race it
    against `system` on `db` through `fencecheck.runners.contest`, judge it (checker, the journal's structural
    invariants, the seed's promise) and save `<artifacts_dir>/journal_<name>-<repeat>.json` (and, when the
    verdict is not ok, the history in `counterexamples_dir`)."""
    seed = secrets.randbits(64) if ids_seed is None else ids_seed
    return execute_contest(
        db,
        scenario.contest(Ids(seed)),
        plugin=JOURNAL,
        implementation=system,
        promise=scenario.promise,
        repeat=repeat,
        ids_seed=seed,
        artifacts_dir=artifacts_dir,
        counterexamples_dir=counterexamples_dir,
        emulator=emulator,
        project_id=project_id,
        budget=budget,
        wire_mix=wire_mix,
    )


def key_of_run(run: ContestRun) -> str:
    """The one command key every call of the run names."""
    return run.contest.racers[0].op.command.key_hash


# --- promise helpers -----------------------------------------------------------------------------------


def _lifecycle(run: ContestRun) -> dict[str, Any] | None:
    return run.documents.get(lifecycle_path(key_of_run(run)))


def _lease_json(lc: dict[str, Any]) -> dict[str, Any]:
    seconds, nanoseconds = timestamp_parts(lc["leaseExpiresAt"])
    return {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "lease_acquired",
        "state": "leased",
        "fenceEpoch": lc["fenceEpoch"],
        "leaseExpiresAt": {"seconds": seconds, "nanoseconds": nanoseconds},
    }


def _holds(run: ContestRun, record: RacerRecord, lc: dict[str, Any]) -> bool:
    return owner_fingerprint_of(key_of_run(run), record.racer.op.lease_id) == lc["leaseOwnerFingerprint"]


def _expect_each(records: Sequence[RacerRecord], allowed: Callable[[RacerRecord], set[str]]) -> list[str]:
    """Every final answer is one of the allowed labels, or indefinite."""
    problems = []
    for record in records:
        label = answer_label(record.final)
        if record.definite and label not in allowed(record):
            problems.append(f"{record.racer.name}: answered {label}, expected one of {sorted(allowed(record))}")
    return problems


def _lease_promise(run: ContestRun, *, fence: int, revision: int, single_winner: bool) -> list[str]:
    """One holder holds `fence`: its callers answer exactly the stored lease, everyone else is busy."""
    lc = _lifecycle(run)
    if lc is None:
        return ["no lifecycle is stored: nobody acquired the lease"]
    problems = []
    if (lc["state"], lc["fenceEpoch"], lc["commandRevision"]) != ("leased", fence, revision):
        problems.append(
            f"lifecycle is {lc['state']} fence {lc['fenceEpoch']} revision {lc['commandRevision']}, "
            f"expected leased fence {fence} revision {revision}"
        )
        return problems
    winners = [r for r in run.racers if _holds(run, r, lc)]
    if not winners:
        problems.append("the stored lease belongs to none of the racing holders")
    expected = _lease_json(lc)
    for record in run.racers:
        if not record.definite:
            continue
        observed = record.final.observed
        if record in winners:
            if observed != expected:
                problems.append(f"{record.racer.name} (the holder) answered {answer_label(record.final)}, "
                                f"expected the stored lease fence {fence}")
        elif answer_label(record.final) != "lease_busy":
            problems.append(f"{record.racer.name}: answered {answer_label(record.final)}, expected lease_busy")
    acquired = [r for r in run.racers if answer_label(r.final) == f"lease_acquired@{fence}"]
    if single_winner and len(acquired) != 1 and all(r.definite for r in winners):
        problems.append(f"{len(acquired)} callers answered lease_acquired fence {fence}, exactly one expected")
    return problems


def _paths_promise(run: ContestRun, revisions: int, lifecycle: bool) -> list[str]:
    h = key_of_run(run)
    want = {root_path(h), *(audit_path(h, r) for r in range(1, revisions + 1))}
    if lifecycle:
        want.add(lifecycle_path(h))
    got = set(run.documents)
    if got != want:
        short = lambda paths: sorted(p.replace(h, h[:8]) for p in paths)  # noqa: E731
        return [f"stored documents: missing {short(want - got)}, unexpected {short(got - want)}"]
    return []


def _after_promise(run: ContestRun, expected: dict[str, str]) -> list[str]:
    problems = []
    for record in run.followers:
        want = expected[record.racer.name]
        label = answer_label(record.final)
        if label != want:
            problems.append(f"{record.racer.name} (after the race): answered {label}, expected {want}")
    return problems


def _model_answers_promise(run: ContestRun) -> list[str]:
    """Read-only races: each caller's answer is the model's answer from the setup state, whatever the order."""
    problems = []
    for record in (*run.racers, *run.followers):
        new_state, result = step(run.initial_state, record.racer.op)
        if new_state is not run.initial_state:
            problems.append(f"{record.racer.name}: the model says this call writes; the scenario is read-only")
        elif record.definite and not exact_answer_matches(result, record.final.observed):
            expected = result.output if result.ok else result.code
            problems.append(f"{record.racer.name}: answered {answer_label(record.final)}, the model {expected}")
    return problems


def _commit_failure_promise(run: ContestRun) -> list[str]:
    problems = []
    for record in run.racers:
        if record.racer.first_op is not None and record.calls and record.calls[0].outcome.definite:
            problems.append(
                f"{record.racer.name}: its commit-failing first attempt answered "
                f"{answer_label(record.calls[0].outcome)} (journal_unavailable expected)"
            )
    return problems


def _registration_promise(run: ContestRun, matching: Callable[[RacerRecord], bool]) -> list[str]:
    """The matching callers: one registered_new (the pair's creator), others registered_existing; every
    other caller command_conflict."""
    problems = _expect_each(
        run.racers, lambda r: {"registered_new", "registered_existing"} if matching(r) else {"command_conflict"}
    )
    new = [r for r in run.racers if answer_label(r.final) == "registered_new"]
    # An answer lost in transit may hide the creator; a commit the emulator rejected (commit_fails) cannot.
    lost = any(not a.outcome.definite and not a.op.commit_fails for r in run.racers for a in r.calls)
    if len(new) > 1 or (len(new) == 0 and not lost):
        problems.append(f"{len(new)} callers answered registered_new, exactly one expected")
    root = run.documents.get(root_path(key_of_run(run)))
    if root is None:
        problems.append("no root is stored: nobody registered")
    elif new and root["createdAt"] != new[0].racer.op.now:
        problems.append("the stored createdAt is not the clock reading of the caller that answered registered_new")
    return problems


# --- seed 000: leases, fences, terminal commitment --------------------------------------------------


def _registered(ids: Ids, name: str) -> tuple[CommandRef, tuple]:
    ref = new_command(ids, name)
    return ref, (Register(ref, at(0)),)


def _leased(ids: Ids, name: str) -> tuple[CommandRef, str, tuple]:
    ref, setup = _registered(ids, name)
    holder = ids.uuid()
    return ref, holder, (*setup, Acquire(ref, holder, at(1)))  # expires at T0+61 s


def build_distinct_holder_first_acquire(ids: Ids) -> RacePlan:
    name = "distinct_holder_first_acquire"
    ref, setup = _registered(ids, name)
    callers = tuple(Caller(f"holder-{i:02d}", Acquire(ref, ids.uuid(), at(5, i))) for i in range(WIDTH))
    return RacePlan(name, ref, setup, callers, epoch=T0)


def promise_distinct_holder_first_acquire(run: ContestRun) -> list[str]:
    return _lease_promise(run, fence=1, revision=2, single_winner=True) + _paths_promise(run, 2, True)


def build_same_holder_lost_response(ids: Ids) -> RacePlan:
    name = "same_holder_lost_response"
    ref, setup = _registered(ids, name)
    holder = ids.uuid()
    callers = tuple(Caller(f"retry-{i:02d}", Acquire(ref, holder, at(6, i))) for i in range(WIDTH))
    return RacePlan(name, ref, setup, callers, epoch=T0)


def promise_same_holder_lost_response(run: ContestRun) -> list[str]:
    return _lease_promise(run, fence=1, revision=2, single_winner=False) + _paths_promise(run, 2, True)


def build_expired_takeover(ids: Ids) -> RacePlan:
    """The old holder (twice), a new holder (twice) and 20 more race for the expired lease; afterwards the
    old holder's fence 1 must be rejected, inside the new lease and after it."""
    name = "expired_takeover"
    ref, old, setup = _leased(ids, name)
    again = ids.uuid()
    holders = [old, old, again, again, *(ids.uuid() for _ in range(WIDTH - 4))]
    callers = tuple(Caller(f"holder-{i:02d}", Acquire(ref, lease, at(90, i))) for i, lease in enumerate(holders))
    stale = reference_fingerprint(f"{ref.command_id}/old-holder")
    after = (
        Caller("old-complete-fence1", Complete(ref, old, 1, stale, at(95))),
        Caller("old-fail-fence1", Fail(ref, old, 1, at(95))),
        Caller("old-complete-fence1-late", Complete(ref, old, 1, stale, at(400))),
    )
    return RacePlan(name, ref, setup, callers, after, epoch=T0)


def promise_expired_takeover(run: ContestRun) -> list[str]:
    after = {c.name: "lease_rejected" for c in run.contest.followers}
    return (
        _lease_promise(run, fence=2, revision=3, single_winner=False)
        + _paths_promise(run, 3, True)
        + _after_promise(run, after)
    )


def _terminal_promise(run: ContestRun, side: Callable[[RacerRecord, str], bool]) -> list[str]:
    """The lifecycle is terminal; callers on the stored side observe it, the others get terminal_conflict."""
    lc = _lifecycle(run)
    if lc is None or lc["state"] not in ("succeeded", "failed_final"):
        return [f"the lifecycle is not terminal: {None if lc is None else lc['state']}"]
    state = lc["state"]
    observation = {"succeeded": "terminal_succeeded", "failed_final": "terminal_failed_final"}[state]
    return _expect_each(
        run.racers, lambda r: {observation} if side(r, state) else {"terminal_conflict"}
    ) + _paths_promise(run, 3, True)


def build_complete_versus_fail(ids: Ids) -> RacePlan:
    name = "complete_versus_fail"
    ref, holder, setup = _leased(ids, name)
    record = reference_fingerprint(f"{ref.command_id}/business-record")
    callers = tuple(
        Caller(f"complete-{i:02d}", Complete(ref, holder, 1, record, at(10)))
        if i % 2 == 0
        else Caller(f"fail-{i:02d}", Fail(ref, holder, 1, at(10)))
        for i in range(WIDTH)
    )
    other = ids.uuid()
    after = (  # the terminal state never changes: one side observes it, the other conflicts, acquires observe
        Caller("later-complete", Complete(ref, holder, 1, record, at(100))),
        Caller("later-fail", Fail(ref, holder, 1, at(100))),
        Caller("later-acquire", Acquire(ref, other, at(100))),
    )
    return RacePlan(name, ref, setup, callers, after, terminal_events=1, epoch=T0)


def promise_complete_versus_fail(run: ContestRun) -> list[str]:
    problems = _terminal_promise(run, lambda r, state: isinstance(r.racer.op, Complete) == (state == "succeeded"))
    lc = _lifecycle(run)
    if lc is not None and lc["state"] in ("succeeded", "failed_final"):
        succeeded = lc["state"] == "succeeded"
        observation = "terminal_succeeded" if succeeded else "terminal_failed_final"
        problems += _after_promise(
            run,
            {
                "later-complete": observation if succeeded else "terminal_conflict",
                "later-fail": "terminal_conflict" if succeeded else observation,
                "later-acquire": observation,
            },
        )
    return problems


def build_distinct_commitments(ids: Ids) -> RacePlan:
    name = "distinct_commitments"
    ref, holder, setup = _leased(ids, name)
    callers = tuple(
        Caller(f"commit-{i:02d}", Complete(ref, holder, 1, reference_fingerprint(f"{ref.command_id}/{i}"), at(20)))
        for i in range(WIDTH)
    )
    after = (Caller("later-acquire", Acquire(ref, holder, at(200))),)
    return RacePlan(name, ref, setup, callers, after, terminal_events=1, epoch=T0)


def promise_distinct_commitments(run: ContestRun) -> list[str]:
    lc = _lifecycle(run)
    h = key_of_run(run)
    stored = None if lc is None else lc.get("terminalCommitmentHash")
    winners = [r for r in run.racers if commitment_hash_of(h, r.racer.op.terminal_reference_fingerprint) == stored]
    problems = []
    if len(winners) != 1:
        problems.append(f"the stored commitment belongs to {len(winners)} racing callers, exactly one expected")
    problems += _terminal_promise(run, lambda r, state: r in winners and state == "succeeded")
    return problems + _after_promise(run, {"later-acquire": "terminal_succeeded"})


def build_terminal_retries_and_acquires(ids: Ids) -> RacePlan:
    """After success: exact terminal retries, acquires by the holder and others, conflicting finishes and
    registrations race, at clock readings from before the terminal update to long after the lease expired."""
    name = "terminal_retries_and_acquires"
    ref, holder, setup = _leased(ids, name)
    record = reference_fingerprint(f"{ref.command_id}/business-record")
    setup = (*setup, Complete(ref, holder, 1, record, at(10)))
    others = [ids.uuid() for _ in range(4)]
    ops = [
        *(Complete(ref, holder, 1, record, at(s)) for s in (10, 11, 30, 61, 100, 500)),  # exact retries
        Complete(ref, holder, 1, record, at(9, 999_999)),  # exact retry, clock before the terminal update
        Complete(ref, holder, 1, record, at(2)),
        *(Acquire(ref, holder, at(s)) for s in (20, 61, 500)),
        *(Acquire(ref, other, at(s)) for other, s in zip(others, (20, 61, 100, 500), strict=True)),
        Acquire(ref, others[0], at(5)),  # clock before the terminal update: still the terminal observation
        Complete(ref, holder, 1, reference_fingerprint(f"{ref.command_id}/another"), at(20)),  # conflicts
        Complete(ref, others[1], 1, record, at(20)),
        Fail(ref, holder, 1, at(20)),
        Fail(ref, holder, 1, at(500)),
        *(Register(ref, at(s)) for s in (20, 61, 100, 500)),
    ]
    callers = tuple(Caller(f"late-{i:02d}", op) for i, op in enumerate(ops))
    return RacePlan(name, ref, setup, callers, terminal_events=1, epoch=T0)


def promise_terminal_retries_and_acquires(run: ContestRun) -> list[str]:
    return _model_answers_promise(run) + _paths_promise(run, 3, True)


def build_preseeded_next_audit(ids: Ids) -> RacePlan:
    """A leased command whose next audit id (revision 3) is preseeded: takeovers, holder recoveries,
    completes and registrations all fail closed, concurrently, and nothing is written or repaired."""
    name = "preseeded_next_audit"
    ref, holder, setup = _leased(ids, name)
    setup = (*setup, InjectFault(ref, FaultKind.PRESEEDED_NEXT_AUDIT))
    record = reference_fingerprint(f"{ref.command_id}/business-record")
    ops = [
        *(Acquire(ref, ids.uuid(), at(90, i)) for i in range(12)),  # would take over the expired lease
        *(Acquire(ref, holder, at(30, i)) for i in range(4)),
        *(Complete(ref, holder, 1, record, at(30, i)) for i in range(4)),
        *(Register(ref, at(30, i)) for i in range(4)),
    ]
    callers = tuple(Caller(f"caller-{i:02d}", op) for i, op in enumerate(ops))
    return RacePlan(name, ref, setup, callers, epoch=T0)


def promise_preseeded_next_audit(run: ContestRun) -> list[str]:
    return _expect_each(run.racers, lambda r: {"unrecognized_record"}) + _model_answers_promise(run)


def build_commit_failure_takeover(ids: Ids) -> RacePlan:
    """Expired-lease takeover race in which every other caller's first commit is rejected by the emulator
    (atomically): the failed commits leave neither lifecycle nor audit; the retries race on."""
    name = "commit_failure_takeover"
    ref, old, setup = _leased(ids, name)
    holders = [old, *(ids.uuid() for _ in range(WIDTH - 1))]
    callers = tuple(
        Caller(f"holder-{i:02d}", Acquire(ref, lease, at(90, i)), commit_failure_first=i % 2 == 0)
        for i, lease in enumerate(holders)
    )
    return RacePlan(name, ref, setup, callers, epoch=T0)


def promise_commit_failure_takeover(run: ContestRun) -> list[str]:
    return (
        _lease_promise(run, fence=2, revision=3, single_winner=True)
        + _paths_promise(run, 3, True)
        + _commit_failure_promise(run)
    )


# --- seed 001: registration -----------------------------------------------------------------------------


def build_identical_registrations(ids: Ids) -> RacePlan:
    name = "identical_registrations"
    ref = new_command(ids, name)
    callers = tuple(Caller(f"register-{i:02d}", Register(ref, at(0, i))) for i in range(WIDTH))
    return RacePlan(name, ref, (), callers, epoch=T0)


def promise_identical_registrations(run: ContestRun) -> list[str]:
    return _registration_promise(run, lambda r: True) + _paths_promise(run, 1, False)


def build_two_payload_registration(ids: Ids) -> RacePlan:
    """Half the callers register one payload, half another, under one command id: one identity wins."""
    name = "two_payload_registration"
    command_id = ids.uuid()
    first = new_command(ids, name, {"scenario": name, "variant": "a"}, command_id)
    second = new_command(ids, name, {"scenario": name, "variant": "b"}, command_id)
    callers = tuple(
        Caller(f"payload-{'ab'[i % 2]}-{i:02d}", Register(first if i % 2 == 0 else second, at(0, i)))
        for i in range(WIDTH)
    )
    return RacePlan(name, first, (), callers, epoch=T0)


def promise_two_payload_registration(run: ContestRun) -> list[str]:
    root = run.documents.get(root_path(key_of_run(run)))
    if root is None:
        return ["no root is stored: nobody registered"]
    fingerprints = {r.racer.op.command.payload_fingerprint for r in run.racers}
    if root["payloadFingerprint"] not in fingerprints:
        return ["the stored payload fingerprint is neither racing payload's"]
    problems = _registration_promise(
        run, lambda r: r.racer.op.command.payload_fingerprint == root["payloadFingerprint"]
    )
    return problems + _paths_promise(run, 1, False)


def build_preseeded_registration_audit(ids: Ids) -> RacePlan:
    """The deterministic revision-1 audit id is preseeded and the root is absent: identical registrations
    all fail closed and none creates the root (no orphan command, no repair)."""
    name = "preseeded_registration_audit"
    ref = new_command(ids, name)
    setup = (Register(ref, at(0)), InjectFault(ref, FaultKind.MISSING_ROOT))
    callers = tuple(Caller(f"register-{i:02d}", Register(ref, at(5, i))) for i in range(WIDTH))
    return RacePlan(name, ref, setup, callers, epoch=T0)


def promise_preseeded_registration_audit(run: ContestRun) -> list[str]:
    problems = _expect_each(run.racers, lambda r: {"unrecognized_record"})
    h = key_of_run(run)
    if set(run.documents) != {audit_path(h, 1)}:
        problems.append(f"stored documents changed: {sorted(p.replace(h, h[:8]) for p in run.documents)}")
    return problems


def build_commit_failure_registration(ids: Ids) -> RacePlan:
    """Identical registrations, every other caller's first commit rejected by the emulator: a failed
    commit leaves neither half of the pair; the retries register or observe."""
    name = "commit_failure_registration"
    ref = new_command(ids, name)
    callers = tuple(
        Caller(f"register-{i:02d}", Register(ref, at(0, i)), commit_failure_first=i % 2 == 0) for i in range(WIDTH)
    )
    return RacePlan(name, ref, (), callers, epoch=T0)


def promise_commit_failure_registration(run: ContestRun) -> list[str]:
    return (
        _registration_promise(run, lambda r: True) + _paths_promise(run, 1, False) + _commit_failure_promise(run)
    )


# --- the catalogue ---------------------------------------------------------------------------------------

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "distinct_holder_first_acquire",
        "000",
        WIDTH,
        "24 distinct holders race the first acquire: one fence-1 lease and one revision-2 audit; all others busy",
        build_distinct_holder_first_acquire,
        promise_distinct_holder_first_acquire,
    ),
    Scenario(
        "same_holder_lost_response",
        "000",
        WIDTH,
        "24 retries of one holder's first acquire: one mutation, identical fence/expiry answers, no extra audit",
        build_same_holder_lost_response,
        promise_same_holder_lost_response,
    ),
    Scenario(
        "expired_takeover",
        "000",
        WIDTH,
        "expired lease, 24 callers (old holder included): one new fence 2 / revision 3, the winner's callers get "
        "it, all others busy; the old holder's fence 1 then gets lease_rejected for complete and fail",
        build_expired_takeover,
        promise_expired_takeover,
    ),
    Scenario(
        "complete_versus_fail",
        "000",
        WIDTH,
        "12 completes and 12 fails of one holder/fence: exactly one terminal mutation and event; the other side "
        "gets terminal_conflict; later calls never change the terminal state",
        build_complete_versus_fail,
        promise_complete_versus_fail,
    ),
    Scenario(
        "distinct_commitments",
        "000",
        WIDTH,
        "24 completes with distinct commitments: one commitment stored with one event; the others conflict",
        build_distinct_commitments,
        promise_distinct_commitments,
    ),
    Scenario(
        "terminal_retries_and_acquires",
        "000",
        WIDTH,
        "after success, exact terminal retries, acquires, conflicting finishes and registrations race: all "
        "read-only fixed answers (terminal observation / terminal_conflict / registered_existing), no write",
        build_terminal_retries_and_acquires,
        promise_terminal_retries_and_acquires,
    ),
    Scenario(
        "preseeded_next_audit",
        "000",
        WIDTH,
        "next audit id preseeded on a leased command: 24 concurrent takeovers/recoveries/completes/registrations "
        "all answer unrecognized_record; nothing is written or repaired",
        build_preseeded_next_audit,
        promise_preseeded_next_audit,
    ),
    Scenario(
        "commit_failure_takeover",
        "000",
        WIDTH,
        "expired-lease takeover race with every other caller's first commit rejected: failed commits leave "
        "lifecycle and audit untouched (atomic), the retries still yield exactly one fence-2 takeover",
        build_commit_failure_takeover,
        promise_commit_failure_takeover,
    ),
    Scenario(
        "identical_registrations",
        "001",
        WIDTH,
        "24 identical registrations: one registered_new, all others registered_existing, one pair",
        build_identical_registrations,
        promise_identical_registrations,
    ),
    Scenario(
        "two_payload_registration",
        "001",
        WIDTH,
        "12 + 12 registrations with two payloads under one id: one identity wins, matching calls reuse it, "
        "conflicting calls get command_conflict, the pair is never overwritten",
        build_two_payload_registration,
        promise_two_payload_registration,
    ),
    Scenario(
        "preseeded_registration_audit",
        "001",
        WIDTH,
        "revision-1 audit id preseeded, root absent: 24 registrations answer unrecognized_record and none "
        "creates the root",
        build_preseeded_registration_audit,
        promise_preseeded_registration_audit,
    ),
    Scenario(
        "commit_failure_registration",
        "001",
        WIDTH,
        "24 identical registrations with every other caller's first commit rejected: no half pair is ever "
        "left; one registered_new, the rest registered_existing",
        build_commit_failure_registration,
        promise_commit_failure_registration,
    ),
)

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}

# What a race is judged by besides the checker, as its failure messages name them (race_tests/conftest.py
# `assert_race_passed`): the journal plug-in's structural invariants and each scenario's seed promise.
INVARIANTS = "structural invariants"
PROMISE = "the seed's promise"
