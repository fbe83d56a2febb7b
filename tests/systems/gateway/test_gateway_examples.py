"""Worked examples of the gateway-journal model: the main rows of every operation, the equality rules at
the lease expiry and the settlement deadline, the safety rows (never a second permit or provider attempt,
no release after the deadline or unfenced after abandonment, a caller hint never decides), invariants that
catch damaged documents, and the table's shape (each row id produced by exactly one branch of step)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from model.gateway import (
    EDGES,
    EVENT_FIELDS,
    RECORD_FIELDS,
    TRANSITIONS,
    CorruptRecord,
    GatewayState,
    describe_op,
    describe_state,
    documents,
    history_violations,
    invariant_violations,
    ms_time,
    step,
)
from tests.systems.gateway.builders import (
    CHANGED_INPUT,
    MS,
    NAMESPACE,
    REF,
    T0,
    UNDECLARED,
    US,
    X402,
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

SEC = timedelta(seconds=1)
KEY = (REF.namespace_id, REF.journal_key)


def run(*ops, state=None):
    """Step each op; returns the final state and the results; checks the invariants after every step."""
    state = state or GatewayState.empty()
    results = []
    for op in ops:
        before = documents(state)
        state, result = step(state, op)
        results.append(result)
        docs = documents(state)
        assert invariant_violations(docs, namespace_id=NAMESPACE) == (), describe_state(state, epoch=T0)
        assert history_violations(before, docs) == ()
    return state, results


def rows(results):
    return [r.transition for r in results]


def journal(state):
    return state.get(KEY)


# A journal consumed at T0+1 s (permit deadline T0+901 s), with provider intent taken by B at T0+2 s.
CONSUMED_AT = T0 + SEC
DEADLINE = ms_time(hosted(at=CONSUMED_AT).settlement_deadline_at)
CONSUMED, _ = run(begin(), claim(A, T0), record(A, 1, hosted(at=CONSUMED_AT), CONSUMED_AT))
PROVIDER, _ = run(provider_intent(B, T0 + 2 * SEC), state=CONSUMED)
PROVIDER_EXPIRES = T0 + 2 * SEC + timedelta(seconds=120)
REPORTED, _ = run(report(B, 2, T0 + 3 * SEC), state=PROVIDER)
RECONCILING, _ = run(reconcile(C, PROVIDER_EXPIRES), state=REPORTED)  # fence 3, lease to +60 s


def test_begin_then_exact_begin_then_changed_input_is_a_binding_conflict():
    state, results = run(begin(), begin(T0 + SEC), begin(T0 + SEC, CHANGED_INPUT))
    assert rows(results) == ["begin.new", "begin.existing", "any.binding_conflict"]
    assert results[0].output == {"schema_version": 2, "outcome": "begun_new", "state": "BEGUN"}
    assert results[2].code == "binding_conflict"
    assert len(documents(state)) == 2  # the record and its first event


def test_undeclared_namespace_and_absent_journal():
    _, results = run(begin(ref=UNDECLARED), get(T0), claim(A, T0))
    assert [r.code for r in results] == ["namespace_not_linearizable", "journal_not_begun", "journal_not_begun"]


def test_corrupt_record_answers_unrecognized_record():
    state = GatewayState.empty().with_record(KEY, CorruptRecord("v1 record"))
    assert step(state, get(T0))[1].transition == "any.corrupt"
    assert step(state, begin())[1].code == "unrecognized_record"


def test_claim_election_one_winner_others_pending_and_the_winner_retries():
    state, results = run(begin(), claim(A, T0), claim(B, T0), claim(A, T0 + SEC))
    assert rows(results) == ["begin.new", "claim.first", "claim.held_other", "claim.held_same"]
    won = results[1].output
    assert won["fence_epoch"] == 1 and won["consume_idempotency_key"] == REF.consume_idempotency_key
    assert results[2].output == {"schema_version": 2, "outcome": "pending", "state": "CONSUME_INTENT"}
    assert results[3].output == won


def test_lost_response_recovery_at_expiry_equality_keeps_the_key_and_the_intent_time():
    expires = T0 + timedelta(seconds=30)
    state, results = run(begin(), claim(A, T0), claim(B, expires - US), claim(B, expires))
    assert rows(results)[2:] == ["claim.held_other", "claim.recovery"]
    recovered = results[3].output
    assert recovered["outcome"] == "consume_recovery_claimed" and recovered["fence_epoch"] == 2
    assert recovered["consume_idempotency_key"] == REF.consume_idempotency_key  # never a new permit
    assert journal(state).consume_intent_at == T0
    # The stale first owner's late answer is rejected; the recovering owner records the idempotent replay.
    replay = hosted(at=T0 + SEC, kind="IDEMPOTENT_CONSUMED")
    state, results = run(record(A, 1, replay, expires + US), record(B, 2, replay, expires + US), state=state)
    assert rows(results) == ["rcr.no_lease", "rcr.consumed"]
    assert step(state, claim(C, expires + 2 * US))[1].transition == "claim.passed"


def test_record_consume_rows():
    state, _ = run(begin(), claim(A, T0))
    at = T0 + SEC
    cases = [
        (record(A, 1, hosted(at=at), T0 + timedelta(seconds=30)), "rcr.expired"),
        (record(B, 1, hosted(at=at), at), "rcr.no_lease"),
        (record(A, 1, hosted(at=at, idempotency_key="0" * 64), at), "rcr.mismatch"),
        (record(A, 1, hosted(at=at, kind="OTHER_STATE"), at), "rcr.unresolved"),
        (
            record(A, 1, hosted(at=at, settlement_deadline_at=hosted(at=at).settlement_deadline_at + 1), at),
            "rcr.unbound",
        ),
        (record(A, 1, hosted(at=at + MS), at), "rcr.unbound"),  # transitioned after the recording
        (record(A, 1, hosted(at=T0 - MS), at), "rcr.unbound"),  # transitioned before the local claim
        (record(A, 1, hosted(at=at), at), "rcr.consumed"),
    ]
    for op, row in cases:
        assert step(state, op)[1].transition == row, describe_op(op, epoch=T0)
    assert step(state, record(A, 1, hosted(at=at, kind="OTHER_STATE"), at))[1].output["outcome"] == "consume_unresolved"
    consumed, results = run(record(A, 1, hosted(at=at), at), record(A, 1, hosted(at=at), at + SEC), state=state)
    assert rows(results) == ["rcr.consumed", "rcr.retry_consumed"]
    assert results[0].output == results[1].output


def test_recovery_after_the_deadline_closes_the_window_and_a_fresh_answer_is_refused():
    late = T0 + timedelta(minutes=15)  # the deadline of a transition at T0
    state, _ = run(begin(), claim(A, T0), claim(B, late))
    assert step(state, record(B, 2, hosted(at=T0), late))[1].transition == "rcr.fresh_not_future"
    replay = hosted(at=T0, kind="IDEMPOTENT_CONSUMED")
    state, results = run(record(B, 2, replay, late), record(B, 2, replay, late + SEC), state=state)
    assert rows(results) == ["rcr.replay_elapsed", "rcr.retry_closed"]
    assert journal(state).state == "SUBMISSION_WINDOW_CLOSED"
    assert step(state, provider_intent(C, late))[1].transition == "tpi.closed"  # never unlocks the provider


def test_provider_intent_rows_and_the_lease_cap_at_the_deadline():
    assert step(CONSUMED, provider_intent(B, DEADLINE))[1].transition == "tpi.window_elapsed"
    near = DEADLINE - timedelta(seconds=10)
    capped, result = step(CONSUMED, provider_intent(B, near))
    assert result.transition == "tpi.first" and journal(capped).lease_expires_at == DEADLINE
    _, results = run(provider_intent(B, T0 + 3 * SEC), provider_intent(C, T0 + 3 * SEC), state=PROVIDER)
    assert rows(results) == ["tpi.held_same", "tpi.held_other"]
    assert results[1].output == {"schema_version": 2, "outcome": "pending", "state": "PROVIDER_INTENT"}
    assert step(PROVIDER, provider_intent(B, PROVIDER_EXPIRES))[1].transition == "tpi.abandoned"  # never resubmitted
    state, _ = run(begin(), claim(A, T0))
    assert step(state, provider_intent(B, T0))[1].transition == "tpi.locked"
    assert step(RECONCILING, provider_intent(B, PROVIDER_EXPIRES))[1].transition == "tpi.reconciling"


def test_report_rows():
    assert step(PROVIDER, report(C, 2, T0 + 3 * SEC))[1].transition == "rps.no_lease"
    assert step(PROVIDER, report(B, 2, PROVIDER_EXPIRES))[1].transition == "rps.expired"
    result = step(PROVIDER, report(B, 2, T0 + 3 * SEC))[1]
    assert result.transition == "rps.first"
    assert result.output["evidence_class"] == "CALLER_ASSERTED" and result.output["independent_verification"] is False
    assert journal(REPORTED).state == "PROVIDER_INTENT"  # a hint does not decide
    assert step(REPORTED, report(B, 2, PROVIDER_EXPIRES))[1].transition == "rps.retry"  # even after the lease
    assert step(REPORTED, report(B, 2, T0 + 4 * SEC, reference="pi_2"))[1].code == "report_conflict"


def test_reconcile_lease_rows():
    assert step(REPORTED, reconcile(C, PROVIDER_EXPIRES - US))[1].transition == "trl.submission_active"
    assert journal(RECONCILING).reconciliation_started_at == PROVIDER_EXPIRES
    later = PROVIDER_EXPIRES + timedelta(seconds=60)
    _, results = run(reconcile(C, later - US), reconcile(A, later - US), reconcile(A, later), state=RECONCILING)
    assert rows(results) == ["trl.held_same", "trl.held_other", "trl.takeover"]
    assert results[2].output["fence_epoch"] == 4 and results[2].output["payment_reference"] == "pi_1"
    assert step(CONSUMED, reconcile(C, T0 + 2 * SEC))[1].code == "not_applicable"


def test_provider_owner_commits_or_releases_on_verified_evidence_only():
    held = T0 + 4 * SEC
    assert step(PROVIDER, apply(B, 2, evidence(), held))[1].transition == "ase.not_reported"
    hint = evidence(evidence_class="CALLER_ASSERTED", independent_verification=False)
    assert step(REPORTED, apply(B, 2, hint, held))[1].transition == "ase.continues"
    assert step(REPORTED, apply(B, 2, evidence(verdict="PENDING"), held))[1].transition == "ase.continues"
    assert step(REPORTED, apply(B, 2, evidence(evidence_class="CHAIN_FINALIZED"), held))[1].transition == "ase.binding"
    assert step(REPORTED, apply(B, 2, evidence(reference="pi_2"), held))[1].transition == "ase.reference"
    assert step(REPORTED, apply(B, 2, evidence(receipt_digest=None), held))[1].transition == "ase.receipt"
    committed, results = run(apply(B, 2, evidence(), held), apply(B, 2, evidence(), PROVIDER_EXPIRES), state=REPORTED)
    assert rows(results) == ["ase.commit.provider_owner", "ase.retry_committed"]
    assert results[0].output["terminal_path"] == "provider_owner"
    released = step(REPORTED, apply(B, 2, evidence("FAILED", submission_fenced=False), held))[1]
    assert released.transition == "ase.release.provider_owner"  # the held owner needs no fence
    assert step(committed, apply(B, 2, evidence("FAILED"), held))[1].code == "terminal_conflict"


def test_reconciliation_commits_late_but_never_releases_late_or_unfenced():
    held = PROVIDER_EXPIRES + SEC
    assert step(RECONCILING, apply(C, 3, evidence(), held))[1].transition == "ase.commit.reconcile"
    released = step(RECONCILING, apply(C, 3, evidence("FAILED"), held))[1]
    assert released.transition == "ase.release.reconcile"
    unfenced = evidence("FAILED", submission_fenced=False, receipt_digest=None)
    parked, result = step(RECONCILING, apply(C, 3, unfenced, held))
    assert result.transition == "ase.unknown.unfenced" and journal(parked).state == "OUTCOME_UNKNOWN"
    assert step(parked, apply(C, 3, unfenced, held + SEC))[1].transition == "ase.retry_unknown"
    # After the deadline: a reconcile lease taken at D; failure parks, a confirmed settlement commits.
    late, _ = run(reconcile(A, DEADLINE), state=parked)
    assert (
        step(late, apply(A, 4, evidence("FAILED", receipt_digest=None), DEADLINE))[1].transition == "ase.unknown.late"
    )
    assert step(late, apply(A, 4, evidence(), DEADLINE))[1].transition == "ase.commit.reconcile_late"
    assert step(late, apply(A, 4, evidence("FAILED"), DEADLINE))[1].transition == "ase.receipt"


def test_not_submitted_needs_no_bound_reference():
    unreported, _ = run(reconcile(C, PROVIDER_EXPIRES), state=PROVIDER)
    held = PROVIDER_EXPIRES + SEC
    assert step(unreported, apply(C, 3, evidence("NOT_SUBMITTED", reference=None), held))[1].transition == (
        "ase.release.reconcile"
    )
    assert step(RECONCILING, apply(C, 3, evidence("NOT_SUBMITTED", reference=None), held))[1].transition == (
        "ase.reference"  # the report bound a payment reference: "not submitted" contradicts it
    )


def test_manual_terminal_rows():
    assert step(CONSUMED, manual("COMMIT", T0 + 2 * SEC))[1].code == "not_applicable"
    assert step(REPORTED, manual("COMMIT", T0 + 4 * SEC))[1].transition == "mt.lease_active"
    abandoned = PROVIDER_EXPIRES
    assert step(REPORTED, manual("RELEASE", abandoned, fenced=False))[1].transition == "mt.release_unfenced"
    assert step(REPORTED, manual("RELEASE", DEADLINE))[1].transition == "mt.release_late"
    state, results = run(manual("RELEASE", abandoned), manual("RELEASE", abandoned + SEC), state=REPORTED)
    assert rows(results) == ["mt.release", "mt.retry_released"]
    j = journal(state)
    assert (j.evidence_class, j.independent_verification, j.terminal_path) == ("CALLER_ASSERTED", False, "manual")
    assert step(state, manual("COMMIT", abandoned + SEC))[1].code == "terminal_conflict"
    committed, result = step(REPORTED, manual("COMMIT", DEADLINE, claimed=True))
    assert result.transition == "mt.commit" and journal(committed).independent_verification is False


def test_close_window_rows_and_deadline_equality():
    assert step(CONSUMED, close(DEADLINE - US))[1].output["outcome"] == "window_open"
    closed, results = run(close(DEADLINE), close(DEADLINE + SEC), state=CONSUMED)
    assert rows(results) == ["csw.close", "csw.retry"]
    assert step(PROVIDER, close(DEADLINE))[1].transition == "csw.other"  # provider ownership: never closes


def test_get_reports_lease_activity_with_equality_expired():
    before = step(PROVIDER, get(PROVIDER_EXPIRES - US))[1].output
    at = step(PROVIDER, get(PROVIDER_EXPIRES))[1].output
    assert before["lease_active"] is True and at["lease_active"] is False
    assert list(at) == [
        "schema_version",
        "outcome",
        "state",
        "revision",
        "fence_epoch",
        "lease_kind",
        "lease_active",
        "settlement_deadline_at",
    ]
    assert type(at["settlement_deadline_at"]) is int


def test_earlier_clock_never_writes_and_commit_failure_applies_nothing():
    assert step(CONSUMED, provider_intent(B, CONSUMED_AT - US))[1].transition == "any.clock_earlier"
    state, result = step(CONSUMED, provider_intent(B, T0 + 2 * SEC, commit_fails=True))
    assert state is CONSUMED and result.transition == "any.commit_failed"


def test_x402_takes_chain_finalized_evidence():
    state, _ = run(
        begin(ref=X402),
        claim(A, T0, X402),
        record(A, 1, hosted(X402, at=T0), T0, X402),
        provider_intent(B, T0, X402),
        report(B, 2, T0, X402),
    )
    assert step(state, apply(B, 2, evidence(ref=X402), T0, X402))[1].transition == "ase.commit.provider_owner"
    assert step(state, apply(B, 2, evidence(ref=REF), T0, X402))[1].transition == "ase.binding"


# Invariants must be able to fail: damaged documents are caught.
def _damaged(state, **changes):
    docs = {path: dict(doc) for path, doc in documents(state).items()}
    path = next(p for p in docs if p.count("/") == 3)
    docs[path].update(changes)
    return docs


@pytest.mark.parametrize(
    ("changes", "invariant"),
    [
        ({"independent_verification": 1}, "G-INV-1"),  # an int is not a bool
        ({"consume_idempotency_key": "0" * 64}, "G-INV-2"),
        ({"evidence_class": "CALLER_ASSERTED", "independent_verification": False}, "G-INV-8"),
        ({"submission_fenced": False}, "G-INV-7"),
        ({"updated_at": DEADLINE}, "G-INV-7"),
    ],
)
def test_invariants_catch_damaged_release_documents(changes, invariant):
    released, _ = run(apply(C, 3, evidence("FAILED"), PROVIDER_EXPIRES + SEC), state=RECONCILING)
    found = {v.invariant for v in invariant_violations(_damaged(released, **changes), namespace_id=NAMESPACE)}
    assert invariant in found


def test_invariants_catch_a_second_namespace_and_a_regressed_fence():
    assert {v.invariant for v in invariant_violations(documents(CONSUMED), namespace_id="gw-other")} == {"G-INV-12"}
    found = history_violations(documents(PROVIDER), _damaged(REPORTED, fence_epoch=3))
    assert "G-INV-9" in {v.invariant for v in found}
    provider_lease = _damaged(PROVIDER, lease_expires_at=PROVIDER_EXPIRES + SEC)
    assert "G-INV-4" in {v.invariant for v in invariant_violations(provider_lease, namespace_id=NAMESPACE)}


def test_table_shape():
    assert len(TRANSITIONS) == 80  # the contract's 78 and the two harness fault rows
    assert {row.id for row in TRANSITIONS if not row.reachable} == {
        "any.corrupt",
        "any.overflow",
        "fault.injected",
        "fault.not_applicable",
    }
    assert len(RECORD_FIELDS) == 40 and len(EVENT_FIELDS) == 13
    assert all(row.writes == bool(row.edges) for row in TRANSITIONS)
    assert {edge[1] for edge in EDGES} >= {"journal_begun", "consume_intent_claimed", "manual_released"}


def test_every_row_id_is_produced_by_exactly_one_branch_of_step():
    source = "".join(
        (Path(__file__).parents[3] / "model" / "gateway" / name).read_text()
        for name in ("step.py", "settle.py", "writes.py", "faults.py")
    )
    literals = re.findall(r'"((?:any|begin|get|claim|rcr|tpi|rps|trl|ase|mt|csw|fault)\.[a-z_.]+)"', source)
    assert sorted(literals) == sorted(row.id for row in TRANSITIONS)


def test_descriptions_name_the_holder_and_relative_times():
    text = describe_state(REPORTED, epoch=T0)
    assert "PROVIDER_INTENT rev=5 fence=2" in text and "report=(pi_1 succeeded)" in text
    assert describe_op(report(B, 2, T0 + 3 * SEC), epoch=T0).startswith("rps(")
    assert "T+3.000000s" in describe_op(report(B, 2, T0 + 3 * SEC), epoch=T0)
    assert attrs.evolve(REF).journal_key == REF.journal_key


def test_the_contract_page_lists_every_row():
    page = (Path(__file__).parents[3] / "docs" / "gateway-contract.md").read_text("utf-8")
    missing = [row.id for row in TRANSITIONS if f"`{row.id}`" not in page]
    assert missing == []
