"""Registration on the Firestore emulator (seed 001, "Demo-only emulator" tests; SPEC.md).

Every test runs in its own emulator project (``firestore_db``), uses explicit clocks from T0 =
2026-01-01T00:00:00Z and checks stored documents field by field. Races use 8 threads released by one
barrier (the 24-way run lives in another suite). Under contention ``journal_unavailable`` is a legal
answer; a race accepts it only as an indefinite answer that the caller's plain retry then settles, and
every safety assertion (one pair, one audit, one ``registered_new``, never overwritten) is made on the
stored documents regardless.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import reference
from tests.systems.journal.support import (
    REGISTERED_EXISTING,
    REGISTERED_NEW,
    T0,
    UNAVAILABLE,
    Command,
    CommitFailureClient,
    FixedClock,
    WriteRecordingClient,
    assert_document,
    assert_unchanged,
    at,
    error_code,
    golden_vectors,
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
VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "identity-golden.json"


def _create_time(db: Any, path: str) -> datetime:
    return db.document(path).get().create_time


def _assert_single_pair(db: Any, command: Command, created: datetime) -> None:
    """Exactly the root and revision-1 audit of ``command``, exact fields, each written once, and
    nothing else in the project's journal collections."""
    stored = snapshot_documents(db, command.key_hash)
    assert set(stored) == {command.root_path, command.audit_path(1)}
    assert_document(stored[command.root_path][0], command.expected_root(created))
    assert_document(stored[command.audit_path(1)][0], command.expected_registration_audit(created))
    for path, (_, update_time) in stored.items():
        assert _create_time(db, path) == update_time, f"{path} was written more than once"
    assert [doc.id for doc in db.collection("checkoutRequests").stream()] == [command.key_hash]
    assert [doc.id for doc in db.collection("auditEvents").stream()] == [command.audit_path(1).split("/")[1]]


def test_identity_helpers_match_golden_vectors() -> None:
    """The tests' own digest helpers (independent of reference/) reproduce the golden vectors."""
    vectors = golden_vectors(VECTORS)
    assert vectors
    for vector in vectors:
        given = vector["input"]
        command = Command(
            command_id=given["commandId"],
            environment=given["environment"],
            caller_kind=given["callerScope"]["kind"],
            caller_value=given["callerScope"]["value"],
            command_type=given["commandType"],
            endpoint_schema_version=given["endpointSchemaVersion"],
            payload=given["payload"],
        )
        assert command.key_hash == vector["commandKeyHash"]
        assert command.payload_fingerprint == vector["payloadFingerprint"]
        if "leaseOwnerFingerprint" in vector:
            assert command.owner(given["leaseId"]) == vector["leaseOwnerFingerprint"]
        if "terminalCommitmentHash" in vector:
            assert command.commitment(given["terminalReferenceFingerprint"]) == vector["terminalCommitmentHash"]
        if "rootPath" in vector:
            assert command.root_path == vector["rootPath"]
            assert command.lifecycle_path == vector["lifecyclePath"]
            assert command.audit_path(1) == vector["registrationAuditPath"]


def test_concurrent_identical_registrations_create_one_pair(firestore_db: Any) -> None:
    """8 identical registrations at once: one ``registered_new``, the rest ``registered_existing``, one
    root and one revision-1 audit, each written exactly once."""
    command = new_command()
    clocks = [at(1, microseconds=i) for i in range(RACERS)]  # distinct readings: the stored time names the winner
    assert snapshot_documents(firestore_db, command.key_hash) == {}
    recorder = WriteRecordingClient(firestore_db)

    result = race_and_settle([partial(command.register, recorder, when) for when in clocks])

    assert all(item in (REGISTERED_NEW, REGISTERED_EXISTING, UNAVAILABLE) for item in result.raw), result.raw
    assert all(item in (REGISTERED_NEW, REGISTERED_EXISTING) for item in result.settled), result.settled
    winners = [i for i, item in enumerate(result.settled) if item == REGISTERED_NEW]
    # Only an indefinite journal_unavailable may hide the winner's registered_new from its caller.
    assert len(winners) == 1 or (not winners and result.unavailable), result.raw
    created = snapshot_documents(firestore_db, command.key_hash)[command.root_path][0]["createdAt"]
    assert created in clocks
    if winners:
        assert created == clocks[winners[0]], "the registered_new caller's clock must be the stored time"
    _assert_single_pair(firestore_db, command, created)
    # No double apply: exactly one commit with writes reached the server and was applied.
    assert [sorted(commit.paths) for commit in recorder.applied] == [sorted([command.root_path, command.audit_path(1)])]


