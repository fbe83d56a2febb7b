"""Leases, fences and terminal commitments on the Firestore emulator (seed 000, "Existing hosted emulator
file" tests; SPEC.md; docs/journal-decisions.md).

Every test runs in its own emulator project with explicit clocks from T0 = 2026-01-01T00:00:00Z (lease
duration 60 s, ``now < leaseExpiresAt`` active, equality expired) and checks stored documents field by
field. Races use 8 threads released by one barrier (the 24-way runs live in another suite). Under
contention ``journal_unavailable`` is legal: a race accepts it only as the indefinite answer the caller
settles by retrying the whole call with the same ids, and the safety assertions (one winner, one audit,
no double apply) are made on the stored documents regardless.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pytest

from tests.systems.journal.support import (
    LEASE,
    LEASE_BUSY,
    MICROSECOND,
    REGISTERED_EXISTING,
    REGISTERED_NEW,
    TERMINAL_FAILED_FINAL,
    TERMINAL_SUCCEEDED,
    UNAVAILABLE,
    Command,
    CommitFailureClient,
    WriteRecordingClient,
    assert_document,
    assert_unchanged,
    at,
    error_code,
    lease_json,
    new_command,
    new_lease_id,
    outcome,
    race_and_settle,
    reference_fingerprint,
    snapshot_documents,
    write_documents,
)

pytestmark = pytest.mark.emulator

RACERS = 8
MAX_REVISION = 9_999_999_999
REGISTERED_AT, FIRST_LEASE_AT = at(0), at(1)
TERMINAL = {"succeeded": TERMINAL_SUCCEEDED, "failed_final": TERMINAL_FAILED_FINAL}


def _registered(db: Any, when: datetime = REGISTERED_AT) -> Command:
    command = new_command()
    assert outcome(partial(command.register, db, when)) == REGISTERED_NEW
    return command


def _leased(
    db: Any, lease_id: str, *, registered: datetime = REGISTERED_AT, acquired: datetime = FIRST_LEASE_AT
) -> Command:
    command = _registered(db, registered)
    assert outcome(partial(command.acquire, db, acquired, lease_id)) == lease_json(1, acquired + LEASE)
    return command


def _audit_revisions(db: Any, command: Command) -> list[int]:
    stored = snapshot_documents(db, command.key_hash)
    return sorted(int(path.rsplit("_", 1)[1]) for path in stored if path.startswith("auditEvents/"))


def _lifecycle(db: Any, command: Command) -> dict[str, Any]:
    return snapshot_documents(db, command.key_hash)[command.lifecycle_path][0]


def _assert_one_applied_commit(recorder: WriteRecordingClient, *paths: str) -> None:
    """No double apply: exactly one commit with writes reached the server and was applied, with exactly
    these documents (a lifecycle change and its audit together)."""
    assert [sorted(commit.paths) for commit in recorder.applied] == [sorted(paths)], recorder.commits


def _pair(snapshot: dict[str, Any], command: Command) -> dict[str, Any]:
    return {path: snapshot[path] for path in (command.root_path, command.audit_path(1))}


def _acquired_audit(command: Command, fence: int, revision: int, acquired: datetime, first: bool) -> dict[str, Any]:
    return command.expected_transition_audit(
        revision=revision,
        event_type="command_lease_acquired" if first else "command_lease_taken_over",
        from_state="registered" if first else "leased",
        to_state="leased",
        fence=fence,
        expires=acquired + LEASE,
        occurred=acquired,
    )


def _terminal_audit(
    command: Command, state: str, fence: int, revision: int, acquired: datetime, finished: datetime
) -> dict[str, Any]:
    return command.expected_transition_audit(
        revision=revision,
        event_type="command_succeeded" if state == "succeeded" else "command_failed_final",
        from_state="leased",
        to_state=state,
        fence=fence,
        expires=acquired + LEASE,
        occurred=finished,
    )


# --- races --------------------------------------------------------------------------------------------


def test_distinct_holder_first_acquire_race_has_one_fence_one_lease(firestore_db: Any) -> None:
    """8 distinct holders race the first acquire: exactly one fence-1 ``lease_acquired``, one revision-2
    audit, everyone else ``lease_busy``; the stored lifecycle belongs to the winner."""
    command = _registered(firestore_db)
    pair_before = _pair(snapshot_documents(firestore_db, command.key_hash), command)
    holders = [new_lease_id() for _ in range(RACERS)]
    clocks = [at(5, microseconds=i) for i in range(RACERS)]
    recorder = WriteRecordingClient(firestore_db)

    result = race_and_settle(
        [partial(command.acquire, recorder, when, lease) for lease, when in zip(holders, clocks, strict=True)]
    )

    lifecycle = _lifecycle(firestore_db, command)
    winners = [i for i, lease in enumerate(holders) if command.owner(lease) == lifecycle["leaseOwnerFingerprint"]]
    assert len(winners) == 1
    winner = winners[0]
    acquired = lifecycle["leaseAcquiredAt"]
    assert acquired == clocks[winner]
    for index, settled in enumerate(result.settled):
        assert settled == (lease_json(1, acquired + LEASE) if index == winner else LEASE_BUSY), (index, result.raw)
    # Raw answers: at most the winner acquired; a loser never saw anything but busy (or unavailable).
    assert [item for item in result.raw if item not in (LEASE_BUSY, UNAVAILABLE)] in (
        [lease_json(1, acquired + LEASE)],
        [],
    )
    assert result.raw[winner] in (lease_json(1, acquired + LEASE), UNAVAILABLE)

    stored = snapshot_documents(firestore_db, command.key_hash)
    assert set(stored) == {command.root_path, command.audit_path(1), command.lifecycle_path, command.audit_path(2)}
    assert_document(
        lifecycle,
        command.expected_lifecycle(
            state="leased", revision=2, fence=1, lease_id=holders[winner], acquired=acquired, created=acquired
        ),
    )
    assert_document(stored[command.audit_path(2)][0], _acquired_audit(command, 1, 2, acquired, first=True))
    assert_unchanged(pair_before, _pair(stored, command))
    _assert_one_applied_commit(recorder, command.lifecycle_path, command.audit_path(2))


def test_same_holder_lost_response_race_has_one_write_and_identical_answers(firestore_db: Any) -> None:
    """8 retries of one holder's first acquire (a lost response): every answer carries the same fence and
    expiry, the lifecycle is written exactly once and only the revision-2 audit exists."""
    command = _registered(firestore_db)
    holder = new_lease_id()
    clocks = [at(6, microseconds=i) for i in range(RACERS)]  # each retry reads its own clock
    recorder = WriteRecordingClient(firestore_db)

    result = race_and_settle([partial(command.acquire, recorder, when, holder) for when in clocks])

    lifecycle = _lifecycle(firestore_db, command)
    acquired = lifecycle["leaseAcquiredAt"]
    assert acquired in clocks
    expected = lease_json(1, acquired + LEASE)
    assert result.settled == [expected] * RACERS, result.raw
    assert all(item in (expected, UNAVAILABLE) for item in result.raw)
    snapshot = firestore_db.document(command.lifecycle_path).get()
    assert snapshot.create_time == snapshot.update_time, "the lifecycle was written more than once"
    assert_document(
        lifecycle,
        command.expected_lifecycle(
            state="leased", revision=2, fence=1, lease_id=holder, acquired=acquired, created=acquired
        ),
    )
    assert _audit_revisions(firestore_db, command) == [1, 2]
    audit = firestore_db.document(command.audit_path(2)).get()
    assert audit.create_time == audit.update_time
    assert_document(audit.to_dict(), _acquired_audit(command, 1, 2, acquired, first=True))
    _assert_one_applied_commit(recorder, command.lifecycle_path, command.audit_path(2))


def test_expired_multi_holder_takeover_race_advances_fence_once(firestore_db: Any) -> None:
    """After expiry, the old holder and new holders (some calling twice) race: exactly one takeover to
    fence 2 / revision 3, the winner's holder gets fence 2 (again on its second call), everyone else is
    busy; the old holder's fence-1 complete and fail are then ``lease_rejected`` without a write."""
    old = new_lease_id()
    command = _leased(firestore_db, old)
    fresh = [new_lease_id() for _ in range(5)]
    holders = [old, old, fresh[0], fresh[0], *fresh[1:]]
    assert len(holders) == RACERS
    clocks = [at(90, microseconds=i) for i in range(RACERS)]
    recorder = WriteRecordingClient(firestore_db)

    result = race_and_settle(
        [partial(command.acquire, recorder, when, lease) for lease, when in zip(holders, clocks, strict=True)]
    )

    lifecycle = _lifecycle(firestore_db, command)
    (winner,) = {lease for lease in holders if command.owner(lease) == lifecycle["leaseOwnerFingerprint"]}
    acquired = lifecycle["leaseAcquiredAt"]
    assert acquired in [when for lease, when in zip(holders, clocks, strict=True) if lease == winner]
    for lease, settled in zip(holders, result.settled, strict=True):
        assert settled == (lease_json(2, acquired + LEASE) if lease == winner else LEASE_BUSY), result.raw
    assert_document(
        lifecycle,
        command.expected_lifecycle(
            state="leased", revision=3, fence=2, lease_id=winner, acquired=acquired, created=at(1)
        ),
    )
    assert _audit_revisions(firestore_db, command) == [1, 2, 3]
    stored = snapshot_documents(firestore_db, command.key_hash)
    assert_document(stored[command.audit_path(2)][0], _acquired_audit(command, 1, 2, at(1), first=True))
    assert_document(stored[command.audit_path(3)][0], _acquired_audit(command, 2, 3, acquired, first=False))
    _assert_one_applied_commit(recorder, command.lifecycle_path, command.audit_path(3))

    # The old holder's fence 1 can never finish, inside the new lease or after it (whoever won).
    read_only = WriteRecordingClient(firestore_db)
    for when in (acquired, acquired + timedelta(seconds=5), acquired + LEASE + timedelta(seconds=5)):
        assert error_code(partial(command.complete, read_only, when, old, 1, reference_fingerprint("old"))) == (
            "lease_rejected"
        )
        assert error_code(partial(command.fail, read_only, when, old, 1)) == "lease_rejected"
    assert_unchanged(stored, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


def _assert_terminal_never_changes(
    db: Any, command: Command, holder: str, state: str, reference_fp: str, finished: datetime
) -> None:
    """Every later complete/fail/acquire, by anyone, at any later time, leaves every document untouched:
    the exact retry and acquires observe, everything else is ``terminal_conflict``. A clock reading
    earlier than the terminal update may only observe (exact retry) or answer ``journal_unavailable``."""
    before = snapshot_documents(db, command.key_hash)
    plain, db = db, WriteRecordingClient(db)
    other = new_lease_id()
    observation = TERMINAL[state]

    def exact(when: datetime) -> Any:
        if state == "succeeded":
            return partial(command.complete, db, when, holder, 1, reference_fp)
        return partial(command.fail, db, when, holder, 1)

    def conflicting(when: datetime) -> list[Any]:
        calls = [
            partial(command.complete, db, when, holder, 1, reference_fingerprint("another-record")),
            partial(command.complete, db, when, other, 1, reference_fp),
            partial(command.complete, db, when, holder, 2, reference_fp),
            partial(command.fail, db, when, other, 1),
            partial(command.fail, db, when, holder, 2),
        ]
        if state == "succeeded":
            calls.append(partial(command.fail, db, when, holder, 1))
        else:
            calls.append(partial(command.complete, db, when, holder, 1, reference_fp))
        return calls

    for when in (finished, finished + timedelta(seconds=10), at(61), at(500)):
        assert outcome(partial(command.acquire, db, when, holder)) == observation
        assert outcome(partial(command.acquire, db, when, other)) == observation
        assert outcome(exact(when)) == observation
        for call in conflicting(when):
            assert error_code(call) == "terminal_conflict"
        assert outcome(partial(command.register, db, when)) == REGISTERED_EXISTING
    earlier = finished - MICROSECOND
    assert outcome(exact(earlier)) == observation
    assert outcome(partial(command.acquire, db, earlier, other)) == observation
    for call in conflicting(earlier):
        assert error_code(call) == UNAVAILABLE
    assert_unchanged(before, snapshot_documents(plain, command.key_hash))
    db.assert_no_writes()


def test_complete_versus_fail_race_has_exactly_one_terminal_mutation(firestore_db: Any) -> None:
    """Half the holder's calls complete, half fail, at once: exactly one terminal mutation and one
    terminal event; the matching side observes it, the other side gets ``terminal_conflict``."""
    holder = new_lease_id()
    command = _leased(firestore_db, holder)
    reference_fp = reference_fingerprint("business-record")
    finished = at(10)  # one reading for all: an earlier reading than the stored updatedAt may not decide
    recorder = WriteRecordingClient(firestore_db)
    calls = [
        partial(command.complete, recorder, finished, holder, 1, reference_fp)
        if i % 2 == 0
        else partial(command.fail, recorder, finished, holder, 1)
        for i in range(RACERS)
    ]

    result = race_and_settle(calls)

    lifecycle = _lifecycle(firestore_db, command)
    state = lifecycle["state"]
    assert state in TERMINAL
    for index, settled in enumerate(result.settled):
        matches = (index % 2 == 0) == (state == "succeeded")
        assert settled == (TERMINAL[state] if matches else "terminal_conflict"), (index, result.raw)
    assert sum(1 for item in result.raw if item == TERMINAL[state]) >= 1 or result.unavailable
    assert_document(
        lifecycle,
        command.expected_lifecycle(
            state=state,
            revision=3,
            fence=1,
            lease_id=holder,
            acquired=at(1),
            created=at(1),
            updated=finished,
            reference_fp=reference_fp,
        ),
    )
    assert _audit_revisions(firestore_db, command) == [1, 2, 3]
    audit = firestore_db.document(command.audit_path(3)).get()
    assert audit.create_time == audit.update_time
    assert_document(audit.to_dict(), _terminal_audit(command, state, 1, 3, at(1), finished))
    _assert_one_applied_commit(recorder, command.lifecycle_path, command.audit_path(3))
    _assert_terminal_never_changes(firestore_db, command, holder, state, reference_fp, finished)


def test_distinct_commitment_race_has_exactly_one_terminal_commitment(firestore_db: Any) -> None:
    """8 completes with distinct terminal references: one commitment is stored (once, with one event);
    the others get ``terminal_conflict`` and the winner's exact retry observes ``terminal_succeeded``."""
    holder = new_lease_id()
    command = _leased(firestore_db, holder)
    references = [reference_fingerprint(f"record-{i}") for i in range(RACERS)]
    finished = at(20)
    recorder = WriteRecordingClient(firestore_db)

    result = race_and_settle([partial(command.complete, recorder, finished, holder, 1, ref) for ref in references])

    lifecycle = _lifecycle(firestore_db, command)
    assert lifecycle["state"] == "succeeded"
    stored_commitment = lifecycle["terminalCommitmentHash"]
    (winner,) = [i for i, ref in enumerate(references) if command.commitment(ref) == stored_commitment]
    for index, settled in enumerate(result.settled):
        assert settled == (TERMINAL_SUCCEEDED if index == winner else "terminal_conflict"), (index, result.raw)
    assert_document(
        lifecycle,
        command.expected_lifecycle(
            state="succeeded",
            revision=3,
            fence=1,
            lease_id=holder,
            acquired=at(1),
            created=at(1),
            updated=finished,
            reference_fp=references[winner],
        ),
    )
    assert _audit_revisions(firestore_db, command) == [1, 2, 3]
    assert_document(
        firestore_db.document(command.audit_path(3)).get().to_dict(),
        _terminal_audit(command, "succeeded", 1, 3, at(1), finished),
    )
    _assert_one_applied_commit(recorder, command.lifecycle_path, command.audit_path(3))
    _assert_terminal_never_changes(firestore_db, command, holder, "succeeded", references[winner], finished)


# --- read-only paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["succeeded", "failed_final"])
def test_root_pair_stays_identical_and_registration_answers_existing_in_every_state(
    firestore_db: Any, state: str
) -> None:
    """Registered -> leased -> terminal: the root and revision-1 audit stay byte- and update-time
    identical, registration answers ``registered_existing`` in each state, every stored document is the
    exact one the seed fixes, and exact terminal retries plus later acquires are read-only."""
    command = _registered(firestore_db, at(0))
    registered = snapshot_documents(firestore_db, command.key_hash)
    assert set(registered) == {command.root_path, command.audit_path(1)}
    assert_document(registered[command.root_path][0], command.expected_root(at(0)))
    assert_document(registered[command.audit_path(1)][0], command.expected_registration_audit(at(0)))
    holder = new_lease_id()
    reference_fp = reference_fingerprint("business-record")
    read_only = WriteRecordingClient(firestore_db)

    def check_pair_and_register(when: datetime) -> None:
        stored = snapshot_documents(firestore_db, command.key_hash)
        assert_unchanged(registered, _pair(stored, command))
        assert outcome(partial(command.register, read_only, when)) == REGISTERED_EXISTING
        assert_unchanged(stored, snapshot_documents(firestore_db, command.key_hash))
        read_only.assert_no_writes()

    check_pair_and_register(at(1))

    assert outcome(partial(command.acquire, firestore_db, at(2), holder)) == lease_json(1, at(62))
    leased = snapshot_documents(firestore_db, command.key_hash)
    assert_document(
        leased[command.lifecycle_path][0],
        command.expected_lifecycle(state="leased", revision=2, fence=1, lease_id=holder, acquired=at(2), created=at(2)),
    )
    assert_document(leased[command.audit_path(2)][0], _acquired_audit(command, 1, 2, at(2), first=True))
    check_pair_and_register(at(3))

    def finish(db: Any, when: datetime) -> Any:
        if state == "succeeded":
            return command.complete(db, when, holder, 1, reference_fp)
        return command.fail(db, when, holder, 1)

    assert outcome(partial(finish, firestore_db, at(30))) == TERMINAL[state]
    terminal = snapshot_documents(firestore_db, command.key_hash)
    assert set(terminal) == set(leased) | {command.audit_path(3)}
    assert_document(
        terminal[command.lifecycle_path][0],
        command.expected_lifecycle(
            state=state,
            revision=3,
            fence=1,
            lease_id=holder,
            acquired=at(2),
            created=at(2),
            updated=at(30),
            reference_fp=reference_fp,
        ),
    )
    assert_document(terminal[command.audit_path(3)][0], _terminal_audit(command, state, 1, 3, at(2), at(30)))
    assert terminal[command.audit_path(2)] == leased[command.audit_path(2)]
    check_pair_and_register(at(31))

    # Exact terminal retries (before and long after expiry, and with an earlier clock) and later
    # acquires by anyone are fixed observations without a write.
    for when in (at(30), at(31), at(62), at(10_000), at(29)):
        assert outcome(partial(finish, read_only, when)) == TERMINAL[state]
        assert outcome(partial(command.acquire, read_only, when, holder)) == TERMINAL[state]
        assert outcome(partial(command.acquire, read_only, when, new_lease_id())) == TERMINAL[state]
    assert_unchanged(terminal, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


def test_expiry_equality_on_the_emulator(firestore_db: Any) -> None:
    """One microsecond before leaseExpiresAt the lease is active (busy for others, the same fence for
    the holder, finishable); exactly at leaseExpiresAt it is expired (the holder cannot finish, anyone
    takes over with fence 2)."""
    first = new_lease_id()
    command = _leased(firestore_db, first, acquired=at(1))
    expiry = at(61)
    before = snapshot_documents(firestore_db, command.key_hash)
    read_only = WriteRecordingClient(firestore_db)

    assert outcome(partial(command.acquire, read_only, expiry - MICROSECOND, new_lease_id())) == LEASE_BUSY
    assert outcome(partial(command.acquire, read_only, expiry - MICROSECOND, first)) == lease_json(1, expiry)
    assert error_code(partial(command.complete, read_only, expiry, first, 1, reference_fingerprint("late"))) == (
        "lease_rejected"
    )
    assert error_code(partial(command.fail, read_only, expiry, first, 1)) == "lease_rejected"
    assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()

    second = new_lease_id()
    assert outcome(partial(command.acquire, firestore_db, expiry, second)) == lease_json(2, expiry + LEASE)
    stored = snapshot_documents(firestore_db, command.key_hash)
    assert_document(
        stored[command.lifecycle_path][0],
        command.expected_lifecycle(
            state="leased", revision=3, fence=2, lease_id=second, acquired=expiry, created=at(1)
        ),
    )
    assert_document(stored[command.audit_path(3)][0], _acquired_audit(command, 2, 3, expiry, first=False))

    # The new holder finishes one microsecond before its own expiry; the same holder re-acquiring after
    # expiry would have been a takeover, so the old fence is useless either way.
    last = expiry + LEASE - MICROSECOND
    assert outcome(partial(command.complete, firestore_db, last, second, 2, reference_fingerprint("r"))) == (
        TERMINAL_SUCCEEDED
    )
    assert_document(
        _lifecycle(firestore_db, command),
        command.expected_lifecycle(
            state="succeeded",
            revision=4,
            fence=2,
            lease_id=second,
            acquired=expiry,
            created=at(1),
            updated=last,
            reference_fp=reference_fingerprint("r"),
        ),
    )
    assert _audit_revisions(firestore_db, command) == [1, 2, 3, 4]


def test_same_holder_takeover_after_expiry_gets_a_new_fence(firestore_db: Any) -> None:
    """Reusing the same lease id at expiry is a takeover too: fence 2, revision 3, its fence 1 is stale."""
    holder = new_lease_id()
    command = _leased(firestore_db, holder)
    assert outcome(partial(command.acquire, firestore_db, at(61), holder)) == lease_json(2, at(121))
    assert error_code(partial(command.fail, firestore_db, at(62), holder, 1)) == "lease_rejected"
    assert outcome(partial(command.fail, firestore_db, at(62), holder, 2)) == TERMINAL_FAILED_FINAL
    assert _audit_revisions(firestore_db, command) == [1, 2, 3, 4]


def test_holder_fence_and_registration_rejections_write_nothing(firestore_db: Any) -> None:
    """No registration: ``command_not_registered``; registered without a lease, another holder, a stale
    or future fence: ``lease_rejected``; an earlier clock reading: ``journal_unavailable``; nothing stored."""
    read_only = WriteRecordingClient(firestore_db)
    unregistered = new_command()
    lease = new_lease_id()
    assert error_code(partial(unregistered.acquire, read_only, at(1), lease)) == "command_not_registered"
    assert error_code(partial(unregistered.complete, read_only, at(1), lease, 1, reference_fingerprint("x"))) == (
        "command_not_registered"
    )
    assert error_code(partial(unregistered.fail, read_only, at(1), lease, 1)) == "command_not_registered"
    assert snapshot_documents(firestore_db, unregistered.key_hash) == {}

    command = _registered(firestore_db, at(10))
    before = snapshot_documents(firestore_db, command.key_hash)
    assert error_code(partial(command.complete, read_only, at(11), lease, 1, reference_fingerprint("x"))) == (
        "lease_rejected"
    )
    assert error_code(partial(command.fail, read_only, at(11), lease, 1)) == "lease_rejected"
    assert error_code(partial(command.acquire, read_only, at(9), lease)) == UNAVAILABLE  # before registration
    assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))

    assert outcome(partial(command.acquire, firestore_db, at(12), lease)) == lease_json(1, at(72))
    leased = snapshot_documents(firestore_db, command.key_hash)
    for call in (
        partial(command.complete, read_only, at(13), new_lease_id(), 1, reference_fingerprint("x")),
        partial(command.complete, read_only, at(13), lease, 2, reference_fingerprint("x")),
        partial(command.fail, read_only, at(13), new_lease_id(), 1),
        partial(command.fail, read_only, at(13), lease, 3),
    ):
        assert error_code(call) == "lease_rejected"
    # A reading earlier than the lifecycle's updatedAt may observe but never decide.
    assert error_code(partial(command.complete, read_only, at(11), lease, 1, reference_fingerprint("x"))) == (
        UNAVAILABLE
    )
    assert outcome(partial(command.acquire, read_only, at(11), lease)) == lease_json(1, at(72))
    assert outcome(partial(command.acquire, read_only, at(11), new_lease_id())) == LEASE_BUSY
    assert_unchanged(leased, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


# --- preseeded next audit and commit failure --------------------------------------------------------------


def _reach(db: Any, stage: str) -> tuple[Command, str, int]:
    """A command in ``stage`` (holder, current revision R); the lease (if any) expires at at(61) or at(121)."""
    holder = new_lease_id()
    if stage == "registered":
        return _registered(db), holder, 1
    command = _leased(db, holder)
    if stage == "leased":
        return command, holder, 2
    if stage == "taken_over":
        assert outcome(partial(command.acquire, db, at(61), holder)) == lease_json(2, at(121))
        return command, holder, 3
    assert stage == "succeeded"
    assert outcome(partial(command.complete, db, at(5), holder, 1, reference_fingerprint("r"))) == TERMINAL_SUCCEEDED
    return command, holder, 3


@pytest.mark.parametrize("stage", ["registered", "leased", "taken_over", "succeeded"])
def test_preseeded_next_audit_is_unrecognized_and_nothing_changes(firestore_db: Any, stage: str) -> None:
    """A document already at the next deterministic audit id (revision 2 without a lifecycle, R+1 after
    a lease) makes every operation ``unrecognized_record``; lifecycle and audits stay identical."""
    read_only = WriteRecordingClient(firestore_db)
    command, holder, revision = _reach(firestore_db, stage)
    fence = max(1, revision - 1) if stage != "succeeded" else 1
    # What the next mutation would have written, planted in advance: its content does not matter.
    write_documents(
        firestore_db,
        {command.audit_path(revision + 1): _acquired_audit(command, fence + 1, revision + 1, at(200), first=False)},
    )
    before = snapshot_documents(firestore_db, command.key_hash)
    other = new_lease_id()
    calls = [
        partial(command.register, read_only, at(300)),
        partial(command.acquire, read_only, at(30), holder),
        partial(command.acquire, read_only, at(30), other),
        partial(command.acquire, read_only, at(300), other),
        partial(command.complete, read_only, at(30), holder, fence, reference_fingerprint("r")),
        partial(command.fail, read_only, at(30), holder, fence),
    ]
    for call in calls:
        assert error_code(call) == "unrecognized_record"
        assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


@pytest.mark.parametrize("operation", ["first_acquire", "takeover", "complete", "fail"])
def test_commit_failure_applies_neither_lifecycle_nor_audit_then_retry_succeeds(
    firestore_db: Any, operation: str
) -> None:
    """The server rejects the whole commit (an extra create of an existing sentinel): ``journal_unavailable``,
    neither the lifecycle change nor its audit exists; the plain retry with the same ids then succeeds."""
    holder = new_lease_id()
    if operation == "first_acquire":
        command = _registered(firestore_db)
        revision, call_at = 2, at(5)
    else:
        command = _leased(firestore_db, holder)
        revision, call_at = 3, (at(70) if operation == "takeover" else at(5))
    reference_fp = reference_fingerprint("business-record")
    taker = new_lease_id()

    def call(db: Any) -> Any:
        if operation in ("first_acquire", "takeover"):
            return command.acquire(db, call_at, holder if operation == "first_acquire" else taker)
        if operation == "complete":
            return command.complete(db, call_at, holder, 1, reference_fp)
        return command.fail(db, call_at, holder, 1)

    before = snapshot_documents(firestore_db, command.key_hash)
    failing = CommitFailureClient(firestore_db)
    assert error_code(partial(call, failing)) == UNAVAILABLE
    failing.assert_rejected_once([command.lifecycle_path, command.audit_path(revision)])
    assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))

    answer = outcome(partial(call, firestore_db))
    stored = snapshot_documents(firestore_db, command.key_hash)
    assert set(stored) == set(before) | {command.lifecycle_path, command.audit_path(revision)}
    if operation == "first_acquire":
        assert answer == lease_json(1, at(65))
        assert_document(
            stored[command.lifecycle_path][0],
            command.expected_lifecycle(
                state="leased", revision=2, fence=1, lease_id=holder, acquired=at(5), created=at(5)
            ),
        )
        assert_document(stored[command.audit_path(2)][0], _acquired_audit(command, 1, 2, at(5), first=True))
    elif operation == "takeover":
        assert answer == lease_json(2, at(130))
        assert_document(
            stored[command.lifecycle_path][0],
            command.expected_lifecycle(
                state="leased", revision=3, fence=2, lease_id=taker, acquired=at(70), created=at(1)
            ),
        )
        assert_document(stored[command.audit_path(3)][0], _acquired_audit(command, 2, 3, at(70), first=False))
    else:
        state = "succeeded" if operation == "complete" else "failed_final"
        assert answer == TERMINAL[state]
        assert_document(
            stored[command.lifecycle_path][0],
            command.expected_lifecycle(
                state=state,
                revision=3,
                fence=1,
                lease_id=holder,
                acquired=at(1),
                created=at(1),
                updated=at(5),
                reference_fp=reference_fp,
            ),
        )
        assert_document(stored[command.audit_path(3)][0], _terminal_audit(command, state, 1, 3, at(1), at(5)))
    assert_unchanged(_pair(before, command), _pair(stored, command))


