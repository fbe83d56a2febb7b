"""The transaction runner and the one trusted clock reading (SPEC.md "Concurrency and retries", "Time rules";
docs/journal-decisions.md "Transaction runner"), on the fake Firestore. No test sleeps for real: `sleep`
and `uniform` are injected into `run_transaction`, or the runner's default `sleep` is replaced."""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta, timezone

import google.auth.exceptions
import pytest
from google.api_core import exceptions as api_exceptions

from reference import AttemptLog, CommandJournalError
from reference.journal.runner import (
    LOOK_INTERVAL_SECONDS,
    MAX_ATTEMPTS,
    RETRY_ROUND_SECONDS,
    ROUND_JITTER_SECONDS,
    pause_before_retry,
    run_transaction,
)
from tests.fakes import FakeFirestore, FakeFirestoreMisuse
from tests.systems.journal.builders import (
    CMD,
    LEASE,
    LEASE_B,
    T0,
    T1,
    Clock,
    acquire,
    answer,
    call,
    complete,
    lifecycle_docs,
    patch_backoff,
    register,
    registered_docs,
    seed,
)

TC = T1 + timedelta(seconds=30)
T2 = T1 + LEASE + timedelta(seconds=5)
WALL = 100.0  # the injected wall clock: the next round starts at 102.0
LONGEST_PAUSE = RETRY_ROUND_SECONDS + ROUND_JITTER_SECONDS


def begins(db):
    return len(db.calls_named("begin"))


def commits(db):
    return len(db.calls_named("commit"))


# -- run_transaction directly ---------------------------------------------------------------------------------------
class Recorder:
    """Injected `uniform` and `sleep`: `uniform` answers a fixed fraction of its bound."""

    def __init__(self, fraction: float = 0.5, wall: float = WALL) -> None:
        self.fraction, self.now = fraction, wall
        self.uniform_calls: list[tuple[float, float]] = []
        self.pauses: list[float] = []

    def uniform(self, low: float, high: float) -> float:
        self.uniform_calls.append((low, high))
        return low + (high - low) * self.fraction

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)

    def wall(self) -> float:
        return self.now


def creating_body(runs: list[int]):
    def body(transaction):
        runs.append(1)
        db = transaction._client
        list(transaction.get_all([db.document("things/one")]))
        transaction.create(db.document("things/one"), {"n": 1})
        return "done"

    return body


def test_a_retry_waits_for_the_next_wall_clock_round_plus_its_jitter():
    assert (RETRY_ROUND_SECONDS, ROUND_JITTER_SECONDS) == (3.0, 0.5)
    assert pause_before_retry(100.0, 0.25) == pytest.approx(2.25)
    assert pause_before_retry(101.9, 0.5) == pytest.approx(0.6)
    assert pause_before_retry(102.0, 0.0) == 0.0  # on a boundary: this round
    assert MAX_ATTEMPTS == 10


def test_ten_aborted_attempts_are_journal_unavailable_with_nine_bounded_pauses():
    db, runs, recorder, log = FakeFirestore(abort_commits=50), [], Recorder(), AttemptLog()
    with pytest.raises(CommandJournalError) as caught:
        run_transaction(
            db, creating_body(runs), sleep=recorder.sleep, uniform=recorder.uniform, wall=recorder.wall, log=log
        )
    assert caught.value.code == "journal_unavailable"
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert (len(runs), begins(db), commits(db)) == (10, 10, 10)
    assert recorder.uniform_calls == [(0.0, ROUND_JITTER_SECONDS)] * 9
    assert recorder.pauses == [pytest.approx(2.25)] * 9
    assert (log.attempts, log.aborts) == (10, 10)
    assert db.dump() == {}


def test_nine_aborts_then_success_on_the_tenth_attempt():
    db, runs, recorder = FakeFirestore(abort_commits=9), [], Recorder()
    assert (
        run_transaction(db, creating_body(runs), sleep=recorder.sleep, uniform=recorder.uniform, wall=recorder.wall)
        == "done"
    )
    assert len(runs) == 10 and len(recorder.pauses) == 9
    assert db.dump() == {"things/one": {"n": 1}}


