"""The gateway journal's race scenarios (docs/gateway-contract.md, "Races and known-bad variants"), as contests
for `fencecheck.runners.contest`.

Each scenario is data: a name, the contract rows it probes, its promise in words, a `build()` that returns the
`Contest` (setup operations with explicit clock readings, the racers, one operation each) and a `promise(run)`
listing what the contract promises for that race beyond linearizability; G-INV-1..12 on the stored documents
(and G-INV-2/9/10 across the race) are the plug-in's `contest_problems` (fencecheck/systems/gateway/structure.py),
already in every run's problems. Every run starts on an empty project of its own, so the ids are fixed.

Widths. The consume-intent election runs 24-way (and 12/12 over two regions), the seed's width. The others
race fewer callers (`WIDTH`): each has one or two writes that decide it and callers that can only observe or
be refused, so 8 to 12 callers mean the same race as 24 and cost a third of the emulator time (the CI budget);
`FENCECHECK_GATEWAY_RACE_WIDTH=24` runs them all 24-way.

Times. A lease expires at equality: a caller at exactly the expiry finds it expired; the settlement deadline
has elapsed at equality. A scenario that races "just before" against "at" a boundary uses 1 µs (1 ms for the
deadline, which is stored in milliseconds). Callers that repeat one write (the same evidence from several
devices, closers of one window) share one clock reading, as a resent request does: the stored `updated_at`
is then the same whichever of them wrote, and the checker need not search which one did (with distinct
readings the final documents name the writer, and at 24-way the search for it exhausts the checker's budget).

A promise accepts an indefinite final answer (still `gateway_unavailable` after the whole-call retries): the
checker judges those calls; when one's answer was lost, "exactly one winner" becomes "at most one".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from fencecheck.emulator.firestore_io import typed
from fencecheck.runners.contest import Contest, ContestRun, Racer, RacerRecord
from fencecheck.runners.contest_results import ScenarioResult, execute_contest
from fencecheck.systems.gateway.plugin import GATEWAY
from fencecheck.wire.mix import FaultMix
from model.gateway import SETTLEMENT_WINDOW_MS, ms_time
from tests.systems.gateway.builders import (
    CHANGED_INPUT,
    MS,
    REF,
    T0,
    US,
    apply,
    begin,
    claim,
    close,
    evidence,
    get,
    hosted,
    manual,
    provider_intent,
    reconcile,
    report,
)
from tests.systems.gateway.builders import record as record_consume

ELECTION_WIDTH = 24  # the seed's contest width
WIDTH = int(os.environ.get("FENCECHECK_GATEWAY_RACE_WIDTH", "8"))  # the other scenarios (module doc)
S = timedelta(seconds=1)

# One journal's life, each step at a fixed time: begin, consume claimed by the first owner (a 30 s lease),
# consume recorded (the deadline is the transition + 15 min), provider intent (a 120 s lease, well before the
# deadline), the provider's report.
OWNER, PROVIDER, RECONCILER = "owner-a", "provider-p", "reconciler-r"
CLAIMED_AT = T0 + S
CONSUME_EXPIRY = CLAIMED_AT + 30 * S
ANSWER = hosted(at=CLAIMED_AT)
REPLAY = hosted(at=CLAIMED_AT, kind="IDEMPOTENT_CONSUMED")
DEADLINE = ms_time(ANSWER.settlement_deadline_at)
INTENT_AT = CLAIMED_AT + 2 * S
PROVIDER_EXPIRY = INTENT_AT + 120 * S
REPORTED_AT = INTENT_AT + S

BEGUN = (begin(T0),)
CLAIMED = (*BEGUN, claim(OWNER, CLAIMED_AT))
CONSUMED = (*CLAIMED, record_consume(OWNER, 1, ANSWER, CLAIMED_AT + S))
PROVIDER_OWNED = (*CONSUMED, provider_intent(PROVIDER, INTENT_AT))
REPORTED = (*PROVIDER_OWNED, report(PROVIDER, 2, REPORTED_AT))

assert DEADLINE == CLAIMED_AT.replace(microsecond=0) + timedelta(milliseconds=SETTLEMENT_WINDOW_MS)
assert PROVIDER_EXPIRY < DEADLINE - 60 * S  # the provider lease is not capped in these scenarios


@attrs.frozen
class GatewayScenario:
    name: str
    probes: str  # the contract rows the race exercises
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
        """Race this scenario against `implementation` and judge it: checker, G-INV-1..12 and the promise. Under
        `wire_mix` every racer's calls go through its own faulted wire lane, as the other systems' do."""
        return execute_contest(
            db,
            self.contest(),
            plugin=GATEWAY,
            implementation=implementation,
            promise=self.promise,
            repeat=repeat,
            artifacts_dir=artifacts_dir,
            counterexamples_dir=counterexamples_dir,
            emulator=emulator,
            project_id=project_id,
            wire_mix=wire_mix,
        )


# --- promise helpers ------------------------------------------------------------------------------------------


def _named(run: ContestRun, prefix: str) -> list[RacerRecord]:
    return [record for record in run.racers if record.racer.name.startswith(prefix)]


def _expect_each(records: Iterable[RacerRecord], allowed: set[str]) -> list[str]:
    """Every definite final answer is one of `allowed`."""
    return [
        f"{record.racer.name}: answered {record.label}, expected one of {sorted(allowed)}"
        for record in records
        if record.definite and record.label not in allowed
    ]


def _winners(records: Sequence[RacerRecord], label: str, *, at_most: bool = False) -> tuple[list[RacerRecord],
                                                                                          list[str]]:
    """The racers that answered `label`: exactly one (at most one with `at_most`, or when some racer's answer
    was lost: it may have won without learning of it)."""
    winners = [record for record in records if record.label == label]
    lost = any(record.lost_an_answer for record in records)
    if len(winners) == 1 or (not winners and (lost or at_most)):
        return winners, []
    return winners, [f"{len(winners)} racers answered {label}, {'at most' if at_most else 'exactly'} one expected"]


def _record(run: ContestRun) -> dict[str, Any] | None:
    """The one journal's record (every scenario races one journal)."""
    records = [doc for path, doc in run.documents.items() if len(path.split("/")) == 4]
    return records[0] if len(records) == 1 else None


