"""The lantern reference against its model on the Firestore emulator (docs/lantern-contract.md).

Every test runs in its own emulator project with explicit clocks from T0. After each call the stored
documents of the four collections must equal `model.lantern.documents` of the model's state, field by field
with exact types, and satisfy INV-1..INV-5; every commit that carried writes must satisfy the per-commit
write-set rule (`write_set_violations`), and a read-only answer must have sent no write at all.

The seed's concurrency probes run at small width as plain tests: each collides on a WRITTEN document (INV-5),
the lantern for ends and the guard for lights, which is what makes them valid on the serializing emulator.
A contested pair costs one emulator lock timeout (~2 s) plus backoff. No `lantern_unavailable` is accepted.

The calls, races and document helpers are tests/systems/lantern/support.py's, with the system under test
passed explicitly (`REFERENCE_LANTERN` here); the known-bad catalogue's test uses the same helpers.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest

from model.lantern import (
    REACHABLE_IDS,
    DeleteVenue,
    Extinguish,
    FaultKind,
    InjectFault,
    LanternState,
    Light,
    ReadActive,
    ScheduledLight,
    describe_op,
    documents,
    invariant_violations,
    step,
    write_set_violations,
)
from reference.lantern import AttemptLog
from tests.systems.lantern.story import H2 as STORY_H2
from tests.systems.lantern.story import T0 as STORY_T0
from tests.systems.lantern.story import every_reachable_transition
from tests.systems.lantern.support import (
    AT_BAR,
    AT_CLUB,
    BAR,
    CLUB,
    H2,
    REFERENCE_LANTERN,
    T0,
    US,
    Answer,
    LanternSystem,
    RecordingClient,
    answer,
    call,
    make_stored,
    race,
    stored_documents,
    typed,
)

pytestmark = pytest.mark.emulator


# --- the reference and the model in lockstep ----------------------------------------------------------------------


class Lockstep:
    """The reference and the model side by side; every step compares answers, documents and invariants."""

    def __init__(self, db: Any, system: LanternSystem = REFERENCE_LANTERN) -> None:
        self.db = RecordingClient(db)
        self.system = system
        self.state = LanternState.empty()
        self.fired: set[str] = set()

    def check_documents(self) -> dict[str, dict[str, Any]]:
        stored = stored_documents(self.db)
        assert typed(stored) == typed(documents(self.state))
        assert invariant_violations(stored) == ()
        return stored

    def apply(self, op: Any, expected_transition: str | None = None) -> Answer:
        sent_before = len(self.db.commits)
        observed = call(self.db, op, system=self.system)
        self.state, result = step(self.state, op)
        where = describe_op(op, epoch=T0)
        assert result.matches(observed), (where, observed, result)
        if expected_transition is not None:
            assert result.transition == expected_transition, where
        self.fired.add(result.transition)
        commits = self.db.commits[sent_before:]
        if not result.wrote:
            assert commits == [], (where, commits)  # read-only answers send no write at all
        for commit in commits:
            assert commit.applied and write_set_violations(commit.paths) == (), (where, commit)
        self.check_documents()
        return observed

    def model(self, op: Any) -> None:
        """Advance the model alone (the reference ran the operation inside a race)."""
        self.state, _result = step(self.state, op)


def race_reference(lock: Lockstep, ops: Sequence[Any], logs: Sequence[AttemptLog] | None = None) -> list[Answer]:
    """Race the operations through the lockstep's system (lantern_support.race): it must report no problem (no hung or
    crashed racer, no commit breaking the write-set rule); the answers in operation order."""
    outcome = race(lock.db, ops, logs, system=lock.system)
    assert outcome.problems == (), outcome.problems
    return list(outcome.answers)


def linearize(lock: Lockstep, ops: Sequence[Any], answers: Sequence[Any]) -> tuple[Any, ...]:
    """Find an order of `ops` in which the model gives exactly these answers; adopt its state and return it.

    The documents are then checked against that order's state: a race is correct iff some sequential order
    explains both what every caller saw and what is stored."""
    for order in itertools.permutations(range(len(ops))):
        state, explained = lock.state, True
        for index in order:
            state, result = step(state, ops[index])
            explained = explained and result.matches(answers[index])
        if explained:
            lock.state = state
            lock.check_documents()
            return tuple(ops[index] for index in order)
    raise AssertionError(f"no sequential order explains {answers}")


# --- each operation's outcomes, sequentially ----------------------------------------------------------------------


def test_every_reachable_transition_against_the_model(firestore_db):
    """One story through every reachable row of the transition table, checked call by call."""
    lock = Lockstep(firestore_db)
    # the model test's story, then one more read: alice's lan-13 stays, carol's lan-9 has expired
    story = [*every_reachable_transition(), (ReadActive(now=STORY_T0 + 6 * STORY_H2), "read_active.retired")]
    for op, transition in story:
        lock.apply(op, transition)
    assert REACHABLE_IDS - lock.fired == set()


def test_invalid_inputs_and_an_untrusted_clock_write_nothing(firestore_db):
    lock = Lockstep(firestore_db)
    lock.apply(BAR)
    db, lantern_api = lock.db, REFERENCE_LANTERN.api
    bad_calls = [
        lambda: lantern_api.light_lantern(
            db=db, user_id="a/b", lantern_id="l", venue_id="bar", latitude=52.52, longitude=13.405
        ),
        lambda: lantern_api.light_lantern(
            db=db, user_id="a", lantern_id="l", venue_id="bar", latitude=True, longitude=13.405
        ),
        lambda: lantern_api.activate_scheduled_lantern(
            db=db, user_id="a", lantern_id="l", venue_id="bar", scheduled_for=datetime(2026, 3, 1)
        ),
        lambda: lantern_api.create_venue(db=db, venue_id="v", name="V", latitude=91, longitude=0, radius_meters=10),
        lambda: lantern_api.extinguish_lantern(db=db, user_id="", lantern_id="l"),
    ]
    assert [answer(function) for function in bad_calls] == ["invalid_lantern_input"] * len(bad_calls)

    def naive() -> datetime:
        return datetime(2026, 3, 1, 20, 0)

    assert (
        answer(lambda: lantern_api.extinguish_lantern(db=db, user_id="a", lantern_id="l", clock=naive))
        == "lantern_unavailable"
    )
    assert len(db.commits) == 1  # only the venue creation
    lock.check_documents()


def test_a_stranded_guard_does_not_block_the_next_light(firestore_db):
    """D2 against damaged data: the guard of an extinguished lantern (what #4 left behind) is overwritten."""
    lock = Lockstep(firestore_db)
    for op in (BAR, CLUB, Light("alice", "lan-1", "bar", *AT_BAR, now=T0)):
        lock.apply(op)
    damaged, _ = step(lock.state, InjectFault(FaultKind.STRANDED_GUARD, "alice", now=T0 + timedelta(minutes=1)))
    make_stored(firestore_db, documents(damaged))
    lock.state = damaged
    assert [v.invariant for v in invariant_violations(stored_documents(firestore_db))] == ["INV-2"]
    lock.apply(Light("alice", "lan-2", "club", *AT_CLUB, now=T0 + timedelta(minutes=2)), "light.stranded_guard")


def test_a_malformed_document_is_answered_unrecognized_and_left_untouched(firestore_db):
    lock = Lockstep(firestore_db)
    for op in (BAR, Light("alice", "lan-1", "bar", *AT_BAR, now=T0)):
        lock.apply(op)
    docs = documents(lock.state)
    docs["lanterns/lan-1"]["unexpectedField"] = 1
    make_stored(firestore_db, docs)
    sent = len(lock.db.commits)
    for op in (Extinguish("alice", "lan-1", now=T0 + US), ReadActive(now=T0 + US)):
        assert call(lock.db, op) == "unrecognized_record"
    assert len(lock.db.commits) == sent
    assert typed(stored_documents(firestore_db)) == typed(docs)


# --- the seed's concurrency probes -------------------------------------------------------------------------------


def test_double_extinguish_of_one_lantern_decrements_once(firestore_db):
    """#5: both callers read the lantern and write its status; one aborts, and its retry sees it ended."""
    lock = Lockstep(firestore_db)
    for op in (BAR, Light("alice", "lan-1", "bar", *AT_BAR, now=T0), Light("bob", "lan-2", "bar", *AT_BAR, now=T0)):
        lock.apply(op)
    put_out = Extinguish("alice", "lan-1", now=T0 + timedelta(minutes=10))
    answers = race_reference(lock, [put_out, put_out])
    assert sorted(answers, key=str) == sorted(
        [{"outcome": "extinguished", "lanternId": "lan-1"}, "lantern_not_active"], key=str
    )
    linearize(lock, [put_out, put_out], answers)
    assert stored_documents(firestore_db)["venues/bar"]["activeLanternCount"] == 1
    ends = [sorted(c.paths) for c in lock.db.applied if "lanterns/lan-1" in c.paths]
    assert ends[1:] == [["activeLanterns/alice", "lanterns/lan-1", "publicPins/lan-1", "venues/bar"]]


def test_extinguish_then_relight_is_never_refused(firestore_db):
    """#4: the guard is cleared inside the extinguish transaction, so the next light at once succeeds."""
    lock = Lockstep(firestore_db)
    for op in (BAR, CLUB, Light("alice", "lan-1", "bar", *AT_BAR, now=T0)):
        lock.apply(op)
    lock.apply(Extinguish("alice", "lan-1", now=T0 + US), "extinguish.active")
    lock.apply(Light("alice", "lan-2", "club", *AT_CLUB, now=T0 + 2 * US), "light.new")


def test_extinguish_racing_a_relight_linearizes(firestore_db):
    """Both touch alice's guard; either order is legal, and the documents must be that order's."""
    lock = Lockstep(firestore_db)
    for op in (BAR, CLUB, Light("alice", "lan-1", "bar", *AT_BAR, now=T0)):
        lock.apply(op)
    now = T0 + timedelta(minutes=5)
    ops = [Extinguish("alice", "lan-1", now=now), Light("alice", "lan-2", "club", *AT_CLUB, now=now)]
    answers = race_reference(lock, ops)
    assert answers[0] == {"outcome": "extinguished", "lanternId": "lan-1"}
    assert answers[1] == "lantern_already_active" or answers[1]["outcome"] == "lit"
    linearize(lock, ops, answers)


def test_relight_whose_old_venue_was_deleted(firestore_db):
    """#13: the old venue is read inside the relight (C2); gone, its decrement is skipped, not thrown."""
    lock = Lockstep(firestore_db)
    for op in (BAR, CLUB, Light("alice", "lan-1", "bar", *AT_BAR, now=T0), DeleteVenue("bar")):
        lock.apply(op)
    lock.apply(Light("alice", "lan-2", "club", *AT_CLUB, now=T0 + H2), "light.relight_old_venue_gone")
    stored = lock.check_documents()
    assert "venues/bar" not in stored  # no ghost venue (C1 rejected)
    assert stored["lanterns/lan-1"]["status"] == "expired" and stored["venues/club"]["activeLanternCount"] == 1


def test_24_concurrent_lights_at_one_venue_count_exactly(firestore_db):
    """#3: the venue is not in the lights' read set (B1), so 24 users lighting at once do not serialize on
    it: every light answers lit without a single aborted attempt, and activeLanternCount is exactly 24."""
    lock = Lockstep(firestore_db)
    lock.apply(BAR)
    ops = [Light(f"user-{n:02d}", f"lan-{n:02d}", "bar", *AT_BAR, now=T0 + n * US) for n in range(24)]
    logs = [AttemptLog() for _ in ops]
    started = time.monotonic()
    answers = race_reference(lock, ops, logs)
    elapsed = time.monotonic() - started
    assert answers == [step(lock.state, op)[1].output for op in ops]  # independent users: any order
    for op in ops:
        lock.model(op)
    assert lock.check_documents()["venues/bar"]["activeLanternCount"] == 24
    assert [log.aborts for log in logs] == [0] * 24
    assert elapsed < 20, elapsed


def test_manual_and_scheduled_doors_race_for_one_user(firestore_db):
    """INV-1 across both doors (#889): they collide on the written guard; exactly one lantern is lit."""
    lock = Lockstep(firestore_db)
    for op in (BAR, CLUB):
        lock.apply(op)
    ops = [
        Light("alice", "lan-1", "bar", *AT_BAR, now=T0),
        ScheduledLight("alice", "lan-2", "club", T0 - timedelta(minutes=1), now=T0),
    ]
    answers = race_reference(lock, ops)
    assert sorted(a if isinstance(a, str) else a["outcome"] for a in answers) == ["lantern_already_active", "lit"]
    linearize(lock, ops, answers)


def test_auto_extinguish_on_read_racing_a_manual_extinguish(firestore_db):
    """The getActiveLanterns batch bug: both end the same expired lantern through the shared layer, so it
    is retired once (endedAt = expiresAt, whoever wins) and its venue is decremented once."""
    lock = Lockstep(firestore_db)
    for op in (
        BAR,
        Light("alice", "lan-1", "bar", *AT_BAR, now=T0),
        Light("bob", "lan-2", "bar", *AT_BAR, now=T0 + H2),
    ):
        lock.apply(op)
    later = T0 + H2 + timedelta(seconds=1)
    ops = [ReadActive(now=later), Extinguish("alice", "lan-1", now=later)]
    answers = race_reference(lock, ops)
    assert [view["lanternId"] for view in answers[0]["lanterns"]] == ["lan-2"]
    assert answers[1] in ({"outcome": "expired", "lanternId": "lan-1"}, "lantern_not_active")
    linearize(lock, ops, answers)
    assert stored_documents(firestore_db)["venues/bar"]["activeLanternCount"] == 1
    assert len([c for c in lock.db.applied if "lanterns/lan-1" in c.paths]) == 2  # the light, one retirement