@pytest.mark.parametrize("where", ["reads", "commits"])
def test_three_aborts_cost_three_pauses_and_a_fourth_attempt(where):
    db = FakeFirestore(**{f"abort_{where}": 3})
    runs, recorder = [], Recorder(fraction=1.0)
    assert (
        run_transaction(db, creating_body(runs), sleep=recorder.sleep, uniform=recorder.uniform, wall=recorder.wall)
        == "done"
    )
    assert begins(db) == 4
    assert recorder.pauses == [pytest.approx(2.5)] * 3
    assert len(db.calls_named("transaction")) == 4  # one transaction per attempt
    assert {call[1] for call in db.calls_named("transaction")} == {1}  # max_attempts=1: the runner retries


@pytest.mark.parametrize("seed_value", range(5))
def test_real_uniform_pauses_stay_within_their_bounds(seed_value):
    import random

    rng = random.Random(seed_value)
    pauses = []
    with pytest.raises(CommandJournalError):
        run_transaction(
            FakeFirestore(abort_commits=50),
            creating_body([]),
            sleep=pauses.append,
            uniform=rng.uniform,
            wall=lambda: rng.uniform(0, 1e9),
        )
    assert len(pauses) == 9
    assert all(0.0 <= pause <= LONGEST_PAUSE for pause in pauses)


class ScriptedLook:
    """A look that needs a write until its `decide_at`-th call, then answers "decided"."""

    def __init__(self, decide_at: int | None) -> None:
        self.decide_at, self.calls = decide_at, 0

    def __call__(self, transaction):
        self.calls += 1
        if self.decide_at is not None and self.calls >= self.decide_at:
            return "decided"
        from reference.journal.runner import NEEDS_WRITE

        return NEEDS_WRITE


def test_a_pause_is_watched_in_slices_with_a_look_at_its_start_and_after_each_slice():
    db, recorder, log = FakeFirestore(abort_commits=1), Recorder(fraction=0.4, wall=101.0), AttemptLog()  # pause 1.2 s
    look = ScriptedLook(decide_at=None)
    assert (
        run_transaction(
            db,
            creating_body([]),
            look=look,
            sleep=recorder.sleep,
            uniform=recorder.uniform,
            wall=recorder.wall,
            log=log,
        )
        == "done"
    )
    assert recorder.pauses == pytest.approx([0.5, 0.5, 0.2])
    assert look.calls == log.looks == 4  # at once, then after each slice; the last look ends the pause
    assert (log.attempts, log.aborts) == (2, 1)


def test_a_look_that_decides_mid_pause_answers_at_once_without_another_read_write_attempt():
    db, recorder, log = FakeFirestore(abort_commits=1), Recorder(fraction=1.0, wall=100.5), AttemptLog()  # pause 2 s
    look = ScriptedLook(decide_at=3)
    assert (
        run_transaction(
            db,
            creating_body([]),
            look=look,
            sleep=recorder.sleep,
            uniform=recorder.uniform,
            wall=recorder.wall,
            log=log,
        )
        == "decided"
    )
    assert recorder.pauses == [0.5, 0.5]  # the third look decided: the rest of the pause is skipped
    assert (log.attempts, log.aborts, log.looks) == (1, 1, 3)
    assert db.dump() == {}


def test_a_zero_pause_still_looks_once_before_the_retry():
    db, recorder, log = FakeFirestore(abort_commits=1), Recorder(fraction=0.0, wall=102.0), AttemptLog()
    assert (
        run_transaction(
            db,
            creating_body([]),
            look=ScriptedLook(None),
            sleep=recorder.sleep,
            uniform=recorder.uniform,
            wall=recorder.wall,
            log=log,
        )
        == "done"
    )
    assert (recorder.pauses, log.looks, log.attempts) == ([], 1, 2)


def test_a_look_that_meets_a_firestore_failure_is_journal_unavailable_at_once():
    def failing_look(transaction):
        raise api_exceptions.ServiceUnavailable("transport down")

    db, recorder, log = FakeFirestore(abort_commits=1), Recorder(fraction=1.0), AttemptLog()
    with pytest.raises(CommandJournalError) as caught:
        run_transaction(
            db,
            creating_body([]),
            look=failing_look,
            sleep=recorder.sleep,
            uniform=recorder.uniform,
            wall=recorder.wall,
            log=log,
        )
    assert caught.value.code == "journal_unavailable" and caught.value.__cause__ is None
    assert (log.attempts, log.aborts, log.looks, recorder.pauses) == (1, 1, 1, [])  # no waiting out the pause
    assert db.dump() == {}