def test_two_payload_race_one_identity_wins_and_is_never_overwritten(firestore_db: Any) -> None:
    """Half the callers register payload A, half payload B under one command key: one identity wins,
    its callers get new/existing, the others ``command_conflict``; the pair is never overwritten."""
    payload_a = new_command()
    payload_b = payload_a.but(payload={"raceId": "autumn-5k", "quantity": 1, "tier": "youth"})
    assert payload_a.key_hash == payload_b.key_hash
    assert payload_a.payload_fingerprint != payload_b.payload_fingerprint
    contenders = [payload_a if i % 2 == 0 else payload_b for i in range(RACERS)]
    clocks = [at(2, microseconds=i) for i in range(RACERS)]
    assert snapshot_documents(firestore_db, payload_a.key_hash) == {}
    recorder = WriteRecordingClient(firestore_db)

    result = race_and_settle(
        [partial(contender.register, recorder, when) for contender, when in zip(contenders, clocks, strict=True)]
    )

    root = snapshot_documents(firestore_db, payload_a.key_hash)[payload_a.root_path][0]
    winner = payload_a if root["payloadFingerprint"] == payload_a.payload_fingerprint else payload_b
    assert root["payloadFingerprint"] == winner.payload_fingerprint
    new_calls = []
    for index, (contender, settled) in enumerate(zip(contenders, result.settled, strict=True)):
        if contender is winner:
            assert settled in (REGISTERED_NEW, REGISTERED_EXISTING), (index, settled)
            if settled == REGISTERED_NEW:
                new_calls.append(index)
        else:
            assert settled == "command_conflict", (index, settled)
    assert len(new_calls) == 1 or (not new_calls and result.unavailable), result.raw
    created = root["createdAt"]
    assert created in [when for contender, when in zip(contenders, clocks, strict=True) if contender is winner]
    if new_calls:
        assert created == clocks[new_calls[0]]
    _assert_single_pair(firestore_db, winner, created)
    assert [sorted(commit.paths) for commit in recorder.applied] == [sorted([winner.root_path, winner.audit_path(1)])]

    # Later conflicting calls of every kind still reject without a write.
    loser = payload_b if winner is payload_a else payload_a
    before = snapshot_documents(firestore_db, winner.key_hash)
    read_only = WriteRecordingClient(firestore_db)
    for conflicting in (
        loser,
        winner.but(endpoint_schema_version=2),
        winner.but(command_type="create_refund_request"),
    ):
        for when in (at(3), at(0), at(3600)):
            assert error_code(partial(conflicting.register, read_only, when)) == "command_conflict"
            assert error_code(partial(conflicting.acquire, read_only, when, new_lease_id())) == "command_conflict"
    assert outcome(partial(winner.register, read_only, at(4))) == REGISTERED_EXISTING
    assert_unchanged(before, snapshot_documents(firestore_db, winner.key_hash))
    read_only.assert_no_writes()


@pytest.mark.parametrize("present", ["audit_only", "root_only"])
def test_preseeded_half_pair_is_unrecognized_and_never_completed(firestore_db: Any, present: str) -> None:
    """A preseeded deterministic revision-1 audit id (or a root without its audit) makes registration
    answer ``unrecognized_record``; the transaction creates no root (no audit) and repairs nothing."""
    command = new_command()
    seeded = (
        {command.audit_path(1): command.expected_registration_audit(at(0))}
        if present == "audit_only"
        else {command.root_path: command.expected_root(at(0))}
    )
    write_documents(firestore_db, seeded)
    before = snapshot_documents(firestore_db, command.key_hash)
    assert set(before) == set(seeded)
    read_only = WriteRecordingClient(firestore_db)

    for when in (at(0), at(5), at(-5)):
        assert error_code(partial(command.register, read_only, when)) == "unrecognized_record"
        assert error_code(partial(command.acquire, read_only, when, new_lease_id())) == "unrecognized_record"
        assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    assert error_code(partial(command.but(payload={"other": 1}).register, read_only, at(6))) == "unrecognized_record"
    assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()
    assert [doc.id for doc in firestore_db.collection("checkoutRequests").stream()] == (
        [] if present == "audit_only" else [command.key_hash]
    )