def _records(run: ContestRun) -> list[str]:
    found = [path for path in run.documents if len(path.split("/")) == 4]
    return [] if len(found) == 1 else [f"{len(found)} journal records stored, exactly one expected: {found}"]


def _events(run: ContestRun, event_type: str) -> list[dict[str, Any]]:
    return [doc for path, doc in sorted(run.documents.items()) if "/events/" in path
            and doc.get("event_type") == event_type]


def _count_events(run: ContestRun, event_type: str, expected: int | set[int]) -> list[str]:
    allowed = {expected} if isinstance(expected, int) else expected
    found = len(_events(run, event_type))
    return [] if found in allowed else [f"{found} {event_type} events stored, expected {sorted(allowed)}"]


def _stored(run: ContestRun, field: str, expected: Any) -> list[str]:
    doc = _record(run)
    found = None if doc is None else doc.get(field)
    if typed(found) != typed(expected):  # exactly: True is not 1, a timestamp is its instant
        return [f"the record's {field} is {found!r}, expected {expected!r}"]
    return []


def _owner(run: ContestRun, record: RacerRecord) -> list[str]:
    """The stored lease is the winner's."""
    return _stored(run, "lease_owner_fingerprint", record.racer.op.owner_fingerprint)


def _lease_ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i:02d}" for i in range(count)]


# --- the consume-intent election (claim.first / claim.held_other) ----------------------------------------------


def build_consume_election() -> Contest:
    """24 workers claim the consume intent of a begun journal at once, each with its own lease id and clock."""
    names = _lease_ids("worker", ELECTION_WIDTH)
    racers = [Racer(name, claim(name, CLAIMED_AT + i * US)) for i, name in enumerate(names)]
    return Contest("consume_election", BEGUN, racers, epoch=T0)


def build_consume_election_two_regions() -> Contest:
    """The election split 12/12 over two regions: one journal (the region is in no identity and no path)."""
    half = ELECTION_WIDTH // 2
    racers = [
        Racer(name, claim(name, CLAIMED_AT + i * US, region="us-east" if i < half else "eu-west"))
        for i, name in enumerate([*_lease_ids("east", half), *_lease_ids("west", half)])
    ]
    return Contest("consume_election_two_regions", BEGUN, racers, epoch=T0)


def promise_consume_election(run: ContestRun) -> list[str]:
    """Exactly one consume_claimed (fence 1, the stored owner), every other worker pending: a loser learns no
    idempotency key; one record, one consume_intent_claimed event, from the winner's region."""
    return _election_problems(run, run.racers)