FIRESTORE_FAILURES = [
    pytest.param(api_exceptions.ServiceUnavailable, id="unavailable"),
    pytest.param(api_exceptions.DeadlineExceeded, id="deadline-exceeded"),
    pytest.param(api_exceptions.InternalServerError, id="internal"),
    pytest.param(api_exceptions.PermissionDenied, id="permission-denied"),
    pytest.param(api_exceptions.Unauthenticated, id="unauthenticated"),
    pytest.param(api_exceptions.ResourceExhausted, id="resource-exhausted"),
    pytest.param(api_exceptions.AlreadyExists, id="already-exists"),
    pytest.param(api_exceptions.FailedPrecondition, id="failed-precondition"),
]


@pytest.mark.parametrize("where", ["commit", "reads"])
@pytest.mark.parametrize("error", FIRESTORE_FAILURES)
def test_a_non_aborted_firestore_error_is_unavailable_at_once(where, error):
    db = FakeFirestore(**{f"fail_{where}_with": error("detail checkoutRequests/secret-path")})
    runs, recorder = [], Recorder()
    with pytest.raises(CommandJournalError) as caught:
        run_transaction(db, creating_body(runs), sleep=recorder.sleep, uniform=recorder.uniform, wall=recorder.wall)
    assert caught.value.code == "journal_unavailable"
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert (begins(db), recorder.pauses) == (1, [])
    assert db.dump() == {}


def test_a_transport_error_is_unavailable():
    """SPEC.md: journal_unavailable is "any Firestore/transport error"."""
    db = FakeFirestore(fail_commit_with=google.auth.exceptions.TransportError("connection reset to 10.0.0.1"))
    recorder = Recorder()
    with pytest.raises(CommandJournalError) as caught:
        run_transaction(db, creating_body([]), sleep=recorder.sleep, uniform=recorder.uniform, wall=recorder.wall)
    assert caught.value.code == "journal_unavailable"
    assert caught.value.__context__ is None


def test_a_journal_error_from_the_callback_is_the_answer_and_is_not_retried():
    db, recorder = FakeFirestore(), Recorder()
    raised = CommandJournalError("lease_rejected")

    def body(transaction):
        list(transaction.get_all([transaction._client.document("things/one")]))
        raise raised

    with pytest.raises(CommandJournalError) as caught:
        run_transaction(db, body, sleep=recorder.sleep, uniform=recorder.uniform, wall=recorder.wall)
    assert caught.value is raised
    assert (begins(db), commits(db), len(db.calls_named("rollback")), recorder.pauses) == (1, 0, 1, [])


def test_a_programming_error_in_the_callback_is_neither_retried_nor_disguised():
    db, recorder = FakeFirestore(), Recorder()

    def body(transaction):
        raise KeyError("bug")

    with pytest.raises(KeyError):
        run_transaction(db, body, sleep=recorder.sleep, uniform=recorder.uniform, wall=recorder.wall)
    assert (begins(db), recorder.pauses) == (1, [])


# -- through the API ----------------------------------------------------------------------------------------------
def _states():
    """(operation, stored state, call kwargs) for one mutation of each kind."""
    return [
        pytest.param("register", lambda: FakeFirestore(), T0, {}, id="register"),
        pytest.param("acquire", lambda: seed(FakeFirestore(), registered_docs()), T1, {}, id="first-acquire"),
        pytest.param("acquire", lambda: seed(FakeFirestore(), lifecycle_docs()), T2, {"lease": LEASE_B}, id="takeover"),
        pytest.param("complete", lambda: seed(FakeFirestore(), lifecycle_docs()), TC, {}, id="complete"),
        pytest.param("fail", lambda: seed(FakeFirestore(), lifecycle_docs()), TC, {}, id="fail"),
    ]