def test_commit_failure_leaves_neither_half_then_plain_retry_registers(firestore_db: Any) -> None:
    """The server rejects the whole registration commit (an extra create of an existing sentinel rides
    in the same commit): ``journal_unavailable``, neither root nor audit exists; a plain retry with the
    same inputs then registers the exact pair."""
    command = new_command()
    failing = CommitFailureClient(firestore_db)

    assert error_code(partial(command.register, failing, at(7))) == UNAVAILABLE
    failing.assert_rejected_once([command.root_path, command.audit_path(1)])
    assert snapshot_documents(firestore_db, command.key_hash) == {}
    assert list(firestore_db.collection("checkoutRequests").stream()) == []
    assert list(firestore_db.collection("auditEvents").stream()) == []

    assert outcome(partial(command.register, firestore_db, at(8))) == REGISTERED_NEW
    _assert_single_pair(firestore_db, command, at(8))
    assert outcome(partial(command.register, firestore_db, at(9))) == REGISTERED_EXISTING


def test_existing_exact_pair_is_byte_and_update_time_identical_after_repeated_registrations(
    firestore_db: Any,
) -> None:
    """Matching registration is read-only: later, equal and earlier clocks all answer
    ``registered_existing`` and leave both documents' contents and update times untouched."""
    command = new_command()
    assert outcome(partial(command.register, firestore_db, at(10))) == REGISTERED_NEW
    before = snapshot_documents(firestore_db, command.key_hash)
    _assert_single_pair(firestore_db, command, at(10))

    # update_time alone cannot show a same-bytes rewrite (the emulator keeps it): record commits too.
    read_only = WriteRecordingClient(firestore_db)
    clock = FixedClock(at(10))
    for when in (at(10), at(11), at(9), at(86_400), at(10, microseconds=1), at(10, microseconds=-1)):
        clock.set(when)
        assert outcome(partial(command.register, read_only, clock)) == REGISTERED_EXISTING
        assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    # A payload built in another key order is the same canonical payload: still the same identity.
    reordered = command.but(payload=dict(reversed(list(command.payload.items()))))
    assert outcome(partial(reordered.register, read_only, at(12))) == REGISTERED_EXISTING
    assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


def _other_hash() -> str:
    return new_command().key_hash


# Each case edits a valid (root, audit) pair into something this contract never writes.
MALFORMED_PAIRS = {
    "root_extra_field": lambda root, audit: root.update(note="x"),
    "root_missing_field": lambda root, audit: root.pop("updatedAt"),
    "root_future_journal_version": lambda root, audit: root.update(journalSchemaVersion=2),
    "root_future_identity_version": lambda root, audit: root.update(commandIdentityVersion=2),
    "audit_future_version": lambda root, audit: audit.update(auditSchemaVersion=2),
    "audit_extra_field": lambda root, audit: audit.update(leaseOwnerFingerprint="0" * 64),
    "root_unexpected_state": lambda root, audit: root.update(state="leased"),
    "root_revision_two": lambda root, audit: root.update(revision=2),
    "root_bool_endpoint_version": lambda root, audit: root.update(endpointSchemaVersion=True),
    "root_endpoint_version_zero": lambda root, audit: root.update(endpointSchemaVersion=0),
    "root_string_timestamp": lambda root, audit: root.update(createdAt="2026-01-01T00:00:00Z"),
    "root_timestamp_mismatch": lambda root, audit: root.update(updatedAt=root["createdAt"] + timedelta(microseconds=1)),
    "audit_timestamp_mismatch": lambda root, audit: audit.update(occurredAt=audit["occurredAt"] + timedelta(seconds=1)),
    "root_uppercase_fingerprint": lambda root, audit: root.update(
        payloadFingerprint=root["payloadFingerprint"].upper()
    ),
    "audit_foreign_key_hash": lambda root, audit: audit.update(commandKeyHash=_other_hash()),
    "audit_unexpected_event": lambda root, audit: audit.update(eventType="command_lease_acquired"),
    "audit_command_type_mismatch": lambda root, audit: audit.update(commandType="create_refund_request"),
    "stored_environment_mismatch": lambda root, audit: (
        root.update(environment="production"),
        audit.update(environment="production"),
    ),
    "stored_caller_kind_mismatch": lambda root, audit: (
        root.update(callerScopeKind="internal_system"),
        audit.update(callerScopeKind="internal_system"),
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_PAIRS))
def test_malformed_and_future_pairs_are_untouched_and_unrecognized(firestore_db: Any, case: str) -> None:
    """A malformed, future-version, unexpected-state, timestamp-mismatch or environment/caller-kind
    corrupted pair answers ``unrecognized_record`` for every operation (before any identity conflict)
    and keeps contents and update times identical: nothing is repaired."""
    command = new_command()
    root, audit = command.expected_root(at(20)), command.expected_registration_audit(at(20))
    MALFORMED_PAIRS[case](root, audit)
    write_documents(firestore_db, {command.root_path: root, command.audit_path(1): audit})
    before = snapshot_documents(firestore_db, command.key_hash)
    lease_id = new_lease_id()
    read_only = WriteRecordingClient(firestore_db)

    calls = [
        partial(command.register, read_only, at(21)),
        partial(command.register, read_only, at(19)),
        partial(command.but(payload={"conflicting": True}).register, read_only, at(21)),
        partial(command.but(endpoint_schema_version=7).register, read_only, at(21)),
        partial(command.acquire, read_only, at(21), lease_id),
        partial(command.complete, read_only, at(22), lease_id, 1, reference_fingerprint("x")),
        partial(command.fail, read_only, at(22), lease_id, 1),
    ]
    for call in calls:
        assert error_code(call) == "unrecognized_record"
        assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
    read_only.assert_no_writes()


