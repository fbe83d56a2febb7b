"""The gateway reference's pure parts without an emulator (docs/gateway-contract.md): its document schema
against the model's, the immutable error, input validation (before any Firestore call or clock reading),
fail-closed record parsing, and its decisions beside the model's `step` on every state the model's steered
generated runs reach (tests/systems/gateway/test_gateway_laws.py): same answer (exact JSON or code) and, when it writes,
the very record and event the model's documents hold. (Its identity copy is pinned to the golden vectors in
tests/systems/gateway/test_gateway_identity.py, beside the model's.)"""

from __future__ import annotations

import pickle
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from google.api_core import exceptions as api_exceptions
from hypothesis import HealthCheck, given, settings

import model.gateway as mg
import reference.gateway as gateway
from model.gateway import RECORD_FIELDS, TRANSITIONS, documents, step
from reference.gateway import ERROR_CODES, GatewayError, api, identity
from reference.gateway import begin_gateway_journal as begin_reference
from reference.gateway import record_consume_response as record_reference
from reference.gateway.api import prepare_call
from reference.gateway.decide import decide
from reference.gateway.records import EVENT_FIELDS, check_chain, parse_record
from reference.gateway.records import RECORD_FIELDS as REFERENCE_RECORD_FIELDS
from tests.systems.gateway.builders import (
    REF,
    T0,
    US,
    A,
    apply,
    begin,
    claim,
    evidence,
    hosted,
    provider_intent,
    record,
    report,
)
from tests.systems.gateway.lockstep import answer_of, model_answer, reference_call, typed_docs
from tests.systems.gateway.test_gateway_laws import runs, steered_run

# --- identity, schema, errors ---------------------------------------------------------------------------------
# The reference's identity copy is pinned to the golden vectors beside the model's, each on its own, in
# tests/systems/gateway/test_gateway_identity.py (test_identity_functions_reproduce_every_vector[reference]).


def test_document_schema_is_the_models_field_for_field_in_order():
    assert REFERENCE_RECORD_FIELDS == RECORD_FIELDS and len(RECORD_FIELDS) == 40
    assert EVENT_FIELDS == mg.EVENT_FIELDS and len(EVENT_FIELDS) == 13


def test_error_codes_are_the_contracts_and_the_error_is_immutable():
    assert set(ERROR_CODES) == set(mg.constants.ERROR_CODES)
    error = GatewayError("lease_rejected")
    for name in ("code", "args", "anything"):
        with pytest.raises(AttributeError):
            setattr(error, name, "x")
    with pytest.raises(AttributeError):
        del error.code
    with pytest.raises(AttributeError):
        error.__init__("terminal_conflict")
    with pytest.raises(ValueError):
        GatewayError("no_such_code")
    assert (error.code, repr(error)) == ("lease_rejected", "GatewayError('lease_rejected')")
    assert pickle.loads(pickle.dumps(error)).code == "lease_rejected"


# --- input validation -------------------------------------------------------------------------------------------


def _clock_never_read():
    raise AssertionError("the clock is read only after every input rule held")


def _begin_kwargs(**bend: Any) -> dict[str, Any]:
    _public, _operation, kwargs = reference_call(begin(T0))
    return {**kwargs, **bend}


INVALID_COMMON = [
    {"namespace": ""},
    {"namespace": "has/slash"},
    {"namespace": 7},
    {"gateway_binding_id": "-leading-dash"},
    {"gateway_binding_id": "x" * 129},
    {"operation_id": "0F8FAD5B-D9CB-469F-A165-70867728950E"},  # upper case is not the stored form
    {"operation_id": "0f8fad5b-d9cb-169f-a165-70867728950e"},  # version 1, not 4
    {"provider": "paypal"},
    {"request": ["not", "an", "object"]},
    {"request": {"amount": 1.5}},  # no floats
    {"request": {"n": 2**53}},
    {"request": {1: "non-string key"}},
    {"provider_input": {"blob": "x" * 16_400}},  # over 16 384 bytes of canonical JSON
    {"provider_input": {"lone": "\ud800"}},
    {"region": ""},
]


