"""The gateway reference against its model on the Firestore emulator (docs/gateway-contract.md).

Every test runs in its own emulator project with explicit clocks from T0 (tests/systems/gateway/builders.py).
`Lockstep.apply(op)` runs one model operation on the model and on the reference: the reference's answer
(exact output JSON, key order and types, or error code) must equal the model's, the stored documents under
`gatewayNamespaces/` must equal `model.gateway.documents` of the model's state exactly (types included;
nothing else stored), they must satisfy G-INV-1..12, and a call the model answers without writing must
send no write at all. The worked sequences are the seed's hazards; the pure decisions are checked on every
reachable row in tests/systems/gateway/test_gateway_reference_parts.py, so these cover the Firestore half.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import attrs
import pytest

import reference.gateway as gateway
from model.gateway import GatewayState, documents, history_violations, invariant_violations, ms_time, step
from reference.gateway import GatewayError
from reference.gateway.identity import event_path, record_path
from tests.systems.gateway.builders import (
    CHANGED_INPUT,
    NAMESPACE,
    REF,
    T0,
    UNDECLARED,
    US,
    A,
    B,
    C,
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
    record,
    report,
)
from tests.systems.gateway.lockstep import answer_of, model_answer, plain_docs, reference_call, typed_docs
from tests.systems.journal.support import SENTINEL_PATH, CommitFailureClient, WriteRecordingClient

pytestmark = pytest.mark.emulator
S = timedelta(seconds=1)


def stored_documents(db: Any) -> dict[str, dict[str, Any]]:
    """Every document of the project but the commit-failure sentinel, by path (records, events, anything)."""
    found: dict[str, dict[str, Any]] = {}

    def walk(collection: Any) -> None:
        for ref in collection.list_documents():
            snapshot = ref.get()
            if snapshot.exists and ref.path != SENTINEL_PATH:
                found[ref.path] = snapshot.to_dict()
            for sub in ref.collections():
                walk(sub)

    for collection in db.collections():
        walk(collection)
    return found


def call_reference(db: Any, op: Any) -> Any:
    public, _operation, kwargs = reference_call(op)
    try:
        return getattr(gateway, public)(db=db, clock=lambda: op.now, **kwargs)
    except GatewayError as error:
        return error.code


class Lockstep:
    def __init__(self, db: Any) -> None:
        self.raw = db
        self.db = WriteRecordingClient(db)
        self.state = GatewayState.empty()

    def apply(self, op: Any) -> Any:
        before = documents(self.state)
        sent = len(self.db.commits)
        self.state, result = step(self.state, op)
        got = call_reference(self.db, op)
        assert answer_of(got) == model_answer(result), result.transition
        stored = stored_documents(self.raw)
        assert typed_docs(stored) == typed_docs(documents(self.state)), result.transition
        assert invariant_violations(plain_docs(stored), namespace_id=NAMESPACE) == ()
        assert history_violations(before, plain_docs(stored)) == ()
        assert (len(self.db.commits) > sent) == result.wrote, result.transition  # read-only sends no write
        return got

    def outcome(self, op: Any) -> str:
        got = self.apply(op)
        return got if isinstance(got, str) else got.to_json()["outcome"]


@pytest.fixture
def lock(firestore_db):
    return Lockstep(firestore_db)


def _consumed(lock: Lockstep, at=T0, lease=A) -> None:
    assert lock.outcome(begin(at)) == "begun_new"
    assert lock.outcome(claim(lease, at)) == "consume_claimed"
    assert lock.outcome(record(lease, 1, hosted(at=at), at)) == "consumed"


def test_begin_get_and_the_precedence_of_declaration_presence_and_binding(lock):
    assert lock.outcome(get(T0)) == "journal_not_begun"
    assert lock.outcome(begin(T0, UNDECLARED)) == "namespace_not_linearizable"
    assert lock.outcome(begin(T0)) == "begun_new"
    assert lock.outcome(begin(T0 + S)) == "begun_existing"
    assert lock.outcome(begin(T0, CHANGED_INPUT)) == "binding_conflict"
    assert lock.outcome(claim(A, T0, CHANGED_INPUT)) == "binding_conflict"
    out = lock.apply(get(T0)).to_json()
    assert list(out) == [
        "schema_version",
        "outcome",
        "state",
        "revision",
        "fence_epoch",
        "lease_kind",
        "lease_active",
        "settlement_deadline_at",
    ]
    assert out["lease_active"] is False and out["revision"] == 1


def test_consume_election_then_lost_response_recovery_with_the_same_key_at_expiry_equality(lock):
    assert lock.outcome(begin(T0)) == "begun_new"
    first = lock.apply(claim(A, T0)).to_json()
    assert lock.outcome(claim(B, T0 + US)) == "pending"
    assert lock.outcome(claim(A, T0 + S)) == "consume_claimed"  # the holder's retry, no write
    assert lock.outcome(provider_intent(B, T0 + S)) == "pending"  # a loser can call neither service
    expiry = T0 + timedelta(seconds=30)
    assert lock.apply(get(expiry - US)).to_json()["lease_active"] is True
    assert lock.apply(get(expiry)).to_json()["lease_active"] is False  # equality is expired
    assert lock.outcome(record(A, 1, hosted(at=T0), expiry)) == "lease_rejected"  # the response came too late
    again = lock.apply(claim(B, expiry)).to_json()
    assert again["outcome"] == "consume_recovery_claimed" and again["fence_epoch"] == 2
    assert again["consume_idempotency_key"] == first["consume_idempotency_key"]  # the same hosted transition
    assert lock.outcome(claim(A, expiry + US)) == "pending"
    replay = hosted(at=T0, kind="IDEMPOTENT_CONSUMED")
    assert lock.outcome(record(A, 1, replay, expiry + US)) == "lease_rejected"  # the stale owner
    assert lock.outcome(record(B, 2, replay, expiry + US)) == "consumed"
    assert lock.outcome(record(B, 2, replay, expiry + 2 * US)) == "consumed"  # an exact retry, no write


def test_record_consume_refusals(lock):
    assert lock.outcome(begin(T0)) == "begun_new"
    assert lock.outcome(claim(A, T0)) == "consume_claimed"
    t = T0 + S
    assert lock.outcome(record(A, 1, hosted(at=T0, idempotency_key="e" * 64), t)) == "consume_response_mismatch"
    assert lock.outcome(record(A, 1, hosted(at=T0 - S), t)) == "consume_response_mismatch"  # before the claim
    assert lock.outcome(record(A, 1, hosted(kind="OTHER_STATE"), t)) == "consume_unresolved"
    assert lock.outcome(record(A, 2, hosted(at=T0), t)) == "lease_rejected"


def test_provider_intent_capped_lease_and_reconcile_lease_at_expiry_equality(lock):
    _consumed(lock)
    t = T0 + S
    taken = lock.apply(provider_intent(A, t)).to_json()
    assert taken["outcome"] == "provider_intent_taken" and taken["fence_epoch"] == 2
    assert lock.outcome(provider_intent(B, t + US)) == "pending"
    expiry = t + timedelta(seconds=120)
    assert lock.outcome(reconcile(B, expiry - US)) == "pending"  # an active submission is never overwritten
    assert lock.outcome(manual("COMMIT", expiry - US)) == "pending"
    assert lock.outcome(provider_intent(A, expiry)) == "reconciliation_required"  # never resubmitted
    assert lock.outcome(reconcile(B, expiry)) == "reconcile_lease_taken"
    assert lock.outcome(reconcile(C, expiry + US)) == "pending"
    r_expiry = expiry + timedelta(seconds=60)
    assert lock.outcome(reconcile(C, r_expiry)) == "reconcile_lease_taken"  # takeover at equality
    assert lock.outcome(apply(B, 3, evidence("SETTLED"), r_expiry)) == "lease_rejected"  # the old reconciler
    assert lock.outcome(apply(C, 4, evidence("SETTLED"), r_expiry + US)) == "committed"


def test_the_provider_lease_is_capped_at_the_deadline(lock):
    _consumed(lock)
    deadline = ms_time(lock.state.records[0][1].settlement_deadline_at)
    out = lock.apply(provider_intent(A, deadline - timedelta(seconds=10))).to_json()
    assert out["lease_expires_at"] == {"seconds": int(deadline.timestamp()), "nanoseconds": 0}


def test_the_settlement_deadline_at_equality(lock):
    _consumed(lock)
    deadline = ms_time(lock.state.records[0][1].settlement_deadline_at)
    assert lock.outcome(close(deadline - US)) == "window_open"
    assert lock.outcome(close(deadline)) == "submission_window_closed"
    assert lock.outcome(close(deadline + US)) == "submission_window_closed"  # a retry, no write
    assert lock.outcome(provider_intent(A, deadline + S)) == "observed"
    assert lock.outcome(manual("COMMIT", deadline + S)) == "terminal_conflict"


def test_provider_intent_at_the_deadline_closes_the_window(lock):
    _consumed(lock)
    deadline = ms_time(lock.state.records[0][1].settlement_deadline_at)
    assert lock.outcome(provider_intent(A, deadline)) == "submission_window_closed"


def test_a_caller_report_opens_verification_and_only_verified_evidence_decides(lock):
    _consumed(lock)
    t = T0 + S
    assert lock.outcome(provider_intent(A, t)) == "provider_intent_taken"
    assert lock.outcome(apply(A, 2, evidence("SETTLED"), t)) == "submission_not_reported"
    reported = lock.apply(report(A, 2, t)).to_json()
    assert (reported["evidence_class"], reported["independent_verification"]) == ("CALLER_ASSERTED", False)
    assert lock.outcome(report(A, 2, t, claim_id="claim-2")) == "report_conflict"
    asserted = evidence("SETTLED", evidence_class="CALLER_ASSERTED", independent_verification=False)
    assert lock.outcome(apply(A, 2, asserted, t)) == "reconciliation_continues"
    assert lock.outcome(apply(A, 2, evidence("SETTLED", independent_verification=False), t)) == (
        "reconciliation_continues"
    )
    assert lock.outcome(apply(A, 2, evidence("SETTLED", evidence_class="CHAIN_FINALIZED"), t)) == "evidence_mismatch"
    assert lock.outcome(apply(A, 2, evidence("SETTLED", reference="pi_2"), t)) == "evidence_mismatch"
    committed = lock.apply(apply(A, 2, evidence("SETTLED"), t + US)).to_json()
    assert committed["terminal_path"] == "provider_owner" and committed["evidence_class"] == "PROVIDER_API_VERIFIED"
    assert lock.outcome(apply(A, 2, evidence("SETTLED"), t + S)) == "committed"  # exact retry, no write
    assert lock.outcome(report(A, 2, t + S)) == "submission_reported"  # the report's own class, fixed


def test_after_abandonment_a_release_needs_submission_fenced_and_the_deadline_not_elapsed(lock):
    _consumed(lock)
    t = T0 + S
    assert lock.outcome(provider_intent(A, t)) == "provider_intent_taken"
    abandoned = t + timedelta(seconds=120)
    assert lock.outcome(manual("RELEASE", abandoned, fenced=False)) == "release_refused"
    assert lock.outcome(reconcile(B, abandoned)) == "reconcile_lease_taken"
    unfenced = evidence("FAILED", reference="pi_1", submission_fenced=False, receipt_digest=None)
    assert lock.outcome(apply(B, 3, unfenced, abandoned + US)) == "outcome_unknown"
    assert lock.outcome(apply(B, 3, unfenced, abandoned + 2 * US)) == "outcome_unknown"  # exact retry
    assert lock.outcome(reconcile(C, abandoned + S)) == "reconcile_lease_taken"  # resumed from the park
    fenced = evidence("FAILED", reference="pi_1", submission_fenced=True)
    released = lock.apply(apply(C, 4, fenced, abandoned + 2 * S)).to_json()
    assert released["outcome"] == "released" and released["terminal_path"] == "reconciliation"


def test_manual_terminal_is_caller_asserted_whatever_it_claims(lock):
    _consumed(lock)
    t = T0 + S
    assert lock.outcome(manual("COMMIT", t)) == "not_applicable"
    assert lock.outcome(reconcile(B, t)) == "not_applicable"
    assert lock.outcome(provider_intent(A, t)) == "provider_intent_taken"
    abandoned = t + timedelta(seconds=120)
    out = lock.apply(manual("RELEASE", abandoned, fenced=True, claimed=True)).to_json()
    assert (out["evidence_class"], out["independent_verification"], out["terminal_path"]) == (
        "CALLER_ASSERTED",
        False,
        "manual",
    )
    assert lock.outcome(manual("RELEASE", abandoned + S, fenced=True)) == "released"  # exact retry
    assert lock.outcome(manual("RELEASE", abandoned + S, fenced=False)) == "terminal_conflict"


def test_late_settlement_commits_on_reconciliation_but_failure_parks(lock):
    _consumed(lock)
    t = T0 + S
    assert lock.outcome(provider_intent(A, t)) == "provider_intent_taken"
    deadline = ms_time(lock.state.records[0][1].settlement_deadline_at)
    assert lock.outcome(reconcile(B, deadline)) == "reconcile_lease_taken"
    failed = evidence("FAILED", reference="pi_1", receipt_digest=None)
    assert lock.outcome(apply(B, 3, failed, deadline + US)) == "outcome_unknown"  # never released late
    assert lock.outcome(manual("RELEASE", deadline + S)) == "release_refused"
    assert lock.outcome(reconcile(C, deadline + S)) == "reconcile_lease_taken"
    assert lock.outcome(apply(C, 4, evidence("SETTLED"), deadline + 2 * S)) == "committed"


def test_an_earlier_clock_reading_never_writes(lock):
    assert lock.outcome(begin(T0)) == "begun_new"
    assert lock.outcome(claim(A, T0 - US)) == "gateway_unavailable"


def test_a_rejected_commit_applies_nothing(firestore_db):
    lock = Lockstep(firestore_db)
    assert lock.outcome(begin(T0)) == "begun_new"
    failing = CommitFailureClient(firestore_db)
    assert call_reference(failing, claim(A, T0)) == "gateway_unavailable"
    failing.assert_rejected_once([record_path(NAMESPACE, REF.journal_key), event_path(NAMESPACE, REF.journal_key, 2)])
    stored = stored_documents(firestore_db)
    assert typed_docs(stored) == typed_docs(documents(lock.state))


@pytest.mark.parametrize("damage", ["extra field", "schema v1", "orphan event", "next event present"])
def test_damaged_stored_documents_answer_unrecognized_record_and_are_left_alone(firestore_db, damage):
    lock = Lockstep(firestore_db)
    record_p, event1 = record_path(NAMESPACE, REF.journal_key), event_path(NAMESPACE, REF.journal_key, 1)
    if damage == "orphan event":
        firestore_db.document(event1).set({"schema_version": 2})
    else:
        assert lock.outcome(begin(T0)) == "begun_new"
        docs = documents(lock.state)
        if damage == "extra field":
            firestore_db.document(record_p).set({**docs[record_p], "note": "x"})
        elif damage == "schema v1":
            firestore_db.document(record_p).set({**docs[record_p], "schema_version": 1})
        else:
            firestore_db.document(event_path(NAMESPACE, REF.journal_key, 2)).set(docs[event1])
    before = typed_docs(stored_documents(firestore_db))
    for op in (get(T0), begin(T0), claim(A, T0)):
        assert call_reference(firestore_db, op) == "unrecognized_record"
    assert typed_docs(stored_documents(firestore_db)) == before


def test_eight_way_consume_election_has_exactly_one_winner(firestore_db):
    lock = Lockstep(firestore_db)
    assert lock.outcome(begin(T0)) == "begun_new"
    leases = [f"lease-{i}" for i in range(8)]
    t = T0 + S
    barrier = threading.Barrier(len(leases))
    answers: list[Any] = [None] * len(leases)

    def run(index: int) -> None:
        barrier.wait(timeout=60)
        answers[index] = call_reference(firestore_db, claim(leases[index], t))

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(leases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    outcomes = [a if isinstance(a, str) else a.to_json()["outcome"] for a in answers]
    assert sorted(outcomes) == ["consume_claimed"] + ["pending"] * 7, outcomes
    winner = leases[outcomes.index("consume_claimed")]
    lock.state, result = step(lock.state, claim(winner, t))  # the model's sequential witness
    assert model_answer(result) == answer_of(answers[outcomes.index("consume_claimed")])
    stored = stored_documents(firestore_db)
    assert typed_docs(stored) == typed_docs(documents(lock.state))
    assert invariant_violations(plain_docs(stored), namespace_id=NAMESPACE) == ()
    for index, lease in enumerate(leases):
        if lease != winner:  # each loser's answer is the model's for a claim after the winner's
            assert answer_of(answers[index]) == model_answer(step(lock.state, claim(lease, t))[1])


def test_x402_journal_side_by_side(lock):
    ref = attrs.evolve(REF, operation_id="16fd2706-8baf-433b-82eb-8c7fada847da", provider="x402")
    assert lock.outcome(begin(T0)) == "begun_new"
    assert lock.outcome(begin(T0, ref)) == "begun_new"
    assert lock.outcome(claim(A, T0, ref)) == "consume_claimed"
    assert lock.outcome(record(A, 1, hosted(ref, at=T0), T0, ref)) == "consumed"
    assert lock.outcome(provider_intent(A, T0, ref)) == "provider_intent_taken"
    assert lock.outcome(report(A, 2, T0, ref)) == "submission_reported"
    assert lock.outcome(apply(A, 2, evidence("FAILED", ref), T0 + US, ref)) == "released"