def _election_problems(run: ContestRun, claimers: Sequence[RacerRecord]) -> list[str]:
    """The election's promise over `claimers` (every racer of the election; the claimers beside readers)."""
    problems = _expect_each(claimers, {"consume_claimed", "pending"})
    winners, found = _winners(claimers, "consume_claimed")
    problems += found + _records(run) + _count_events(run, "consume_intent_claimed", 1)
    for record in claimers:
        if record.label == "pending" and set(record.final.observed) != {"schema_version", "outcome", "state"}:
            problems.append(f"{record.racer.name}: a pending answer carries {sorted(record.final.observed)}")
    if len(winners) == 1:
        (winner,) = winners
        problems += _owner(run, winner) + _stored(run, "fence_epoch", 1)
        if winner.final.observed.get("consume_idempotency_key") != REF.consume_idempotency_key:
            problems.append("the winner's consume idempotency key is not the operation identity's")
        events = _events(run, "consume_intent_claimed")
        if events and events[0].get("region") != winner.racer.op.region:
            problems.append(f"the claim event's region is {events[0].get('region')!r}, the winner's is "
                            f"{winner.racer.op.region!r}")
    return problems


# --- reads racing the election (get.stored / claim.first / claim.held_other) -------------------------------------

# What a read of the journal may answer while it is claimed: the begun journal (no lease yet) or the claimed one
# (fence 1, the consume lease active at every reading here, all well before its expiry); no other state, no key.
BEGUN_VIEW = {"schema_version": 2, "outcome": "journal_state", "state": "BEGUN", "revision": 1, "fence_epoch": 0,
              "lease_kind": None, "lease_active": False, "settlement_deadline_at": None}
CLAIMED_VIEW = {**BEGUN_VIEW, "state": "CONSUME_INTENT", "revision": 2, "fence_epoch": 1, "lease_kind": "consume",
                "lease_active": True}
READ_AFTER = "read-after"  # the follower: one read after the race


def build_reads_during_consume_election() -> Contest:
    """Readers of a begun journal (`get_gateway_journal`) race workers claiming its consume intent, interleaved
    (half each), each with its own clock reading, then one more read after the race: every read is judged
    against the claims around it. On the emulator the racing reads finish before the election's winner commits
    (the losers' lock waits delay it by seconds), so they show the begun journal; the follower shows the claimed
    one: the two sides of the claim's commit."""
    readers = WIDTH // 2
    racers = []
    for i, name in enumerate(_lease_ids("claimer", WIDTH - readers)):  # claimer, reader, claimer, reader, ...
        racers.append(Racer(name, claim(name, CLAIMED_AT + i * US)))
        if i < readers:
            racers.append(Racer(f"reader-{i:02d}", get(CLAIMED_AT + i * US)))
    after = Racer(READ_AFTER, get(CLAIMED_AT + S))  # within the winner's lease whoever won
    return Contest("reads_during_consume_election", BEGUN, racers, followers=(after,), epoch=T0)


def _same_answer(observed: Any, expected: dict[str, Any]) -> bool:
    """Exactly the expected keys and values (True is not 1)."""
    return (isinstance(observed, Mapping) and set(observed) == set(expected)
            and all(typed(observed[key]) == typed(value) for key, value in expected.items()))


def promise_reads_during_consume_election(run: ContestRun) -> list[str]:
    """The claimers keep the election's promise (consume_election's); every read answers journal_state showing
    the begun journal or the claimed one, nothing in between and no key; the read after the race shows the
    claimed one once a claimer learnt of the claim; reads write nothing (revision 2)."""
    claimers, readers, after = _named(run, "claimer"), _named(run, "reader"), run.record(READ_AFTER)
    problems = _election_problems(run, claimers) + _expect_each([*readers, after], {"journal_state"})
    for record in readers:
        if record.label == "journal_state" and not any(_same_answer(record.final.observed, view)
                                                       for view in (BEGUN_VIEW, CLAIMED_VIEW)):
            problems.append(f"{record.racer.name}: read {dict(record.final.observed)}, neither the begun nor the "
                            "claimed journal")
    claimed = any(record.label in ("consume_claimed", "pending") for record in claimers)  # both see the claim
    views = (CLAIMED_VIEW,) if claimed else (BEGUN_VIEW, CLAIMED_VIEW)  # no claimer learnt: maybe none applied
    if after.label == "journal_state" and not any(_same_answer(after.final.observed, view) for view in views):
        problems.append(f"{READ_AFTER}: read {dict(after.final.observed)} after the race, expected the claimed "
                        "journal")
    if claimed:
        problems += _stored(run, "revision", 2)
    return problems