@pytest.mark.parametrize("bend", INVALID_COMMON, ids=lambda b: next(iter(b)))
def test_every_shared_input_rule_is_checked_before_firestore_and_the_clock(bend):
    with pytest.raises(GatewayError) as caught:
        begin_reference(db=None, clock=_clock_never_read, **_begin_kwargs(**bend))
    assert caught.value.code == "invalid_gateway_input"


def test_the_namespace_declaration_is_checked_first():
    with pytest.raises(GatewayError) as caught:
        begin_reference(db=None, clock=_clock_never_read, **_begin_kwargs(consistency="PER_REGION", namespace=""))
    assert caught.value.code == "namespace_not_linearizable"


def test_a_request_of_16384_bytes_is_accepted_and_one_more_is_not():
    filler = 16_384 - len('{"f":""}')
    call = prepare_call("begin", _begin_kwargs(request={"f": "x" * filler}))
    assert call.journal.journal_key == REF.journal_key
    with pytest.raises(GatewayError):
        prepare_call("begin", _begin_kwargs(request={"f": "x" * (filler + 1)}))


def _record_kwargs(**answer_bend: Any) -> dict[str, Any]:
    _public, _operation, kwargs = reference_call(record(A, 1, hosted(), T0))
    return {**kwargs, "answer": {**kwargs["answer"], **answer_bend}}


INVALID_ANSWERS = [
    {"kind": "MAYBE"},
    {"idempotency_key": "A" * 64},
    {"transitioned_at": True},  # a bool is not an int
    {"transitioned_at": -1},
    {"settlement_deadline_at": 253_402_300_800_000},  # past the ms maximum
    {"permit_id": None},  # a FRESH answer carries its whole permit group
    {"hosted_state": "EXPIRED"},  # FRESH answers come from a CONSUMED hosted state
    {"extra": 1},
]


@pytest.mark.parametrize("bend", INVALID_ANSWERS, ids=lambda b: next(iter(b)))
def test_hosted_answers_are_validated(bend):
    with pytest.raises(GatewayError) as caught:
        record_reference(db=None, clock=_clock_never_read, **_record_kwargs(**bend))
    assert caught.value.code == "invalid_gateway_input"


@pytest.mark.parametrize(
    "operation, op, bend",
    [
        ("record_consume", record(A, 1, hosted(), T0), {"expected_fence_epoch": -1}),
        ("record_consume", record(A, 1, hosted(), T0), {"expected_fence_epoch": True}),
        ("record_consume", record(A, 1, hosted(), T0), {"expected_fence_epoch": 10**10}),
        ("claim", claim(A, T0), {"lease_id": ""}),
        ("report", report(A, 2, T0), {"caller_outcome": "great"}),
        ("report", report(A, 2, T0), {"payment_reference": None}),
        ("apply_evidence", apply(A, 3, evidence(), T0), {"evidence": {**attrs.asdict(evidence()), "verdict": "OK"}}),
        (
            "apply_evidence",
            apply(A, 3, evidence(), T0),
            {"evidence": {**attrs.asdict(evidence()), "independent_verification": 1}},
        ),
        (
            "apply_evidence",
            apply(A, 3, evidence(), T0),
            {"evidence": {**attrs.asdict(evidence()), "receipt_digest": "r"}},
        ),
    ],
)
def test_operation_inputs_are_validated(operation, op, bend):
    _public, _operation, kwargs = reference_call(op)
    with pytest.raises(GatewayError) as caught:
        prepare_call(operation, {**kwargs, **bend})
    assert caught.value.code == "invalid_gateway_input"


def test_manual_terminal_validates_the_claimed_flag_it_never_trusts():
    _public, _operation, kwargs = reference_call(
        mg.ManualTerminal(
            journal=REF,
            processor_result="COMMIT",
            claimed_independent_verification=True,
            submission_fenced=True,
            now=T0,
        )
    )
    for bend in (
        {"claimed_independent_verification": "yes"},
        {"processor_result": "SETTLED"},
        {"submission_fenced": 0},
    ):
        with pytest.raises(GatewayError):
            prepare_call("manual_terminal", {**kwargs, **bend})
    assert prepare_call("manual_terminal", kwargs).args["claimed_independent_verification"] is True


# --- record parsing ------------------------------------------------------------------------------------------