@pytest.mark.parametrize(("operation", "make_db", "at", "kwargs"), _states())
def test_every_attempt_reuses_the_single_clock_reading(operation, make_db, at, kwargs, monkeypatch):
    pauses = patch_backoff(monkeypatch)
    db = make_db()
    db.abort_commits = 3
    clock, log = Clock(at), AttemptLog()
    call(operation, db, at, clock=clock, attempt_log=log, **kwargs)
    assert clock.calls == 1
    assert (log.attempts, log.aborts) == (4, 3)
    assert all(0 < pause <= LOOK_INTERVAL_SECONDS for pause in pauses) and sum(pauses) <= 3 * LONGEST_PAUSE
    by_attempt = defaultdict(list)
    for transaction, kind, path, data in db.buffered_writes:
        by_attempt[transaction].append((kind, path, data))
    attempts = list(by_attempt.values())
    assert len(attempts) == 4 and all(attempt == attempts[0] for attempt in attempts)  # same prepared values
    written = [data for _, _, data in attempts[0]]
    times = {
        value for data in written for name, value in data.items() if name in ("createdAt", "updatedAt", "occurredAt")
    }
    assert at in times and all(moment <= at for moment in times)
    assert {data.get("occurredAt", data.get("updatedAt")) for data in written} == {at}


@pytest.mark.parametrize("operation", ["register", "acquire", "complete", "fail"])
def test_each_operation_reads_its_clock_exactly_once_and_before_any_firestore_call(operation):
    db = seed(FakeFirestore(), lifecycle_docs()) if operation != "register" else FakeFirestore()
    seen = []

    def clock():
        seen.append(len(db.calls))
        return TC

    call(operation, db, TC, clock=clock)
    assert seen == [0]


def test_lost_commit_response_then_whole_call_retry_observes_instead_of_applying_twice():
    db = seed(FakeFirestore(), registered_docs())
    db.fail_commit_with, db.apply_before_failing = api_exceptions.ServiceUnavailable, True
    assert answer("acquire", db, T1) == "journal_unavailable"
    assert db.get(CMD.lifecycle_path) is not None  # it did apply
    db.fail_commit_with = None
    with_retry = acquire(db, T1 + timedelta(seconds=2))
    assert (with_retry.fence_epoch, with_retry.lease_expires_at.seconds) == (1, int((T1 + LEASE).timestamp()))
    assert db.update_count(CMD.lifecycle_path) == 1 and db.get(CMD.audit_path(3)) is None


def test_lost_completion_response_then_retry_is_the_terminal_observation():
    db = seed(FakeFirestore(), lifecycle_docs())
    db.fail_commit_with, db.apply_before_failing = api_exceptions.DeadlineExceeded, True
    assert answer("complete", db, TC) == "journal_unavailable"
    db.fail_commit_with = None
    assert complete(db, TC + timedelta(seconds=1)).outcome == "terminal_succeeded"
    assert db.update_count(CMD.lifecycle_path) == 1 and db.get(CMD.audit_path(4)) is None


def test_a_decision_error_through_the_api_is_not_retried(monkeypatch):
    pauses = patch_backoff(monkeypatch)
    db, log = FakeFirestore(), AttemptLog()
    assert answer("acquire", db, T1, attempt_log=log) == "command_not_registered"
    assert (log.attempts, begins(db), commits(db), pauses) == (1, 1, 0, [])


def test_api_exhaustion_is_journal_unavailable_with_one_clock_reading(monkeypatch):
    pauses = patch_backoff(monkeypatch)
    db, clock, log = FakeFirestore(abort_commits=100), Clock(T0), AttemptLog()
    assert answer("register", db, T0, clock=clock, attempt_log=log) == "journal_unavailable"
    # 10 read-write attempts; during each of the 9 pauses lock-free looks (which all still needed a write)
    assert (clock.calls, log.attempts, log.aborts) == (1, 10, 10)
    assert begins(db) == 10 + log.looks and log.looks >= 9 + len(pauses)
    assert db.dump() == {}


def test_a_contending_writer_between_read_and_commit_makes_the_retry_see_its_lease(monkeypatch):
    patch_backoff(monkeypatch)
    db = seed(FakeFirestore(), registered_docs())
    db.before_commit = lambda fake: acquire(fake, T1, lease=LEASE_B)  # B commits while A is about to
    log = AttemptLog()
    assert answer("acquire", db, T1, attempt_log=log) == "lease_busy"
    # the lock-free look after the abort already sees B's lease: no second read-write attempt
    assert (log.attempts, log.aborts, log.looks) == (1, 1, 1)
    assert db.get(CMD.lifecycle_path)["leaseOwnerFingerprint"] == CMD.owner(LEASE_B)
    assert db.update_count(CMD.audit_path(2)) == 1