# --- lost-response recovery at exactly the expiry (claim.recovery / claim.held_other / rcr.expired) ------------


def build_recovery_at_expiry() -> Contest:
    """The consume owner's response was lost; at exactly its lease's expiry the owner records the late answer
    while recoverers claim the recovery: the lease has expired (equality), so the owner is refused and one
    recoverer takes the lease over with the same idempotency key, never a new one."""
    racers = [Racer("late-owner", record_consume(OWNER, 1, ANSWER, CONSUME_EXPIRY))]
    racers += [Racer(name, claim(name, CONSUME_EXPIRY)) for name in _lease_ids("recoverer", WIDTH - 1)]
    return Contest("recovery_at_expiry", CLAIMED, racers, epoch=T0)


def promise_recovery_at_expiry(run: ContestRun) -> list[str]:
    problems = _expect_each(_named(run, "late-owner"), {"lease_rejected"})
    recoverers = _named(run, "recoverer")
    problems += _expect_each(recoverers, {"consume_recovery_claimed", "pending"})
    winners, found = _winners(recoverers, "consume_recovery_claimed")
    problems += found + _count_events(run, "consume_recovery_claimed", {0, 1} if not winners else 1)
    if winners:
        (winner,) = winners
        problems += _owner(run, winner) + _stored(run, "fence_epoch", 2) + _stored(run, "state", "CONSUME_INTENT")
        if winner.final.observed.get("consume_idempotency_key") != REF.consume_idempotency_key:
            problems.append("the recovery's idempotency key differs from the first claim's (a new hosted transition)")
    return problems


def build_late_response_against_recovery() -> Contest:
    """The consume owner records its answer 1 µs before its lease expires while recoverers claim at the expiry:
    either the answer lands (the recoverers observe a consumed journal) or a recovery does (the answer is
    refused), never both."""
    racers = [Racer("late-owner", record_consume(OWNER, 1, ANSWER, CONSUME_EXPIRY - US))]
    racers += [Racer(name, claim(name, CONSUME_EXPIRY)) for name in _lease_ids("recoverer", WIDTH - 1)]
    return Contest("late_response_against_recovery", CLAIMED, racers, epoch=T0)


def promise_late_response_against_recovery(run: ContestRun) -> list[str]:
    owner = run.record("late-owner")
    recoverers = _named(run, "recoverer")
    problems = _expect_each([owner], {"consumed", "lease_rejected"})
    problems += _expect_each(recoverers, {"consume_recovery_claimed", "pending", "observed"})
    winners, found = _winners(recoverers, "consume_recovery_claimed", at_most=True)
    problems += found
    if owner.label == "consumed" and winners:
        problems.append("the late answer was recorded and a recovery was granted: two owners of one consume")
    if owner.label == "consumed":
        problems += _stored(run, "state", "CONSUMED") + _stored(run, "permit_id", ANSWER.permit_id)
        problems += _expect_each(recoverers, {"observed"})
    if winners:
        problems += _owner(run, winners[0]) + _stored(run, "state", "CONSUME_INTENT")
    if owner.definite and not winners and owner.label != "consumed" and not any(r.lost_an_answer for r in recoverers):
        problems.append("neither the late answer nor a recovery applied")
    return problems


# --- stale and current owners recording the same replay (rcr.no_lease / rcr.consumed / rcr.retry_consumed) ------

RECOVERED = (*CLAIMED, claim("owner-b", CONSUME_EXPIRY))