def _committed_state():
    state = mg.GatewayState.empty()
    t = T0
    for op in (
        begin(t),
        claim(A, t),
        record(A, 1, hosted(at=t), t),
        provider_intent(A, t),
        report(A, 2, t),
        apply(A, 2, evidence(), t),
    ):
        state, result = step(state, op)
        assert result.code is None, result
    return state


def _record_and_events(state):
    docs = documents(state)
    path = f"gatewayNamespaces/{REF.namespace_id}/journals/{REF.journal_key}"
    events = {int(p.rsplit("/", 1)[1]): d for p, d in docs.items() if p.startswith(path + "/events/")}
    return dict(docs[path]), events


def test_a_models_record_and_chain_parse():
    stored, events = _record_and_events(_committed_state())
    parsed = parse_record(stored, REF.namespace_id, REF.journal_key)
    assert list(parsed) == list(RECORD_FIELDS) and parsed == stored
    check_chain(parsed, events[parsed["revision"]], None)


DAMAGE = [
    ("extra field", lambda r: r.update(note="x")),
    ("missing field", lambda r: r.pop("processor_result")),
    ("schema v1", lambda r: r.update(schema_version=1)),
    ("bool revision", lambda r: r.update(revision=True)),
    ("string fence", lambda r: r.update(fence_epoch="2")),
    ("unknown state", lambda r: r.update(state="DONE")),
    ("foreign key", lambda r: r.update(journal_key="0" * 64)),
    ("other namespace", lambda r: r.update(namespace_id="gw-other")),
    ("bent derived key", lambda r: r.update(consume_idempotency_key="0" * 64)),
    ("half lease", lambda r: r.update(lease_owner_fingerprint=None)),
    ("unbound deadline", lambda r: r.update(settlement_deadline_at=r["settlement_deadline_at"] + 1)),
    ("terminal without path", lambda r: r.update(terminal_path=None)),
    ("stretched lease", lambda r: r.update(lease_expires_at=r["lease_expires_at"] + US)),
    ("moved provider lease", lambda r: r.update(lease_acquired_at=r["lease_acquired_at"] - US)),
    ("naive time", lambda r: r.update(updated_at=r["updated_at"].replace(tzinfo=None))),
    ("int as ms string", lambda r: r.update(consume_transitioned_at=str(r["consume_transitioned_at"]))),
]


@pytest.mark.parametrize("damage", DAMAGE, ids=[name for name, _ in DAMAGE])
def test_damaged_records_are_unrecognized(damage):
    stored, _events = _record_and_events(_committed_state())
    damage[1](stored)
    with pytest.raises(GatewayError) as caught:
        parse_record(stored, REF.namespace_id, REF.journal_key)
    assert caught.value.code == "unrecognized_record"


@pytest.mark.parametrize(
    "bend",
    ["missing", "next exists", "other state", "other fence", "bool as int", "other time", "wrong revision"],
)
def test_a_chain_that_disagrees_is_unrecognized(bend):
    stored, events = _record_and_events(_committed_state())
    record_ = parse_record(stored, REF.namespace_id, REF.journal_key)
    current, following = dict(events[record_["revision"]]), None
    if bend == "missing":
        current = None
    elif bend == "next exists":
        following = dict(current, revision=record_["revision"] + 1)
    elif bend == "other state":
        current["to_state"] = "RELEASE"
    elif bend == "other fence":
        current["fence_epoch"] += 1
    elif bend == "bool as int":
        current["independent_verification"] = 1
    elif bend == "other time":
        current["occurred_at"] = current["occurred_at"] + US
    else:
        current["revision"] -= 1
    with pytest.raises(GatewayError) as caught:
        check_chain(record_, current, following)
    assert caught.value.code == "unrecognized_record"


# --- the decisions beside the model ---------------------------------------------------------------------------