# --- records this contract never writes ------------------------------------------------------------------


def _valid_leased_documents(command: Command, holder: str) -> dict[str, dict[str, Any]]:
    return {
        command.root_path: command.expected_root(at(0)),
        command.audit_path(1): command.expected_registration_audit(at(0)),
        command.lifecycle_path: command.expected_lifecycle(
            state="leased", revision=2, fence=1, lease_id=holder, acquired=at(1), created=at(1)
        ),
        command.audit_path(2): _acquired_audit(command, 1, 2, at(1), first=True),
    }


def _edit(path_of: Any, **changes: Any) -> Any:
    def apply(command: Command, docs: dict[str, dict[str, Any]]) -> None:
        docs[path_of(command)].update(changes)

    return apply


def _lifecycle_path(command: Command) -> str:
    return command.lifecycle_path


def _audit_2_path(command: Command) -> str:
    return command.audit_path(2)


MALFORMED_LIFECYCLES = {
    "lifecycle_extra_field": _edit(_lifecycle_path, providerAttempt=1),
    "lifecycle_future_version": _edit(_lifecycle_path, lifecycleSchemaVersion=2),
    "lifecycle_unknown_state": _edit(_lifecycle_path, state="provider_sending"),
    "lifecycle_bool_fence": _edit(_lifecycle_path, fenceEpoch=True),
    "lifecycle_expiry_not_sixty_seconds": _edit(_lifecycle_path, leaseExpiresAt=at(62)),
    "lifecycle_created_before_registration": _edit(_lifecycle_path, createdAt=at(-1)),
    "lifecycle_revision_fence_mismatch": _edit(_lifecycle_path, commandRevision=3),
    "lifecycle_leased_with_commitment": _edit(
        _lifecycle_path, terminalCommitmentKind="business_record_digest", terminalCommitmentHash="a" * 64
    ),
    "lifecycle_foreign_key_hash": _edit(_lifecycle_path, commandKeyHash="b" * 64),
    "current_audit_future_version": _edit(_audit_2_path, auditSchemaVersion=3),
    "current_audit_fence_mismatch": _edit(_audit_2_path, fenceEpoch=2),
    "current_audit_wrong_event": _edit(_audit_2_path, eventType="command_lease_taken_over", fromState="leased"),
    "current_audit_time_mismatch": _edit(_audit_2_path, occurredAt=at(2)),
    "missing_current_audit": lambda command, docs: docs.pop(command.audit_path(2)),
    "orphan_lifecycle": lambda command, docs: (docs.pop(command.root_path), docs.pop(command.audit_path(1))),
    "root_missing_next_to_lifecycle": lambda command, docs: docs.pop(command.root_path),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_LIFECYCLES))
