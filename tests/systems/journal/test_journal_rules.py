"""Every row of the two operation tables in docs/journal-decisions.md, on the fake Firestore with explicit
clocks: exact documents for each mutation, and "no write" (documents byte-identical, no buffered write, no
update) for each read-only answer and each rejection."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reference import CommandJournalError
from tests.fakes import FakeFirestore
from tests.systems.journal.builders import (
    CMD,
    LEASE,
    LEASE_A,
    LEASE_B,
    REF_A,
    REF_B,
    T0,
    T1,
    US,
    acquire,
    answer,
    complete,
    fail,
    lifecycle_doc,
    lifecycle_docs,
    no_writes,
    register,
    registration_audit_doc,
    root_doc,
    seed,
    transition_audit_doc,
    typed,
)

EXP1 = T1 + LEASE  # expiry of the first lease
TC = T1 + timedelta(seconds=30)  # a terminal transition inside the first lease
T2 = EXP1 + timedelta(seconds=5)  # a takeover after the first lease expired
SECOND = timedelta(seconds=1)


def stamp(moment):
    return {"seconds": int(moment.timestamp()), "nanoseconds": moment.microsecond * 1000}


def lease_json(fence, expiry):
    return {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "lease_acquired",
        "state": "leased",
        "fenceEpoch": fence,
        "leaseExpiresAt": stamp(expiry),
    }


def observation_json(outcome, state):
    return {"journalSchemaVersion": 1, "lifecycleSchemaVersion": 1, "outcome": outcome, "state": state}


BUSY = observation_json("lease_busy", "leased")
SUCCEEDED = observation_json("terminal_succeeded", "succeeded")
FAILED = observation_json("terminal_failed_final", "failed_final")


def registered():
    db = FakeFirestore()
    register(db, T0)
    return db


def leased():
    db = registered()
    acquire(db, T1)
    return db


def terminal(state):
    db = leased()
    (complete if state == "succeeded" else fail)(db, TC)
    return db


def error_code(function, *args, **kwargs):
    with pytest.raises(CommandJournalError) as caught:
        function(*args, **kwargs)
    return caught.value.code


# -- registration ------------------------------------------------------------------------------------------------------
def test_registration_creates_the_exact_pair():
    db = FakeFirestore()
    at = T0 + timedelta(microseconds=654321)
    output = register(db, at)
    assert list(output.to_json().items()) == [
        ("journalSchemaVersion", 1),
        ("outcome", "registered_new"),
        ("state", "registered"),
    ]
    assert set(db.dump()) == {CMD.root_path, CMD.audit_path(1)}
    assert typed(db.get(CMD.root_path)) == typed(root_doc(CMD, at))
    assert typed(db.get(CMD.audit_path(1))) == typed(registration_audit_doc(CMD, at))


@pytest.mark.parametrize(
    "make_db",
    [registered, leased, lambda: terminal("succeeded"), lambda: terminal("failed_final")],
    ids=["registered", "leased", "succeeded", "failed_final"],
)
@pytest.mark.parametrize("at", [T0 - SECOND, T0, T2 + LEASE], ids=["earlier-clock", "same-clock", "later-clock"])
def test_exact_registration_retry_is_registered_existing_and_byte_preserving(make_db, at):
    db = make_db()
    with no_writes(db):
        assert register(db, at).to_json() == {
            "journalSchemaVersion": 1,
            "outcome": "registered_existing",
            "state": "registered",
        }


# -- acquire -----------------------------------------------------------------------------------------------------------
FIRST_LIFECYCLE = lifecycle_doc(CMD, acquired=T1)
FIRST_AUDIT = transition_audit_doc(
    CMD, revision=2, from_state="registered", to_state="leased", fence=1, expires=EXP1, occurred=T1
)


def test_first_acquisition_answer_and_document_set():
    db = registered()
    root, audit = db.get(CMD.root_path), db.get(CMD.audit_path(1))
    assert acquire(db, T1).to_json() == lease_json(1, EXP1)
    assert set(db.dump()) == {CMD.root_path, CMD.audit_path(1), CMD.lifecycle_path, CMD.audit_path(2)}
    assert (db.get(CMD.root_path), db.get(CMD.audit_path(1))) == (root, audit)
    assert (db.update_count(CMD.root_path), db.update_count(CMD.audit_path(1))) == (1, 1)
    assert (db.update_count(CMD.lifecycle_path), db.update_count(CMD.audit_path(2))) == (1, 1)


@pytest.mark.parametrize("field", list(FIRST_LIFECYCLE))
def test_first_acquisition_lifecycle_field(field):
    stored = leased().get(CMD.lifecycle_path)
    assert set(stored) == set(FIRST_LIFECYCLE)
    assert typed(stored)[field] == typed(FIRST_LIFECYCLE)[field]


@pytest.mark.parametrize("field", list(FIRST_AUDIT))
def test_first_acquisition_audit_field(field):
    stored = leased().get(CMD.audit_path(2))
    assert set(stored) == set(FIRST_AUDIT)
    assert typed(stored)[field] == typed(FIRST_AUDIT)[field]


def test_first_acquisition_keeps_microseconds_and_reports_them_as_nanoseconds():
    db = registered()
    at = T1 + timedelta(microseconds=123456)
    assert acquire(db, at).to_json()["leaseExpiresAt"] == {
        "seconds": int((at + LEASE).timestamp()),
        "nanoseconds": 123456000,
    }
    assert db.get(CMD.lifecycle_path)["leaseExpiresAt"] == at + LEASE


@pytest.mark.parametrize("at", [T1, TC, EXP1 - US], ids=["same-instant", "mid-lease", "last-microsecond"])
def test_same_holder_lost_response_recovery_returns_the_stored_lease_without_writing(at):
    db = leased()
    with no_writes(db):
        assert acquire(db, at).to_json() == lease_json(1, EXP1)


@pytest.mark.parametrize("at", [T1, TC, EXP1 - US], ids=["same-instant", "mid-lease", "last-microsecond"])
def test_another_holder_is_busy_and_learns_no_fence_or_expiry(at):
    db = leased()
    with no_writes(db):
        output = acquire(db, at, lease=LEASE_B)
    assert output.to_json() == BUSY
    assert list(output.to_json()) == ["journalSchemaVersion", "lifecycleSchemaVersion", "outcome", "state"]
    assert not hasattr(output, "fence_epoch") and not hasattr(output, "lease_expires_at")


@pytest.mark.parametrize("lease", [LEASE_B, LEASE_A], ids=["different-holder", "same-holder"])
@pytest.mark.parametrize("at", [EXP1, T2], ids=["exactly-at-expiry", "after-expiry"])
def test_expired_takeover_writes_fence_2_revision_3(lease, at):
    db = leased()
    assert acquire(db, at, lease=lease).to_json() == lease_json(2, at + LEASE)
    assert typed(db.get(CMD.lifecycle_path)) == typed(lifecycle_doc(CMD, fence=2, lease=lease, acquired=at, created=T1))
    assert typed(db.get(CMD.audit_path(3))) == typed(
        transition_audit_doc(
            CMD, revision=3, from_state="leased", to_state="leased", fence=2, expires=at + LEASE, occurred=at
        )
    )
    assert db.get(CMD.audit_path(2)) == FIRST_AUDIT  # earlier audits are never rewritten
    assert db.update_count(CMD.audit_path(2)) == 1
    assert db.update_count(CMD.lifecycle_path) == 2


def test_second_takeover_increments_fence_and_revision_once_more_and_preserves_created_at():
    db = leased()
    acquire(db, T2, lease=LEASE_B)
    t3 = T2 + LEASE
    assert acquire(db, t3, lease=LEASE_A).to_json() == lease_json(3, t3 + LEASE)
    assert typed(db.get(CMD.lifecycle_path)) == typed(lifecycle_doc(CMD, fence=3, acquired=t3, created=T1))
    assert db.get(CMD.audit_path(4))["eventType"] == "command_lease_taken_over"
    assert sorted(path for path in db.dump() if path.startswith("auditEvents/")) == [
        CMD.audit_path(revision) for revision in (1, 2, 3, 4)
    ]


@pytest.mark.parametrize(
    ("offset", "lease", "expected"),
    [
        pytest.param(-US, LEASE_B, BUSY, id="other-holder-one-microsecond-before-is-busy"),
        pytest.param(timedelta(0), LEASE_B, lease_json(2, EXP1 + LEASE), id="other-holder-at-expiry-takes-over"),
        pytest.param(-US, LEASE_A, lease_json(1, EXP1), id="same-holder-one-microsecond-before-recovers"),
        pytest.param(timedelta(0), LEASE_A, lease_json(2, EXP1 + LEASE), id="same-holder-at-expiry-takes-over"),
    ],
)
def test_exact_expiry_equality_for_acquire(offset, lease, expected):
    db = leased()
    assert acquire(db, EXP1 + offset, lease=lease).to_json() == expected


@pytest.mark.parametrize("finish", ["complete", "fail"])
@pytest.mark.parametrize(
    ("offset", "expected"),
    [pytest.param(-US, "terminal", id="one-microsecond-before"), pytest.param(timedelta(0), "lease_rejected", id="at")],
)
def test_exact_expiry_equality_for_finishing(finish, offset, expected):
    db = leased()
    want = (
        {"complete": "terminal_succeeded", "fail": "terminal_failed_final"}[finish]
        if expected == "terminal"
        else expected
    )
    assert answer(finish, db, EXP1 + offset) == want


@pytest.mark.parametrize("state", ["succeeded", "failed_final"])
@pytest.mark.parametrize("lease", [LEASE_A, LEASE_B], ids=["holder", "other"])
@pytest.mark.parametrize("at", [TC, EXP1, T2 + LEASE], ids=["active", "at-expiry", "long-after"])
def test_acquire_on_a_terminal_command_observes_it_without_writing(state, lease, at):
    db = terminal(state)
    with no_writes(db):
        assert acquire(db, at, lease=lease).to_json() == (SUCCEEDED if state == "succeeded" else FAILED)


# -- complete / fail ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("state", ["succeeded", "failed_final"])
def test_terminal_transition_writes_the_exact_lifecycle_and_audit(state):
    db = leased()
    output = (complete if state == "succeeded" else fail)(db, TC)
    assert output.to_json() == (SUCCEEDED if state == "succeeded" else FAILED)
    assert typed(db.get(CMD.lifecycle_path)) == typed(lifecycle_doc(CMD, state=state, acquired=T1, updated=TC))
    assert typed(db.get(CMD.audit_path(3))) == typed(
        transition_audit_doc(CMD, revision=3, from_state="leased", to_state=state, fence=1, expires=EXP1, occurred=TC)
    )
    assert db.get(CMD.lifecycle_path)["terminalCommitmentHash"] == (
        CMD.commitment(REF_A) if state == "succeeded" else None
    )


def test_completion_after_a_takeover_uses_the_new_fence():
    db = leased()
    acquire(db, T2, lease=LEASE_B)
    assert answer("complete", db, T2, lease=LEASE_B, fence=2, ref=REF_B) == "terminal_succeeded"
    stored = db.get(CMD.lifecycle_path)
    assert (stored["commandRevision"], stored["fenceEpoch"], stored["terminalCommitmentHash"]) == (
        4,
        2,
        CMD.commitment(REF_B),
    )
    assert db.get(CMD.audit_path(4))["eventType"] == "command_succeeded"


# Holder/fence/expiry matrix against a lease at fence 2 (held by A, acquired at T2).
MATRIX_ACQUIRED = T2
MATRIX_TIMES = {
    "active": MATRIX_ACQUIRED + SECOND,
    "at-expiry": MATRIX_ACQUIRED + LEASE,
    "after-expiry": MATRIX_ACQUIRED + LEASE + SECOND,
}


def matrix_db():
    return seed(FakeFirestore(), lifecycle_docs(fence=2, acquired=MATRIX_ACQUIRED, created=T1))


@pytest.mark.parametrize("finish", ["complete", "fail"])
@pytest.mark.parametrize("lease", [LEASE_A, LEASE_B], ids=["holder", "other-holder"])
@pytest.mark.parametrize("fence", [2, 1, 3], ids=["current-fence", "stale-fence", "future-fence"])
@pytest.mark.parametrize("when", list(MATRIX_TIMES))
def test_holder_fence_expiry_matrix(finish, lease, fence, when):
    db = matrix_db()
    exact = lease == LEASE_A and fence == 2 and when == "active"
    if exact:
        assert answer(finish, db, MATRIX_TIMES[when], lease=lease, fence=fence) == (
            "terminal_succeeded" if finish == "complete" else "terminal_failed_final"
        )
        assert db.get(CMD.audit_path(4)) is not None
        return
    with no_writes(db):
        assert answer(finish, db, MATRIX_TIMES[when], lease=lease, fence=fence) == "lease_rejected"


@pytest.mark.parametrize("finish", ["complete", "fail"])
def test_finishing_without_a_lease_is_rejected(finish):
    db = registered()
    with no_writes(db):
        assert answer(finish, db, T1) == "lease_rejected"


@pytest.mark.parametrize("state", ["succeeded", "failed_final"])
@pytest.mark.parametrize(
    "at", [TC, EXP1 - US, EXP1, T2 + LEASE], ids=["same-time", "active", "at-expiry", "long-after"]
)
def test_exact_terminal_retry_observes_without_writing(state, at):
    db = terminal(state)
    finish = "complete" if state == "succeeded" else "fail"
    with no_writes(db):
        assert answer(finish, db, at) == ("terminal_succeeded" if state == "succeeded" else "terminal_failed_final")


TERMINAL_CONFLICTS = [
    pytest.param("succeeded", "complete", {"ref": REF_B}, id="succeeded-different-commitment"),
    pytest.param("succeeded", "fail", {}, id="succeeded-then-fail"),
    pytest.param("succeeded", "complete", {"lease": LEASE_B}, id="succeeded-other-holder"),
    pytest.param("succeeded", "complete", {"fence": 2}, id="succeeded-other-fence"),
    pytest.param("succeeded", "fail", {"lease": LEASE_B}, id="succeeded-fail-other-holder"),
    pytest.param("failed_final", "complete", {}, id="failed-then-complete"),
    pytest.param("failed_final", "fail", {"lease": LEASE_B}, id="failed-other-holder"),
    pytest.param("failed_final", "fail", {"fence": 2}, id="failed-other-fence"),
    pytest.param("failed_final", "complete", {"ref": REF_B, "lease": LEASE_B}, id="failed-complete-other-holder"),
]


@pytest.mark.parametrize(("state", "finish", "changes"), TERMINAL_CONFLICTS)
@pytest.mark.parametrize("at", [TC, EXP1 - US, T2 + LEASE], ids=["same-time", "active", "after-expiry"])
def test_terminal_conflict_without_writing(state, finish, changes, at):
    db = terminal(state)
    with no_writes(db):
        assert answer(finish, db, at, **changes) == "terminal_conflict"


# -- identity ----------------------------------------------------------------------------------------------------------
CONFLICTS = [
    pytest.param({"command_type": "refund_order"}, id="command-type"),
    pytest.param({"endpoint_schema_version": 2}, id="endpoint-schema-version"),
    pytest.param({"payload": {"raceId": "spring-10k", "quantity": 3, "tier": "adult"}}, id="payload"),
]


@pytest.mark.parametrize("changes", CONFLICTS)
@pytest.mark.parametrize("operation", ["register", "acquire", "complete", "fail"])
@pytest.mark.parametrize(
    "make_db",
    [registered, leased, lambda: terminal("succeeded"), lambda: terminal("failed_final")],
    ids=["registered", "leased", "succeeded", "failed_final"],
)
def test_command_conflict_without_writing(changes, operation, make_db):
    db = make_db()
    command = CMD.but(**changes)
    assert command.key_hash == CMD.key_hash  # same document, different semantics
    with no_writes(db):
        assert answer(operation, db, TC, command) == "command_conflict"


@pytest.mark.parametrize("operation", ["acquire", "complete", "fail"])
def test_command_not_registered(operation):
    db = FakeFirestore()
    other = CMD.but(command_id="16fd2706-8baf-433b-82eb-8c7fada847da")
    register(db, T0, other)
    with no_writes(db):
        assert answer(operation, db, T1) == "command_not_registered"
    assert set(db.dump()) == {other.root_path, other.audit_path(1)}


# -- earlier clock readings --------------------------------------------------------------------------------------------
def test_first_acquire_earlier_than_registration_is_unavailable():
    db = registered()
    with no_writes(db):
        assert error_code(acquire, db, T0 - US) == "journal_unavailable"
    assert acquire(db, T0).to_json() == lease_json(1, T0 + LEASE)  # equality is not earlier


@pytest.mark.parametrize("finish", ["complete", "fail"])
def test_finishing_without_lifecycle_earlier_than_registration_is_unavailable(finish):
    db = registered()
    with no_writes(db):
        assert answer(finish, db, T0 - US) == "journal_unavailable"
        assert answer(finish, db, T0) == "lease_rejected"


@pytest.mark.parametrize("finish", ["complete", "fail"])
def test_finishing_a_lease_with_a_clock_earlier_than_its_update_is_unavailable(finish):
    db = leased()
    with no_writes(db):
        assert answer(finish, db, T1 - US) == "journal_unavailable"


@pytest.mark.parametrize("state", ["succeeded", "failed_final"])
def test_exact_terminal_retry_with_an_earlier_clock_observes(state):
    db = terminal(state)
    finish = "complete" if state == "succeeded" else "fail"
    with no_writes(db):
        assert answer(finish, db, TC - US) == (
            "terminal_succeeded" if state == "succeeded" else "terminal_failed_final"
        )
        assert answer(finish, db, T0 - SECOND) == (
            "terminal_succeeded" if state == "succeeded" else "terminal_failed_final"
        )


@pytest.mark.parametrize(
    ("state", "finish", "changes"),
    [
        pytest.param("succeeded", "complete", {"ref": REF_B}, id="different-commitment"),
        pytest.param("succeeded", "fail", {}, id="other-outcome"),
        pytest.param("failed_final", "fail", {"lease": LEASE_B}, id="other-holder"),
        pytest.param("failed_final", "complete", {}, id="failed-then-complete"),
    ],
)
def test_non_exact_finish_with_an_earlier_clock_is_unavailable_not_a_conflict(state, finish, changes):
    db = terminal(state)
    with no_writes(db):
        assert answer(finish, db, TC - US, **changes) == "journal_unavailable"


def test_acquire_earlier_than_a_takeover_recovers_or_is_busy():
    db = leased()
    acquire(db, T2, lease=LEASE_B)  # lifecycle updatedAt is now T2
    earlier = T2 - SECOND
    with no_writes(db):
        assert acquire(db, earlier, lease=LEASE_B).to_json() == lease_json(2, T2 + LEASE)
        assert acquire(db, earlier, lease=LEASE_A).to_json() == BUSY
        assert acquire(db, T1, lease=LEASE_A).to_json() == BUSY  # even inside the old holder's own lease


@pytest.mark.parametrize("state", ["succeeded", "failed_final"])
def test_acquire_earlier_than_a_terminal_update_observes_it(state):
    db = terminal(state)
    with no_writes(db):
        assert acquire(db, TC - SECOND, lease=LEASE_B).to_json() == (SUCCEEDED if state == "succeeded" else FAILED)