def test_every_reachable_error_code_is_produced_on_the_emulator(firestore_db: Any) -> None:
    """Each of the seven error codes comes out of a real emulator run, each without a stray write."""
    produced: dict[str, str] = {}
    read_only = WriteRecordingClient(firestore_db)  # every erroring call below goes through it

    def expect(code: str, call: Any, command: Command) -> None:
        before = snapshot_documents(firestore_db, command.key_hash)
        assert error_code(call) == code
        assert_unchanged(before, snapshot_documents(firestore_db, command.key_hash))
        produced[code] = code

    # invalid_command_input: rejected before any Firestore call, nothing stored.
    bad = Command(command_id="0f8fad5b-d9cb-169f-a165-70867728950e")  # version nibble 1, not 4
    expect("invalid_command_input", partial(bad.register, read_only, at(30)), bad)
    oversized = new_command(payload={"blob": "x" * 40_000})
    expect("invalid_command_input", partial(oversized.register, read_only, at(30)), oversized)
    assert list(firestore_db.collection("checkoutRequests").stream()) == []

    # command_not_registered
    unregistered = new_command()
    expect("command_not_registered", partial(unregistered.acquire, read_only, at(30), new_lease_id()), unregistered)

    # command_conflict
    command = new_command()
    assert outcome(partial(command.register, firestore_db, at(30))) == REGISTERED_NEW
    expect("command_conflict", partial(command.but(endpoint_schema_version=3).register, read_only, at(31)), command)

    # unrecognized_record: a preseeded revision-2 audit next to a valid pair
    preseeded = new_command()
    assert outcome(partial(preseeded.register, firestore_db, at(30))) == REGISTERED_NEW
    write_documents(firestore_db, {preseeded.audit_path(2): {"planted": True}})
    expect("unrecognized_record", partial(preseeded.register, read_only, at(31)), preseeded)

    # lease_rejected: complete without a lease
    holder = new_lease_id()
    expect(
        "lease_rejected",
        partial(command.complete, read_only, at(31), holder, 1, reference_fingerprint("a")),
        command,
    )

    # terminal_conflict: fail after complete
    assert outcome(partial(command.acquire, firestore_db, at(32), holder)) == lease_json(1, at(92))
    assert outcome(partial(command.complete, firestore_db, at(33), holder, 1, reference_fingerprint("a"))) == (
        {"journalSchemaVersion": 1, "lifecycleSchemaVersion": 1, "outcome": "terminal_succeeded", "state": "succeeded"}
    )
    expect("terminal_conflict", partial(command.fail, read_only, at(34), holder, 1), command)

    # journal_unavailable: a clock before the registration for a first lease, a naive clock, a commit
    # rejected by the server.
    fresh = new_command()
    assert outcome(partial(fresh.register, firestore_db, at(40))) == REGISTERED_NEW
    expect("journal_unavailable", partial(fresh.acquire, read_only, at(39), new_lease_id()), fresh)
    naive = T0.replace(tzinfo=None)
    expect("journal_unavailable", partial(fresh.acquire, read_only, lambda: naive, new_lease_id()), fresh)
    failing = CommitFailureClient(firestore_db)
    expect("journal_unavailable", partial(fresh.acquire, failing, at(41), new_lease_id()), fresh)
    failing.assert_rejected_once([fresh.lifecycle_path, fresh.audit_path(2)])
    assert outcome(partial(fresh.acquire, firestore_db, at(41), new_lease_id())) == lease_json(1, at(101))

    assert set(produced) == set(reference.ERROR_CODES)
    read_only.assert_no_writes()
