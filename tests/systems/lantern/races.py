"""The lantern seed's concurrent scenarios (docs/lantern-contract.md, "The findings and how each shows up"), as
contests for `fencecheck.runners.contest`.

Each scenario is data: a name, the finding or decision it probes, its promise in words, a `build()` that returns
the `Contest` (setup operations with explicit clock readings, the racers, one operation each, and any follower
called after the race) and a `promise(run)` listing what the seed promises for that race beyond
linearizability and INV-1..INV-5 (`structural_problems`). Every run starts on an empty project of its own, so
the ids are fixed.

Widths. The checker gets no read-only shortcut for the lantern (`LANTERN.read_only_commutes` is False: a read
that retires nothing now may retire a lantern lit later). So a history in which a state-changing call could be
placed too early (before a call that must precede it) costs the checker every subset of the calls it can
still place behind it. Each scenario is shaped so that this never exceeds a few thousand nodes: where no such
dead end exists (every answer but one fails before the one state-changing answer) it runs 24-way; where it
does, the calls that can follow a dead end are kept few. tests/unit/test_lantern_contest.py holds every
scenario to that under adversarial invocation orders.

A promise accepts an indefinite final answer (still `lantern_unavailable` after the whole-call retries): the
checker judges those calls; when one's answer was lost, "exactly one winner" becomes "at most one".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.definite import wire_faulted
from fencecheck.runners.contest import Contest, ContestRun, Racer, RacerRecord
from fencecheck.runners.contest_results import ScenarioResult, execute_contest
from fencecheck.systems.lantern.plugin import LANTERN
from fencecheck.wire.mix import FaultMix
from model.lantern import (
    CreateVenue,
    DeleteVenue,
    Extinguish,
    Light,
    ReadActive,
    ScheduledLight,
    guard_path,
    invariant_violations,
    lantern_path,
    pin_path,
    venue_path,
)
from tests.systems.lantern.support import AT_BAR, AT_CLUB, BAR, CAFE, CLUB, H2, T0, US

WIDTH = 24  # the seed's contest width
ALICE_AT_BAR = Light("alice", "lan-1", "bar", *AT_BAR, now=T0)


@attrs.frozen
class LanternScenario:
    name: str
    probes: str  # the finding or decision the race exercises
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
        """Race this scenario against `implementation` and judge it: checker, INV-1..5 and the promise."""
        return execute_contest(
            db,
            self.contest(),
            plugin=LANTERN,
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
    """INV-1..INV-5 and SHAPE on every stored document at the end (`model.lantern.invariant_violations`)."""
    return [str(violation) for violation in invariant_violations(run.documents)]


# --- promise helpers ------------------------------------------------------------------------------------------


def _of(run: ContestRun, kind: type) -> list[RacerRecord]:
    return [record for record in run.racers if isinstance(record.racer.op, kind)]


def _expect_each(records: Iterable[RacerRecord], allowed: set[str]) -> list[str]:
    """Every definite final answer is one of `allowed`."""
    return [
        f"{record.racer.name}: answered {record.label}, expected one of {sorted(allowed)}"
        for record in records
        if record.definite and record.label not in allowed
    ]


def _one_winner(records: Sequence[RacerRecord], label: str) -> tuple[RacerRecord | None, list[str]]:
    """The one racer that answered `label`: exactly one, or none when some racer's answer was lost (it may
    have won without learning of it)."""
    winners = [record for record in records if record.label == label]
    lost = any(record.lost_an_answer for record in records)
    if len(winners) == 1:
        return winners[0], []
    if not winners and lost:
        return None, []
    return None, [f"{len(winners)} racers answered {label}, exactly one expected"]


def _field(run: ContestRun, path: str, field: str) -> Any:
    doc = run.documents.get(path)
    return None if doc is None else doc.get(field)


def _counter(run: ContestRun, venue: str, expected: int) -> list[str]:
    found = _field(run, venue_path(venue), "activeLanternCount")
    if found != expected:
        return [f"venues/{venue}: activeLanternCount is {found!r}, expected {expected}"]
    return []


def _ended(run: ContestRun, lantern: str, status: str, ended_at: Any) -> list[str]:
    doc = run.documents.get(lantern_path(lantern))
    if doc is None:
        return [f"lanterns/{lantern} is not stored"]
    problems = []
    if (doc["status"], doc["endedAt"]) != (status, ended_at):
        problems.append(f"lanterns/{lantern} is {doc['status']} ended at {doc['endedAt']}, expected {status} "
                        f"ended at {ended_at}")
    if pin_path(lantern) in run.documents:
        problems.append(f"the pin of the ended lantern {lantern} is still stored")
    return problems


def _no_negative_counter(run: ContestRun) -> list[str]:
    return [
        f"{path}: activeLanternCount {doc['activeLanternCount']} is negative"
        for path, doc in run.documents.items()
        if path.startswith("venues/") and isinstance(doc.get("activeLanternCount"), int)
        and doc["activeLanternCount"] < 0
    ]


# --- (a) double extinguish: #5 -------------------------------------------------------------------------------

EXTINGUISH_AT = T0 + timedelta(minutes=10)


def build_double_extinguish() -> Contest:
    """Alice's lantern is extinguished 24 times at once (her devices, each with its own clock reading); bob's
    lantern at the same venue keeps its count at 1 when exactly one decrement lands."""
    setup = (BAR, ALICE_AT_BAR, Light("bob", "lan-2", "bar", *AT_BAR, now=T0))
    racers = [Racer(f"owner-{i:02d}", Extinguish("alice", "lan-1", now=EXTINGUISH_AT + i * US)) for i in range(WIDTH)]
    return Contest("double_extinguish", setup, racers, epoch=T0)


def promise_double_extinguish(run: ContestRun) -> list[str]:
    problems = _expect_each(run.racers, {"extinguished", "lantern_not_active"})
    winner, found = _one_winner(run.racers, "extinguished")
    problems += found
    if winner is not None:  # the stored end is the winner's: its clock reading is the endedAt
        problems += _ended(run, "lan-1", "extinguished", winner.racer.op.now)
    return problems + _counter(run, "bar", 1)


# --- (b) extinguish then relight: #4 -------------------------------------------------------------------------

RELIGHT_AT = T0 + timedelta(minutes=5)
RELIGHT_AFTER = "relight-after"


def build_extinguish_then_relight() -> Contest:
    """Alice puts her lantern at the bar out while tapping light at the club 23 times (each a new lantern id),
    then lights once more after the race. On the emulator the taps' read-only refusals finish before the
    extinguish commits, so the race alone never shows a light after the extinguish: the follower does. The
    guard is cleared inside the extinguish (D1), so that light is never refused."""
    setup = (BAR, CLUB, ALICE_AT_BAR)
    racers = [Racer("extinguish", Extinguish("alice", "lan-1", now=RELIGHT_AT))]
    racers += [
        Racer(f"relight-{i:02d}", Light("alice", f"lan-c{i:02d}", "club", *AT_CLUB, now=RELIGHT_AT + i * US))
        for i in range(WIDTH - 1)
    ]
    after = Racer(RELIGHT_AFTER, Light("alice", "lan-after", "club", *AT_CLUB, now=RELIGHT_AT + timedelta(seconds=1)))
    return Contest("extinguish_then_relight", setup, racers, followers=(after,), epoch=T0)


def promise_extinguish_then_relight(run: ContestRun) -> list[str]:
    lights = _of(run, Light)
    winner, problems = _one_winner(_of(run, Extinguish), "extinguished")
    if winner is not None:
        problems += _ended(run, "lan-1", "extinguished", winner.racer.op.now)
    problems += _expect_each(lights, {"lit", "lantern_already_active"})
    lit = [record for record in lights if record.label == "lit"]
    if len(lit) > 1:
        problems.append(f"{len(lit)} lights answered lit, at most one may (one user, one active lantern)")
    after = run.record(RELIGHT_AFTER)
    # A lantern lit in the race is still active: the follower is refused. Otherwise nothing may refuse it.
    allowed = {"lantern_already_active"} if lit else {"lit"}
    if any(record.lost_an_answer for record in lights):
        allowed = {"lit", "lantern_already_active"}  # a lost answer may hide a lit lantern
    if after.definite and after.label not in allowed:
        problems.append(f"{RELIGHT_AFTER} (after the race): answered {after.label}, expected {sorted(allowed)}")
    active = lit[0] if lit else after if after.label == "lit" else None
    if active is not None:
        guard = _field(run, guard_path("alice"), "lanternId")
        if guard != active.racer.op.lantern_id:
            problems.append(f"alice's guard names {guard!r}, not {active.racer.op.lantern_id} (answered lit)")
        problems += _counter(run, "club", 1)
    return problems + _counter(run, "bar", 0)


# --- (c) relight whose old venue was deleted: #13, C2 --------------------------------------------------------


def build_relight_old_venue_deleted() -> Contest:
    """Alice's lantern at the bar has expired and the bar was deleted; she lights at the club from 24 devices at
    once. The relight retires the old lantern with the existence-guarded decrement (C2): the bar stays gone."""
    setup = (BAR, CLUB, ALICE_AT_BAR, DeleteVenue("bar"))
    racers = [
        Racer(f"device-{i:02d}", Light("alice", f"lan-r{i:02d}", "club", *AT_CLUB, now=T0 + H2 + i * US))
        for i in range(WIDTH)
    ]
    return Contest("relight_old_venue_deleted", setup, racers, epoch=T0)


def promise_relight_old_venue_deleted(run: ContestRun) -> list[str]:
    problems = _expect_each(run.racers, {"lit", "lantern_already_active"})
    winner, found = _one_winner(run.racers, "lit")
    problems += found
    if venue_path("bar") in run.documents:
        problems.append(f"venues/bar was recreated (a ghost venue): {run.documents[venue_path('bar')]}")
    problems += _no_negative_counter(run)
    problems += _ended(run, "lan-1", "expired", T0 + H2)
    if winner is not None:
        guard = _field(run, guard_path("alice"), "lanternId")
        if guard != winner.racer.op.lantern_id:
            problems.append(f"alice's guard names {guard!r}, not {winner.racer.op.lantern_id} (answered lit)")
        problems += _counter(run, "club", 1)
    return problems


# --- (d) 24 lights at one venue: #3, B1 ----------------------------------------------------------------------


def build_lights_24_at_one_venue() -> Contest:
    """24 users light at the bar at once; they share nothing but the venue's counter (a blind Increment)."""
    racers = [
        Racer(f"user-{i:02d}", Light(f"user-{i:02d}", f"lan-{i:02d}", "bar", *AT_BAR, now=T0 + i * US))
        for i in range(WIDTH)
    ]
    return Contest("lights_24_at_one_venue", (BAR,), racers, epoch=T0)