def _reference_step(state, op) -> tuple[Any, dict | None, dict | None]:
    """What the reference's transaction body would answer and write, on the model state's documents."""
    _public, operation, kwargs = reference_call(op)
    ns, key = op.journal.namespace_id, op.journal.journal_key
    docs = documents(state)
    try:
        call = prepare_call(operation, kwargs, op.now)
        stored = docs.get(identity.record_path(ns, key))
        record_ = None
        if stored is not None:
            record_ = parse_record(stored, ns, key)
            revision = record_["revision"]
            check_chain(
                record_,
                docs.get(identity.event_path(ns, key, revision)),
                docs.get(identity.event_path(ns, key, revision + 1)),
            )
        decision = decide(call, record_)
    except GatewayError as error:
        return error.code, None, None
    return decision.output, decision.record, decision.event


def lockstep_step(state, op, hits: Counter):
    new_state, result = step(state, op)
    hits[result.transition] += 1
    if getattr(op, "commit_fails", False):
        # A rejected commit is the emulator's to show (tests/emulator); the decision in the body is the one the
        # model makes without the rejection, and nothing is applied.
        lockstep_step(state, attrs.evolve(op, commit_fails=False), Counter())
        return new_state
    got, written, event = _reference_step(state, op)
    assert answer_of(got) == model_answer(result), (result.transition, mg.describe_op(op, epoch=T0))
    assert (written is not None) == result.wrote, result.transition
    if result.wrote:
        ns, key = op.journal.namespace_id, op.journal.journal_key
        after = documents(new_state)
        expected = {
            identity.record_path(ns, key): after[identity.record_path(ns, key)],
            identity.event_path(ns, key, written["revision"]): after[identity.event_path(ns, key, written["revision"])],
        }
        produced = {
            identity.record_path(ns, key): written,
            identity.event_path(ns, key, written["revision"]): event,
        }
        assert typed_docs(produced) == typed_docs(expected), result.transition
        assert list(written) == list(RECORD_FIELDS)
    return new_state


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_the_reference_decides_as_the_model_on_generated_runs(numbers):
    steered_run(numbers, Counter(), lockstep_step)


def test_the_reference_decides_every_reachable_row_as_the_model():
    hits: Counter = Counter()

    @settings(
        max_examples=600, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(runs(length=60))
    def run(numbers):
        steered_run(numbers, hits, lockstep_step)

    run()
    reachable = {row.id for row in TRANSITIONS if row.reachable}
    # any.commit_failed is the harness's injected rejection: the emulator tests cover commit failures
    assert reachable - set(hits) <= {"any.commit_failed"}, sorted(reachable - set(hits))


def test_api_module_exports_ten_operations():
    assert len(gateway.OPERATIONS) == 10 and all(callable(getattr(gateway, name)) for name in gateway.OPERATIONS)
    assert callable(api.prepare_call)


def test_outputs_are_frozen_and_their_json_is_the_contracts_key_order():
    call = prepare_call("begin", _begin_kwargs(), T0)
    output = decide(call, None).output
    with pytest.raises(AttributeError):
        output.outcome = "begun_existing"
    assert output.to_json() == {"schema_version": 2, "outcome": "begun_new", "state": "BEGUN"}
    assert list(output.to_json()) == ["schema_version", "outcome", "state"]


@pytest.mark.parametrize("reading", ["naive", "other zone", "raises", "not a datetime"])
def test_an_untrusted_clock_is_gateway_unavailable_before_firestore(reading):
    def clock():
        if reading == "raises":
            raise OSError("no time")
        return {
            "naive": datetime(2026, 3, 1, 12),
            "other zone": datetime(2026, 3, 1, 12, tzinfo=timezone(timedelta(hours=1))),
            "not a datetime": 1_772_366_400.0,
        }[reading]

    with pytest.raises(GatewayError) as caught:
        begin_reference(db=None, clock=clock, **_begin_kwargs())
    assert caught.value.code == "gateway_unavailable"


class _FailingDb:
    """A client whose every transaction fails as Firestore being unreachable does."""

    def transaction(self, **_kwargs):
        raise api_exceptions.ServiceUnavailable("down")


@pytest.mark.parametrize("public", ["begin_gateway_journal", "get_gateway_journal"])
def test_a_firestore_failure_is_gateway_unavailable_and_never_chained(public):
    with pytest.raises(GatewayError) as caught:
        getattr(gateway, public)(db=_FailingDb(), clock=lambda: T0, **_begin_kwargs())
    assert caught.value.code == "gateway_unavailable"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