def test_a_takeover_racing_a_completion_leaves_exactly_one_transition(monkeypatch):
    patch_backoff(monkeypatch)
    db = seed(FakeFirestore(), lifecycle_docs())
    expiry = T1 + LEASE
    db.before_commit = lambda fake: acquire(fake, expiry, lease=LEASE_B)  # B takes over as A completes
    # A's retry reads B's lease, updated at `expiry`: A's reading is earlier, so it may not decide.
    assert answer("complete", db, expiry - timedelta(microseconds=1)) == "journal_unavailable"
    assert db.get(CMD.lifecycle_path)["state"] == "leased" and db.get(CMD.lifecycle_path)["fenceEpoch"] == 2
    assert db.get(CMD.audit_path(3))["eventType"] == "command_lease_taken_over" and db.get(CMD.audit_path(4)) is None
    assert answer("complete", db, expiry) == "lease_rejected"  # a later retry: the stale holder is rejected


# -- the clock --------------------------------------------------------------------------------------------------
def _raising_clock():
    raise RuntimeError("clock failure mentioning uid-alice")


BAD_CLOCKS = [
    pytest.param(lambda: datetime(2030, 1, 1, 12), id="naive"),
    pytest.param(lambda: datetime(2030, 1, 1, 12, tzinfo=timezone(timedelta(hours=1))), id="non-utc-offset"),
    pytest.param(_raising_clock, id="raises"),
    pytest.param(lambda: T0.timestamp(), id="float"),
    pytest.param(lambda: T0.isoformat(), id="string"),
    pytest.param(lambda: date(2030, 1, 1), id="date"),
    pytest.param(lambda: None, id="none"),
]


@pytest.mark.parametrize("operation", ["register", "acquire", "complete", "fail"])
@pytest.mark.parametrize("clock", BAD_CLOCKS)
def test_an_untrustworthy_clock_is_journal_unavailable_before_any_firestore_call(operation, clock):
    db = seed(FakeFirestore(), lifecycle_docs()) if operation != "register" else FakeFirestore()
    counted = itertools.count()

    def counting_clock():
        next(counted)
        return clock()

    with pytest.raises(CommandJournalError) as caught:
        call(operation, db, T0, clock=counting_clock)
    assert caught.value.code == "journal_unavailable"
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert next(counted) == 1  # read exactly once
    assert db.calls == []


def test_an_aware_utc_clock_with_another_utc_tzinfo_is_accepted():
    db = FakeFirestore()
    at = datetime(2030, 1, 1, 12, tzinfo=timezone(timedelta(0), "Z"))
    assert register(db, at, clock=lambda: at).outcome == "registered_new"
    assert db.get(CMD.root_path)["createdAt"] == datetime(2030, 1, 1, 12, tzinfo=UTC)


# -- the fake keeps Firestore's transaction rules (so the tests above mean what they say) ------------------------------
def test_fake_create_of_an_existing_document_fails_the_whole_commit():
    db = FakeFirestore()
    db.seed("things/two", {"n": 2})

    def body(transaction):
        list(transaction.get_all([db.document("things/one"), db.document("things/two")]))
        transaction.create(db.document("things/one"), {"n": 1})
        transaction.create(db.document("things/two"), {"n": 3})

    with pytest.raises(CommandJournalError):
        run_transaction(db, body, sleep=Recorder().sleep, uniform=Recorder().uniform)
    assert db.dump() == {"things/two": {"n": 2}} and db.update_counts() == {}


def test_fake_refuses_a_read_after_a_write_and_deletes():
    db = FakeFirestore()

    def read_after_write(transaction):
        transaction.set(db.document("things/one"), {"n": 1})
        list(transaction.get_all([db.document("things/one")]))

    def delete(transaction):
        transaction.delete(db.document("things/one"))

    for body in (read_after_write, delete):
        with pytest.raises(FakeFirestoreMisuse):
            run_transaction(db, body, sleep=Recorder().sleep, uniform=Recorder().uniform)
    assert db.dump() == {}


def test_fake_snapshots_are_deep_copies():
    db = FakeFirestore()
    db.seed("things/one", {"list": [1], "at": T0})

    def body(transaction):
        (snapshot,) = transaction.get_all([db.document("things/one")])
        data = snapshot.to_dict()
        data["list"].append(2)
        return data["at"]

    assert run_transaction(db, body, sleep=Recorder().sleep, uniform=Recorder().uniform) == T0
    assert db.get("things/one") == {"list": [1], "at": T0}