def promise_lights_24_at_one_venue(run: ContestRun) -> list[str]:
    """All lit, count 24, and no retry round at all. These lights share no document but the venue, so any
    aborted attempt (the runner's only reason to retry) is venue contention: B1 keeps the venue out of the
    read set, so the reference commits each light in its first attempt (docs/lantern-contract.md, #3). Under a
    fault mix a call whose answer a wire fault may have lost (`fencecheck.checker.definite.wire_faulted`) is excused:
    its retry, and its attempts, are the wire's doing, not the venue's. A call only delayed, or refused before
    the emulator (which the client retries below the transaction), lost nothing: it is held to the promise."""
    problems = [
        f"{record.racer.name}: answered {record.label}, expected lit" for record in run.racers if record.label != "lit"
    ]
    problems += _counter(run, "bar", WIDTH)
    faulted = wire_faulted(run.history)
    for record in run.racers:
        retries = sum(1 for call in record.calls[:-1] if call.call_id not in faulted)
        if retries:
            problems.append(f"{record.racer.name}: needed {retries} whole-call retries")
        for call in record.calls:
            if call.call_id not in faulted and (call.transaction_attempts, call.aborts) != (1, 0):
                problems.append(
                    f"{record.racer.name}: {call.transaction_attempts} transaction attempts, {call.aborts} aborted "
                    "(venue contention: B1 promises one attempt and no abort)"
                )
    return problems


