"""A read-write attempt reads in two batches (docs/journal-decisions.md "Read set", "Two-batch reads"): the root
pair and the lifecycle, then the lifecycle's audit partner and the next audit. When a winner's commit lands
between the two and the second is served from the new state, the attempt sees the older lifecycle beside the
winner's audit: `unrecognized_record` from an inconsistent pair of reads (found in a 24-way race). The runner
treats that answer from a read-write attempt as contention until a look, one consistent snapshot, confirms it.
On the fake Firestore, whose reads always see the latest state, a hook commits the winner between the batches.
No test sleeps: the runner's default `sleep` is replaced."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reference import AttemptLog, CommandJournalError
from reference.journal.runner import NEEDS_WRITE, run_transaction
from tests.fakes import FakeFirestore
from tests.systems.journal.builders import (
    CMD,
    LEASE,
    LEASE_B,
    T1,
    acquire,
    answer,
    lifecycle_docs,
    patch_backoff,
    registered_docs,
    seed,
)

T2 = T1 + LEASE + timedelta(seconds=5)  # lease A (acquired at T1) has expired


class CommitBetweenBatches(FakeFirestore):
    """Runs `winner(fake)` once, right before the second batched read of the first transaction: the winner's
    commit lands between that attempt's two batches, and the second batch sees it."""

    def __init__(self, winner) -> None:
        super().__init__()
        self.winner = winner
        self.first_transaction = None
        self.reads_in_first = 0

    def _read(self, transaction, references):
        if self.first_transaction is None:
            self.first_transaction = transaction._id
        if transaction._id == self.first_transaction:
            self.reads_in_first += 1
            if self.reads_in_first == 2 and self.winner is not None:
                winner, self.winner = self.winner, None
                winner(self)
        return super()._read(transaction, references)


def read_only_flags(db: FakeFirestore) -> list[bool]:
    return [call[2] for call in db.calls_named("transaction")]


@pytest.mark.parametrize(
    ("stored", "at", "lease_b_fence"),
    [
        pytest.param(lifecycle_docs, T2, 2, id="takeover-of-an-expired-lease"),
        pytest.param(registered_docs, T1, 1, id="first-lease"),
    ],
)
def test_a_winner_committed_between_the_two_batches_is_contention_not_a_malformed_record(
    monkeypatch, stored, at, lease_b_fence
):
    patch_backoff(monkeypatch)
    db = seed(CommitBetweenBatches(lambda fake: acquire(fake, at, lease=LEASE_B)), stored())
    log = AttemptLog()
    # A's second batch sees B's new audit beside the lifecycle A read before B committed (or before it existed)
    assert answer("acquire", db, at, attempt_log=log) == "lease_busy"
    assert db.winner is None, "the hook did not run: the interleaving was not forced"
    # one read-write attempt, rolled back as contention; the look at once sees B's lease and answers
    assert (log.attempts, log.aborts, log.looks) == (1, 1, 1)
    assert read_only_flags(db)[-2:] == [False, True]
    lifecycle = db.get(CMD.lifecycle_path)
    assert (lifecycle["leaseOwnerFingerprint"], lifecycle["fenceEpoch"]) == (CMD.owner(LEASE_B), lease_b_fence)
    assert db.get(CMD.audit_path(lifecycle["commandRevision"] + 1)) is None  # A wrote nothing


def test_a_stored_next_audit_confirmed_by_the_look_is_unrecognized_record(monkeypatch):
    patch_backoff(monkeypatch)
    docs = lifecycle_docs()
    docs[CMD.audit_path(3)] = dict(docs[CMD.audit_path(2)], commandRevision=3)  # preseeded, not a race
    db = seed(FakeFirestore(), docs)
    log = AttemptLog()
    assert answer("acquire", db, T2, attempt_log=log) == "unrecognized_record"
    assert (log.attempts, log.aborts, log.looks) == (1, 1, 1)  # the look's snapshot confirmed it
    assert read_only_flags(db) == [False, True]
    assert db.applied_writes == []


def test_an_unconfirmed_finding_on_the_last_attempt_is_still_looked_at(monkeypatch):
    patch_backoff(monkeypatch)
    db, log, state = FakeFirestore(abort_commits=9), AttemptLog(), {"attempts": 0}

    def body(transaction):
        state["attempts"] += 1
        reference = transaction._client.document("things/one")
        list(transaction.get_all([reference]))
        if state["attempts"] == 10:
            raise CommandJournalError("unrecognized_record")
        transaction.create(reference, {"n": 1})  # aborted at commit by the fake, 9 times

    def look(transaction):
        return "decided" if state["attempts"] == 10 else NEEDS_WRITE

    assert run_transaction(db, body, look=look, log=log) == "decided"
    assert (log.attempts, log.aborts) == (10, 10)


def test_without_a_look_a_read_write_finding_is_the_answer():
    # nothing could confirm it: the finding is answered as found (the caller chose no look)
    db = FakeFirestore()
    raised = CommandJournalError("unrecognized_record")

    def body(transaction):
        raise raised

    with pytest.raises(CommandJournalError) as caught:
        run_transaction(db, body)
    assert caught.value is raised