def test_malformed_future_orphan_lifecycle_and_audit_stay_untouched(firestore_db: Any, case: str) -> None:
    """Malformed, future-version, orphan lifecycles and a missing or wrong current audit answer
    ``unrecognized_record`` for every operation, before and after the lease's expiry, and every stored
    document keeps its contents and update time: nothing is repaired."""
    read_only = WriteRecordingClient(firestore_db)
    command, holder = new_command(), new_lease_id()
    docs = _valid_leased_documents(command, holder)
    MALFORMED_LIFECYCLES[case](command, docs)
    write_documents(firestore_db, docs)
    before = snapshot_documents(firestore_db, command.key_hash)
    assert set(before) == set(docs)
    other = new_lease_id()
    for when in (at(10), at(61), at(500)):
        for call in (
            partial(command.register, read_only, when),
            partial(command.acquire, read_only, when, holder),
            partial(command.acquire, read_only, when, other),
            partial(command.complete, read_only, when, holder, 1, reference_fingerprint("r")),
            partial(command.fail, read_only, when, holder, 1),
        ):
            assert error_code(call) == "unrecognized_record", call
            assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


def test_hand_built_valid_state_is_accepted_by_the_journal(firestore_db: Any) -> None:
    """The unmodified hand-built leased documents are accepted (holder recovers, others busy): the
    malformed cases fail because of their edit, not because of the fixture."""
    read_only = WriteRecordingClient(firestore_db)
    command, holder = new_command(), new_lease_id()
    write_documents(firestore_db, _valid_leased_documents(command, holder))
    before = snapshot_documents(firestore_db, command.key_hash)
    assert outcome(partial(command.register, read_only, at(10))) == REGISTERED_EXISTING
    assert outcome(partial(command.acquire, read_only, at(10), holder)) == lease_json(1, at(61))
    assert outcome(partial(command.acquire, read_only, at(10), new_lease_id())) == LEASE_BUSY
    assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