# --- (e) auto-extinguish on read racing a manual extinguish: A2/A3 -------------------------------------------

READ_AT = T0 + H2 + timedelta(seconds=1)
READERS = 10  # reads and extinguishes together are the calls that can follow a dead end (module doc)
OWNER_DEVICES = 2


def build_read_racing_extinguish() -> Contest:
    """Alice's lantern has expired, still stored active; 10 readers of the active lanterns (each retires what
    it meets) race alice's own extinguish of it from 2 devices. Bob's lantern, lit at expiry, stays."""
    setup = (BAR, ALICE_AT_BAR, Light("bob", "lan-2", "bar", *AT_BAR, now=T0 + H2))
    racers = [Racer(f"reader-{i:02d}", ReadActive(now=READ_AT + i * US)) for i in range(READERS)]
    racers += [
        Racer(f"owner-{i:02d}", Extinguish("alice", "lan-1", now=READ_AT + i * US)) for i in range(OWNER_DEVICES)
    ]
    return Contest("read_racing_extinguish", setup, racers, epoch=T0)


def _lan_1_expired_once(run: ContestRun) -> list[str]:
    """Every extinguish of lan-1 answered expired or lantern_not_active, at most one expired, and lan-1 is stored
    as expired at its expiry."""
    extinguishes = _of(run, Extinguish)
    problems = _expect_each(extinguishes, {"expired", "lantern_not_active"})
    expired = [record for record in extinguishes if record.label == "expired"]
    if len(expired) > 1:
        problems.append(f"{len(expired)} extinguishes answered expired, at most one may")
    return problems + _ended(run, "lan-1", "expired", T0 + H2)