def build_stale_and_current_replay() -> Contest:
    """After a recovery (owner-b, fence 2) the stale owner-a and owner-b's devices record the same idempotent
    replay at once: the stale fence is always refused; owner-b records it once and its other devices are
    answered as retries."""
    at = CONSUME_EXPIRY + S
    racers = [Racer(f"stale-{i:02d}", record_consume(OWNER, 1, REPLAY, at + i * US)) for i in range(WIDTH // 2)]
    racers += [Racer(f"current-{i:02d}", record_consume("owner-b", 2, REPLAY, at)) for i in range(WIDTH // 2)]
    return Contest("stale_and_current_replay", RECOVERED, racers, epoch=T0)


def promise_stale_and_current_replay(run: ContestRun) -> list[str]:
    problems = _expect_each(_named(run, "stale"), {"lease_rejected"})
    problems += _expect_each(_named(run, "current"), {"consumed"})
    problems += _count_events(run, "consume_recorded", 1) + _stored(run, "state", "CONSUMED")
    return problems + _stored(run, "permit_id", REPLAY.permit_id) + _stored(run, "fence_epoch", 2)


# --- provider intent (tpi.first / tpi.held_other) ---------------------------------------------------------------


def build_provider_intent_election() -> Contest:
    """Provider workers take the provider intent of a consumed journal at once: one owns the submission."""
    names = _lease_ids("submitter", WIDTH)
    racers = [Racer(name, provider_intent(name, INTENT_AT + i * US)) for i, name in enumerate(names)]
    return Contest("provider_intent_election", CONSUMED, racers, epoch=T0)


def promise_provider_intent_election(run: ContestRun) -> list[str]:
    problems = _expect_each(run.racers, {"provider_intent_taken", "pending"})
    winners, found = _winners(run.racers, "provider_intent_taken")
    problems += found + _count_events(run, "provider_intent_taken", 1)
    for record in run.racers:
        if record.label == "pending" and "provider_create_idempotency_key" in record.final.observed:
            problems.append(f"{record.racer.name}: a pending answer carries the provider's idempotency key")
    if winners:
        problems += _owner(run, winners[0]) + _stored(run, "fence_epoch", 2)
    return problems


# --- provider intent against reconciliation: a report at E - 1 µs, reconcilers at E ----------------------------


def build_report_against_reconcile() -> Contest:
    """The provider owner reports its submission 1 µs before its lease expires while reconcilers take the
    abandoned intent at the expiry: the report lands first (and reconciliation begins on it) or is refused."""
    racers = [Racer("provider-report", report(PROVIDER, 2, PROVIDER_EXPIRY - US))]
    racers += [Racer(name, reconcile(name, PROVIDER_EXPIRY)) for name in _lease_ids("reconciler", WIDTH - 1)]
    return Contest("report_against_reconcile", PROVIDER_OWNED, racers, epoch=T0)


def promise_report_against_reconcile(run: ContestRun) -> list[str]:
    owner = run.record("provider-report")
    reconcilers = _named(run, "reconciler")
    problems = _expect_each([owner], {"submission_reported", "lease_rejected"})
    problems += _expect_each(reconcilers, {"reconcile_lease_taken", "pending"})
    winners, found = _winners(reconcilers, "reconcile_lease_taken")
    problems += found + _count_events(run, "reconcile_lease_taken", 1 if winners else {0, 1})
    if winners:
        problems += _owner(run, winners[0]) + _stored(run, "state", "RECONCILE_INTENT") + _stored(run, "fence_epoch", 3)
    if owner.label == "submission_reported":
        problems += _stored(run, "claim_id", owner.racer.op.claim_id)
    elif owner.label == "lease_rejected":
        problems += _stored(run, "claim_id", None)
    return problems


# --- reconcile takeover against the owner's decisive evidence (trl.takeover / ase.commit.reconcile) --------------

RECONCILING = (*REPORTED, reconcile(RECONCILER, PROVIDER_EXPIRY))
RECONCILE_EXPIRY = PROVIDER_EXPIRY + 60 * S


def build_takeover_against_evidence() -> Contest:
    """The reconcile owner applies settled evidence 1 µs before its lease expires while others take the lease
    over at the expiry: the evidence commits (the others observe it) or a takeover wins (the evidence is refused)."""
    racers = [Racer("evidence", apply(RECONCILER, 3, evidence("SETTLED"), RECONCILE_EXPIRY - US))]
    racers += [Racer(name, reconcile(name, RECONCILE_EXPIRY)) for name in _lease_ids("takeover", WIDTH - 1)]
    return Contest("takeover_against_evidence", RECONCILING, racers, epoch=T0)


def promise_takeover_against_evidence(run: ContestRun) -> list[str]:
    owner = run.record("evidence")
    takers = _named(run, "takeover")
    problems = _expect_each([owner], {"committed", "lease_rejected"})
    problems += _expect_each(takers, {"reconcile_lease_taken", "pending", "observed"})
    winners, found = _winners(takers, "reconcile_lease_taken", at_most=True)
    problems += found
    if owner.label == "committed":
        problems += _expect_each(takers, {"observed"}) + _stored(run, "state", "COMMIT")
        problems += _stored(run, "terminal_path", "reconciliation")
    if winners:
        problems += _owner(run, winners[0]) + _stored(run, "fence_epoch", 4)
        problems += _count_events(run, "reconcile_lease_taken_over", 1)
    return problems


# --- manual terminal against reconciliation (mt.commit / mt.release / mt.lease_active / trl.from_abandoned) -------

MANUAL_AT = PROVIDER_EXPIRY + S


def build_manual_against_reconcile() -> Contest:
    """An operator's manual terminals (COMMIT from two consoles, a fenced RELEASE from two, each claiming
    verification) race reconcilers on an abandoned, reported provider intent: exactly one of them writes."""
    racers = [Racer(f"manual-commit-{i}", manual("COMMIT", MANUAL_AT + i * US)) for i in range(2)]
    racers += [Racer(f"manual-release-{i}", manual("RELEASE", MANUAL_AT + i * US)) for i in range(2)]
    racers += [Racer(name, reconcile(name, MANUAL_AT)) for name in _lease_ids("reconciler", max(WIDTH - 4, 2))]
    return Contest("manual_against_reconcile", REPORTED, racers, epoch=T0)


def promise_manual_against_reconcile(run: ContestRun) -> list[str]:
    manuals, reconcilers = _named(run, "manual"), _named(run, "reconciler")
    problems = _expect_each(manuals, {"committed", "released", "terminal_conflict", "pending"})
    problems += _expect_each(reconcilers, {"reconcile_lease_taken", "pending", "observed"})
    applied = {record.label for record in manuals} & {"committed", "released"}
    taken, found = _winners(reconcilers, "reconcile_lease_taken", at_most=True)
    problems += found
    if len(applied) > 1:
        problems.append("a manual COMMIT and a manual RELEASE both answered as applied")
    if applied and taken:
        problems.append("a manual terminal applied and a reconcile lease was granted: two deciders")
    if applied:
        state = "COMMIT" if applied == {"committed"} else "RELEASE"
        problems += _stored(run, "state", state) + _stored(run, "terminal_path", "manual")
        problems += _stored(run, "evidence_class", "CALLER_ASSERTED") + _stored(run, "independent_verification", False)
        problems += _expect_each(reconcilers, {"observed"})
    if taken:
        problems += _owner(run, taken[0]) + _expect_each(manuals, {"pending"})
    return problems


# --- window closure at D against provider intent at D - 1 ms (csw.close / tpi.first / tpi.closed / csw.other) ----


def build_close_against_provider_intent() -> Contest:
    """Closers close the window at exactly the deadline D while two provider workers take the intent at D - 1 ms
    (a lease capped at D): the window closes or a submission is owned, never both."""
    racers = [Racer(name, provider_intent(name, DEADLINE - MS)) for name in _lease_ids("submitter", 2)]
    racers += [Racer(f"closer-{i:02d}", close(DEADLINE)) for i in range(WIDTH - 2)]
    return Contest("close_against_provider_intent", CONSUMED, racers, epoch=T0)


def promise_close_against_provider_intent(run: ContestRun) -> list[str]:
    submitters, closers = _named(run, "submitter"), _named(run, "closer")
    problems = _expect_each(submitters, {"provider_intent_taken", "pending", "observed"})
    problems += _expect_each(closers, {"submission_window_closed", "observed"})
    owned, found = _winners(submitters, "provider_intent_taken", at_most=True)
    problems += found
    closed = [record for record in closers if record.label == "submission_window_closed"]
    if owned and closed:
        problems.append("a provider intent was taken and the window was closed: both")
    if owned:
        problems += _stored(run, "state", "PROVIDER_INTENT") + _expect_each(closers, {"observed"})
        problems += _stored(run, "lease_expires_at", DEADLINE)  # capped at the deadline
    if closed:
        problems += _stored(run, "state", "SUBMISSION_WINDOW_CLOSED") + _expect_each(submitters, {"observed"})
    return problems + _count_events(run, "submission_window_closed", {0, 1})


# --- closure against a confirmed late settlement (csw.other / ase.commit.reconcile_late / mt.lease_active) --------

LATE_RECONCILE_AT = DEADLINE - 10 * S
LATE_RECONCILING = (*REPORTED, reconcile(RECONCILER, LATE_RECONCILE_AT))


def build_close_against_late_settlement() -> Contest:
    """At exactly the deadline the reconcile owner applies confirmed settlement (from several devices: one
    write, the rest retries) while closers try to close the window and an operator asks for a manual release:
    a confirmed settlement commits after the deadline, nothing closes a provider-owned journal, and nothing
    releases."""
    devices = max(WIDTH // 4, 2)
    settled = evidence("SETTLED")
    racers = [Racer(f"settle-{i}", apply(RECONCILER, 3, settled, DEADLINE)) for i in range(devices)]
    racers += [Racer(f"closer-{i:02d}", close(DEADLINE + i * US)) for i in range(WIDTH - devices - 1)]
    racers += [Racer("manual-release", manual("RELEASE", DEADLINE))]
    return Contest("close_against_late_settlement", LATE_RECONCILING, racers, epoch=T0)


def promise_close_against_late_settlement(run: ContestRun) -> list[str]:
    problems = _expect_each(_named(run, "settle"), {"committed"})
    problems += _expect_each(_named(run, "closer"), {"observed"})
    problems += _expect_each(_named(run, "manual"), {"pending", "terminal_conflict"})
    problems += _stored(run, "state", "COMMIT") + _stored(run, "terminal_path", "reconciliation")
    return problems + _count_events(run, "committed", 1) + _count_events(run, "submission_window_closed", 0)


# --- identical evidence retries (ase.commit.provider_owner / ase.retry_committed) --------------------------------


def build_identical_evidence_retries() -> Contest:
    """The held provider owner sends the same settled evidence from every device at once: one commit, the rest
    are exact retries answered the same without writing."""
    ev = evidence("SETTLED")
    racers = [Racer(f"device-{i:02d}", apply(PROVIDER, 2, ev, REPORTED_AT + S)) for i in range(WIDTH)]
    return Contest("identical_evidence_retries", REPORTED, racers, epoch=T0)


def promise_identical_evidence_retries(run: ContestRun) -> list[str]:
    problems = _expect_each(run.racers, {"committed"})
    problems += _stored(run, "state", "COMMIT") + _stored(run, "terminal_path", "provider_owner")
    return problems + _count_events(run, "committed", 1) + _stored(run, "revision", 6)


# --- begin with two inputs under one operation id (begin.new / begin.existing / any.binding_conflict) ------------


def build_begin_two_inputs() -> Contest:
    """Half the callers begin the operation with one provider input, half with another, under one operation
    id, on an empty namespace: one input is bound, its callers begin (one new, the rest existing), the other
    input's callers are binding conflicts."""
    half = max(WIDTH // 2, 1)
    racers = [Racer(f"input-a-{i:02d}", begin(T0 + i * US)) for i in range(half)]
    racers += [Racer(f"input-b-{i:02d}", begin(T0 + i * US, ref=CHANGED_INPUT)) for i in range(half)]
    return Contest("begin_two_inputs", (), racers, epoch=T0)


def promise_begin_two_inputs(run: ContestRun) -> list[str]:
    problems = _expect_each(run.racers, {"begun_new", "begun_existing", "binding_conflict"})
    winners, found = _winners(run.racers, "begun_new")
    problems += found + _records(run)
    if winners:
        side = winners[0].racer.name[:7]
        bound = REF if side == "input-a" else CHANGED_INPUT
        for record in run.racers:
            mine = record.racer.name.startswith(side)
            allowed = {"begun_new", "begun_existing"} if mine else {"binding_conflict"}
            problems += _expect_each([record], allowed)
        problems += _stored(run, "provider_input_digest", bound.provider_input_digest)
    return problems


# --- the catalogue -------------------------------------------------------------------------------------------

SCENARIOS: tuple[GatewayScenario, ...] = (
    GatewayScenario(
        "consume_election", "claim.first, claim.held_other",
        "24 workers claim one begun journal's consume intent: exactly one consume_claimed at fence 1 (the stored "
        "owner, the operation's idempotency key), the rest pending with no key; one claim event",
        build_consume_election, promise_consume_election,
    ),
    GatewayScenario(
        "consume_election_two_regions", "claim.first, claim.held_other, G3",
        "the election split 12/12 over two regions: one record, exactly one winner, its region in the event",
        build_consume_election_two_regions, promise_consume_election,
    ),
    GatewayScenario(
        "reads_during_consume_election", "get.stored, claim.first, claim.held_other",
        "readers race workers claiming one begun journal's consume intent: the claimers keep consume_election's "
        "promise (exactly one consume_claimed at fence 1, the rest pending); every read answers journal_state, "
        "the begun journal (revision 1, fence 0, no lease) or the claimed one (revision 2, fence 1, an active "
        "consume lease), with no key, each at a place some linearization allows; a read after the race shows "
        "the claimed one; reads write nothing",
        build_reads_during_consume_election, promise_reads_during_consume_election,
    ),
    GatewayScenario(
        "recovery_at_expiry", "claim.recovery, claim.held_other, rcr.expired",
        "at exactly the consume lease's expiry the owner's late answer is refused and exactly one recoverer takes "
        "the lease over (fence 2) with the same idempotency key; the rest pending",
        build_recovery_at_expiry, promise_recovery_at_expiry,
    ),
    GatewayScenario(
        "late_response_against_recovery", "rcr.consumed, claim.passed, rcr.no_lease, claim.recovery",
        "the owner's answer 1 µs before the expiry against recoverers at it: the answer is recorded (recoverers "
        "observe) or one recovery is granted (the answer refused), never both",
        build_late_response_against_recovery, promise_late_response_against_recovery,
    ),
    GatewayScenario(
        "stale_and_current_replay", "rcr.no_lease, rcr.consumed, rcr.retry_consumed",
        "after a recovery the stale and the current owner record the same replay: stale refused, current consumed "
        "once (the rest retries), the fence stays 2",
        build_stale_and_current_replay, promise_stale_and_current_replay,
    ),
    GatewayScenario(
        "provider_intent_election", "tpi.first, tpi.held_other",
        "provider workers take one consumed journal's intent: exactly one provider_intent_taken, the rest pending "
        "without the provider's keys",
        build_provider_intent_election, promise_provider_intent_election,
    ),
    GatewayScenario(
        "report_against_reconcile", "rps.first, trl.from_abandoned, rps.no_lease, trl.held_other",
        "the owner's report at E - 1 µs against reconcilers at E: exactly one reconcile lease (fence 3); the "
        "report is stored iff it answered submission_reported",
        build_report_against_reconcile, promise_report_against_reconcile,
    ),
    GatewayScenario(
        "takeover_against_evidence", "ase.commit.reconcile, trl.takeover, trl.closed, ase.no_lease",
        "the reconcile owner's settled evidence 1 µs before its expiry against takeovers at it: committed (the "
        "takers observe) or one takeover (fence 4), never both",
        build_takeover_against_evidence, promise_takeover_against_evidence,
    ),
    GatewayScenario(
        "manual_against_reconcile", "mt.commit, mt.release, mt.terminal_conflict, mt.lease_active, trl.from_abandoned",
        "manual COMMITs and RELEASEs against reconcilers on an abandoned intent: exactly one decider, a manual "
        "terminal stored caller-asserted whatever it claimed",
        build_manual_against_reconcile, promise_manual_against_reconcile,
    ),
    GatewayScenario(
        "close_against_provider_intent", "csw.close, tpi.first, tpi.closed, csw.other",
        "closers at the deadline D against provider intent at D - 1 ms: the window closes or a submission is "
        "owned (its lease capped at D), never both",
        build_close_against_provider_intent, promise_close_against_provider_intent,
    ),
    GatewayScenario(
        "close_against_late_settlement", "ase.commit.reconcile_late, ase.retry_committed, csw.other, mt.lease_active",
        "confirmed settlement at exactly the deadline against closers and a manual release: committed once, "
        "nothing closed, nothing released",
        build_close_against_late_settlement, promise_close_against_late_settlement,
    ),
    GatewayScenario(
        "identical_evidence_retries", "ase.commit.provider_owner, ase.retry_committed",
        "the same settled evidence from every device of the provider owner: all committed, one committed event",
        build_identical_evidence_retries, promise_identical_evidence_retries,
    ),
    GatewayScenario(
        "begin_two_inputs", "begin.new, begin.existing, any.binding_conflict",
        "begins with two provider inputs under one operation id: one input bound (one begun_new), its callers "
        "begun, the other's binding_conflict",
        build_begin_two_inputs, promise_begin_two_inputs,
    ),
)

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}

# What a race is judged by besides the checker, as its failure messages name them (race_tests/conftest.py
# `assert_race_passed`): G-INV-1..12 on the stored documents and across the race, and the contract's promise.
INVARIANTS = "G-INV-1..12"
PROMISE = "the contract's promise"

# The concurrent variants of the catalogue (known_bad/gateway/variants.py), each with the scenario that must catch
# it: race_tests/test_race_known_bad.py runs them (SuiteParts.races names this module). Plain reads and blind
# writes let several claimers of one begun journal each see BEGUN and each be told it won the election.
CATCHES = {"claim_outside_the_transaction": "consume_election"}