def test_revision_at_maximum_never_wraps(firestore_db: Any) -> None:
    """A valid lifecycle at the maximum revision: read-only answers still work, but a takeover or a
    terminal transition would overflow and answers ``unrecognized_record`` without a write."""
    read_only = WriteRecordingClient(firestore_db)
    command, holder = new_command(), new_lease_id()
    fence = MAX_REVISION - 1
    docs = {
        command.root_path: command.expected_root(at(0)),
        command.audit_path(1): command.expected_registration_audit(at(0)),
        command.lifecycle_path: command.expected_lifecycle(
            state="leased", revision=MAX_REVISION, fence=fence, lease_id=holder, acquired=at(1), created=at(1)
        ),
        command.audit_path(MAX_REVISION): _acquired_audit(command, fence, MAX_REVISION, at(1), first=False),
    }
    write_documents(firestore_db, docs)
    before = snapshot_documents(firestore_db, command.key_hash)
    assert set(before) == set(docs)
    assert outcome(partial(command.register, read_only, at(10))) == REGISTERED_EXISTING
    assert outcome(partial(command.acquire, read_only, at(10), holder)) == lease_json(fence, at(61))
    assert outcome(partial(command.acquire, read_only, at(10), new_lease_id())) == LEASE_BUSY
    for call in (
        partial(command.acquire, read_only, at(61), new_lease_id()),
        partial(command.acquire, read_only, at(61), holder),
        partial(command.complete, read_only, at(10), holder, fence, reference_fingerprint("r")),
        partial(command.fail, read_only, at(10), holder, fence),
    ):
        assert error_code(call) == "unrecognized_record"
    assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