def promise_read_racing_extinguish(run: ContestRun) -> list[str]:
    """Exactly one writer ends alice's lantern: it is retired once (endedAt = expiresAt, whoever did it), the
    bar is decremented once (bob's lantern keeps it at 1), at most one extinguish answers expired; every read
    shows bob's lantern alone."""
    problems = []
    for record in _of(run, ReadActive):
        if record.definite:
            shown = record.final.observed.get("lanterns") if isinstance(record.final.observed, dict) else None
            if shown is None or [view["lanternId"] for view in shown] != ["lan-2"]:
                problems.append(f"{record.racer.name}: answered {record.final.observed!r}, expected lan-2 alone")
    problems += _lan_1_expired_once(run)
    if guard_path("alice") in run.documents:
        problems.append("alice's guard is still stored after her lantern ended")
    return problems + _counter(run, "bar", 1)


# --- (f) a venue deleted while lanterns at it end and are lit: #13, C2, pinned 15 ------------------------------

DELETE_AT = T0 + H2 + timedelta(seconds=1)
BOB_LIT_AT = T0 + timedelta(minutes=90)  # live at DELETE_AT
RELIGHT_DEVICES = 3
NEWCOMERS = ("carol", "dave")


def build_venue_deleted_during_relight() -> Contest:
    """Two admins delete the bar while the lanterns at it end: alice's, expired, is relit at the club from 3
    devices (the relight retires it with the existence-guarded decrement of the old venue, C2: #13's blind one
    failed NOT_FOUND once the venue was gone), bob's, live, is put out from 2 devices (C2 too); and carol and dave
    light at the bar (B1 pre-reads it outside the transaction: a light whose venue goes before its commit fails
    there and, retried, answers venue_not_found, pinned 15)."""
    setup = (BAR, CLUB, ALICE_AT_BAR, Light("bob", "lan-2", "bar", *AT_BAR, now=BOB_LIT_AT))
    racers = [Racer(f"admin-{i}", DeleteVenue("bar")) for i in range(2)]
    racers += [
        Racer(f"alice-{i}", Light("alice", f"lan-a{i}", "club", *AT_CLUB, now=DELETE_AT + i * US))
        for i in range(RELIGHT_DEVICES)
    ]
    racers += [Racer(f"bob-{i}", Extinguish("bob", "lan-2", now=DELETE_AT + i * US)) for i in range(2)]
    racers += [
        Racer(user, Light(user, f"lan-{user}", "bar", *AT_BAR, now=DELETE_AT + i * US))
        for i, user in enumerate(NEWCOMERS)
    ]
    return Contest("venue_deleted_during_relight", setup, racers, epoch=T0)


def promise_venue_deleted_during_relight(run: ContestRun) -> list[str]:
    deletes, lights = _of(run, DeleteVenue), _of(run, Light)
    problems = _expect_each(deletes, {"venue_deleted", "venue_not_found"})
    problems += _one_winner(deletes, "venue_deleted")[1]
    if any(record.definite for record in deletes) and venue_path("bar") in run.documents:
        problems.append(f"venues/bar is stored after its delete was answered (a ghost venue?): "
                        f"{run.documents[venue_path('bar')]}")
    relights = [record for record in lights if record.racer.op.user_id == "alice"]
    problems += _expect_each(relights, {"lit", "lantern_already_active"})
    winner, found = _one_winner(relights, "lit")
    problems += found + _ended(run, "lan-1", "expired", T0 + H2)
    if winner is not None:
        guard = _field(run, guard_path("alice"), "lanternId")
        if guard != winner.racer.op.lantern_id:
            problems.append(f"alice's guard names {guard!r}, not {winner.racer.op.lantern_id} (answered lit)")
        problems += _counter(run, "club", 1)
    extinguishes = _of(run, Extinguish)
    problems += _expect_each(extinguishes, {"extinguished", "lantern_not_active"})
    ended, found = _one_winner(extinguishes, "extinguished")
    problems += found
    if ended is not None:
        problems += _ended(run, "lan-2", "extinguished", ended.racer.op.now)
    problems += _expect_each([record for record in lights if record.racer.op.user_id in NEWCOMERS],
                             {"lit", "venue_not_found"})
    return problems + _no_negative_counter(run)


# --- (g) one venue created by several admins while users light there: B1, pinned 14 ---------------------------

AT_CAFE = (CAFE.latitude, CAFE.longitude)
CREATORS = 4
CAFE_LIGHTS = 6
LIGHT_AFTER, CREATE_AFTER = "light-after", "create-after"


def build_venue_created_during_lights() -> Contest:
    """Four admins create the cafe at once while six users light there, then one more user lights there and an
    admin creates it again, after the race. Exactly one create writes; a light's pre-read of the venue (B1,
    outside its transaction) finds it or not, and one that found it commits its blind increment on the created
    document, so the cafe counts exactly the lights that answered lit. On the emulator the racing lights' pre-reads
    finish before the create commits: the followers show the venue created."""
    racers = [Racer(f"admin-{i}", CAFE) for i in range(CREATORS)]
    racers += [
        Racer(f"user-{i:02d}", Light(f"user-{i:02d}", f"lan-{i:02d}", "cafe", *AT_CAFE, now=T0 + i * US))
        for i in range(CAFE_LIGHTS)
    ]
    after = (Racer(LIGHT_AFTER, Light("late", "lan-late", "cafe", *AT_CAFE, now=T0 + timedelta(seconds=1))),
             Racer(CREATE_AFTER, CAFE))
    return Contest("venue_created_during_lights", (BAR,), racers, followers=after, epoch=T0)


def promise_venue_created_during_lights(run: ContestRun) -> list[str]:
    creates, lights = _of(run, CreateVenue), _of(run, Light)
    problems = _expect_each(creates, {"venue_created", "venue_exists"})
    problems += _one_winner(creates, "venue_created")[1]
    problems += _expect_each(lights, {"lit", "venue_not_found"})
    stored = run.documents.get(venue_path("cafe"))
    if stored is None:
        if any(record.definite for record in creates):
            problems.append("venues/cafe is not stored, yet a create was answered")
        return problems
    expected = {"name": CAFE.name, "lat": CAFE.latitude, "lng": CAFE.longitude, "radiusMeters": CAFE.radius_meters}
    config = {key: stored.get(key) for key in expected}
    if config != expected:
        problems.append(f"venues/cafe is {config}, expected {expected}")
    # after the race the cafe exists: the late light is lit, the late create refused
    late_light, late_create = run.record(LIGHT_AFTER), run.record(CREATE_AFTER)
    problems += _expect_each([late_light], {"lit"}) + _expect_each([late_create], {"venue_exists"})
    if not any(record.lost_an_answer for record in (*lights, late_light)):
        problems += _counter(run, "cafe", sum(1 for record in (*lights, late_light) if record.label == "lit"))
    return problems


# --- (h) a scheduled lantern activated repeatedly, racing the manual door and an extinguish: #889, A2 -----------

ACTIVATE_AT = T0 + H2 + timedelta(seconds=1)
SCHEDULED_FOR = T0 + H2  # due at the race
SCHEDULER_WORKERS = 6


def build_scheduled_activation_repeated() -> Contest:
    """Alice's lantern at the bar has expired, still stored active. The scheduler activates her scheduled lantern
    (one id) at the club from 6 workers at once, she taps light at the club on 2 devices (new ids), and puts her
    expired lantern out from 2 more. The doors share the guard (#889): one light wins and retires the expired
    lantern, or lights after an extinguish retired it (A2); a scheduled activation that finds its own lantern
    stored is an exact retry and answers it."""
    setup = (BAR, CLUB, ALICE_AT_BAR)
    racers = [
        Racer(f"scheduler-{i}", ScheduledLight("alice", "lan-s", "club", SCHEDULED_FOR, now=ACTIVATE_AT + i * US))
        for i in range(SCHEDULER_WORKERS)
    ]
    racers += [
        Racer(f"tap-{i}", Light("alice", f"lan-m{i}", "club", *AT_CLUB, now=ACTIVATE_AT + i * US)) for i in range(2)
    ]
    racers += [Racer(f"owner-{i}", Extinguish("alice", "lan-1", now=ACTIVATE_AT + i * US)) for i in range(2)]
    return Contest("scheduled_activation_repeated", setup, racers, epoch=T0)


def promise_scheduled_activation_repeated(run: ContestRun) -> list[str]:
    lights = [*_of(run, ScheduledLight), *_of(run, Light)]
    problems = _expect_each(lights, {"lit", "lantern_already_active"})
    lit = [record for record in lights if record.label == "lit"]
    answers = {tuple(sorted(record.final.observed.items())) for record in lit}
    if len(answers) > 1:
        problems.append(f"the lit answers name {len(answers)} lanterns, one expected: "
                        f"{sorted(record.final.observed['lanternId'] for record in lit)}")
    elif lit:
        lantern_id = lit[0].final.observed["lanternId"]
        callers = [record for record in lights if record.racer.op.lantern_id == lantern_id]
        doc = run.documents.get(lantern_path(lantern_id))
        if doc is None or doc["status"] != "active" or not any(doc["litAt"] == r.racer.op.now for r in callers):
            problems.append(f"lanterns/{lantern_id} (answered lit) is {doc}: not active, lit at a clock reading of "
                            "one of its callers")
        guard = _field(run, guard_path("alice"), "lanternId")
        if guard != lantern_id:
            problems.append(f"alice's guard names {guard!r}, not {lantern_id} (answered lit)")
        problems += _counter(run, "club", 1)
    elif not any(record.lost_an_answer for record in lights):
        problems.append("no light answered lit: the first of them finds no live lantern of alice's")
    problems += _lan_1_expired_once(run)
    return problems + _counter(run, "bar", 0)


# --- the catalogue -------------------------------------------------------------------------------------------

SCENARIOS: tuple[LanternScenario, ...] = (
    LanternScenario(
        "double_extinguish",
        "#5, A2",
        "24 extinguishes of one lantern by its owner: exactly one answers extinguished (its clock reading is the "
        "stored endedAt), the rest lantern_not_active; the venue is decremented once",
        build_double_extinguish,
        promise_double_extinguish,
    ),
    LanternScenario(
        "extinguish_then_relight",
        "#4, A2/D1",
        "the owner's extinguish races 23 lights of new lanterns elsewhere, then she lights once more: extinguished, "
        "at most one racing light lit, the light after the race lit unless a racing one was (never refused); the "
        "guard names the lit lantern, that venue counts 1, the old venue 0",
        build_extinguish_then_relight,
        promise_extinguish_then_relight,
    ),
    LanternScenario(
        "relight_old_venue_deleted",
        "#13, C2",
        "24 relights after the old venue was deleted: exactly one lit, the rest lantern_already_active; the old "
        "lantern expired once, no ghost venue, no negative counter",
        build_relight_old_venue_deleted,
        promise_relight_old_venue_deleted,
    ),
    LanternScenario(
        "lights_24_at_one_venue",
        "#3, B1",
        "24 users light at one venue at once: all lit, activeLanternCount 24, every light commits in its first "
        "transaction attempt (no aborted attempt, no retry round)",
        build_lights_24_at_one_venue,
        promise_lights_24_at_one_venue,
    ),
    LanternScenario(
        "read_racing_extinguish",
        "A2 vs A3",
        "10 reads (auto-extinguish) race the owner's extinguish (2 devices) of an expired lantern: it is retired "
        "exactly once, the venue decremented once, at most one extinguish answers expired",
        build_read_racing_extinguish,
        promise_read_racing_extinguish,
    ),
    LanternScenario(
        "venue_deleted_during_relight",
        "#13, C2, pinned 15",
        "2 admins delete a venue while its lanterns end (an expired one relit elsewhere from 3 devices, a live one put "
        "out from 2) and 2 users light there: exactly one venue_deleted (the other venue_not_found) and the venue "
        "stays gone (no ghost); exactly one relight lit (the old lantern expired once, the new venue counts 1), "
        "exactly one extinguished; the lights there lit or venue_not_found; no negative counter",
        build_venue_deleted_during_relight,
        promise_venue_deleted_during_relight,
    ),
    LanternScenario(
        "venue_created_during_lights",
        "B1, pinned 14",
        "4 admins create one venue while 6 users light there, then one more light and create: exactly one "
        "venue_created, the rest venue_exists (the late create too); each racing light lit or venue_not_found, the "
        "late one lit; the venue holds its config and counts exactly the lights that lit",
        build_venue_created_during_lights,
        promise_venue_created_during_lights,
    ),
    LanternScenario(
        "scheduled_activation_repeated",
        "#889, A2, pinned 4/8",
        "6 activations of one scheduled lantern race 2 manual lights and 2 extinguishes of the user's expired lantern: "
        "every light lit or lantern_already_active, every lit answer the same lantern (an exact retry answers the "
        "stored one), which the guard names and its venue counts once; the expired lantern retired once (at most "
        "one extinguish answers expired), the old venue at 0",
        build_scheduled_activation_repeated,
        promise_scheduled_activation_repeated,
    ),
)

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}

# What a race is judged by besides the checker, as its failure messages name them (race_tests/conftest.py
# `assert_race_passed`).
INVARIANTS = "INV-1..5"
PROMISE = "the seed's promise"


def _catches() -> dict[str, str]:
    from known_bad.lantern import VARIANTS  # the catalogue is test material, as these scenarios are

    return {v.name: v.scenario for v in VARIANTS if v.concurrent}


# The concurrent variants of the catalogue, each with the scenario that must catch it (its own `scenario`):
# race_tests/test_race_known_bad.py runs them (SuiteParts.races names this module).
CATCHES = _catches()
