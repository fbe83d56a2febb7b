"""The ten public operations (docs/gateway-contract.md, "Operations"): check the namespace declaration,
validate, read the clock once, run one transaction (read record, its current event and the next), decide,
write the record and its new event together, return a frozen output (or raise GatewayError)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from reference.clock import Clock, read_trusted_clock, system_clock

from . import constants as c
from .decide import Call, decide
from .errors import GatewayError
from .identity import event_path, record_path
from .inputs import (
    prepare_answer,
    prepare_bool,
    prepare_enum,
    prepare_evidence,
    prepare_fence,
    prepare_id,
    prepare_journal,
)
from .outputs import GatewayOutput
from .records import check_chain, parse_record, unrecognized
from .runner import NEEDS_WRITE, AttemptLog, run_gateway_transaction, run_read_only


def _read(transaction: Any, db: Any, paths: Iterable[str]) -> list[Mapping[str, Any] | None]:
    found: dict[str, Mapping[str, Any] | None] = dict.fromkeys(paths)
    for snapshot in transaction.get_all([db.document(path) for path in found]):
        if snapshot.exists:
            found[snapshot.reference.path] = snapshot.to_dict()
    return list(found.values())


def _body(db: Any, call: Call, *, read_only: bool = False) -> Callable[[Any], Any]:
    j = call.journal
    ns, key = j.namespace_id, j.journal_key

    def body(transaction: Any) -> Any:
        stored, first_event = _read(transaction, db, (record_path(ns, key), event_path(ns, key, 1)))
        record = None
        if stored is None:
            if first_event is not None:
                raise unrecognized()  # an orphan chain
        else:
            record = parse_record(stored, ns, key)
            revision = record["revision"]
            current, following = _read(
                transaction, db, (event_path(ns, key, revision), event_path(ns, key, revision + 1))
            )
            check_chain(record, current, following)
        decision = decide(call, record)
        if decision.record is None:
            return decision.output
        if read_only:
            return NEEDS_WRITE
        record_ref = db.document(record_path(ns, key))
        if decision.begins:
            transaction.create(record_ref, decision.record)
        else:
            transaction.set(record_ref, decision.record)
        transaction.create(db.document(event_path(ns, key, decision.record["revision"])), decision.event)
        return decision.output

    return body


def _now(clock: Clock) -> datetime:
    return read_trusted_clock(clock, lambda: GatewayError("gateway_unavailable"))


_LEASED = ("claim", "record_consume", "take_provider_intent", "report", "take_reconcile_lease", "apply_evidence")
_FENCED = ("record_consume", "report", "apply_evidence")


def prepare_call(operation: str, kwargs: Mapping[str, Any], now: datetime | None = None) -> Call:
    """Precedence steps 1 and 2: the namespace declaration first, then every input rule, all before
    Firestore. `now` is filled in by the caller (the clock is read after validation)."""
    if kwargs["consistency"] != c.LINEARIZABLE:
        raise GatewayError("namespace_not_linearizable")
    j = prepare_journal(
        namespace=kwargs["namespace"],
        gateway_binding_id=kwargs["gateway_binding_id"],
        operation_id=kwargs["operation_id"],
        provider=kwargs["provider"],
        request=kwargs["request"],
        provider_input=kwargs["provider_input"],
        region=kwargs["region"],
    )
    owner = j.owner(kwargs["lease_id"]) if operation in _LEASED else None
    fence = prepare_fence(kwargs["expected_fence_epoch"]) if operation in _FENCED else None
    args: dict[str, Any] = {}
    if operation == "record_consume":
        args["answer"] = prepare_answer(kwargs["answer"])
    elif operation == "report":
        args["report"] = (
            prepare_id(kwargs["claim_id"]),
            prepare_id(kwargs["provider_submission_id"]),
            prepare_id(kwargs["payment_reference"]),
            prepare_enum(kwargs["caller_outcome"], c.CALLER_OUTCOMES),
        )
    elif operation == "apply_evidence":
        args["evidence"] = prepare_evidence(kwargs["evidence"])
    elif operation == "manual_terminal":
        args["processor_result"] = prepare_enum(kwargs["processor_result"], ("COMMIT", "RELEASE"))
        # validated, then deliberately never consulted: a manual terminal is always caller-asserted (G25)
        args["claimed_independent_verification"] = prepare_bool(kwargs["claimed_independent_verification"])
        args["submission_fenced"] = prepare_bool(kwargs["submission_fenced"])
    return Call(operation, j, now, owner, fence, args)


def _call(operation: str, kwargs: dict[str, Any]) -> GatewayOutput:
    call = replace(prepare_call(operation, kwargs), now=_now(kwargs["clock"]))
    db, attempt_log = kwargs["db"], kwargs["attempt_log"]
    if operation == "get":
        return run_read_only(db, _body(db, call))
    return run_gateway_transaction(db, _body(db, call), look=_body(db, call, read_only=True), log=attempt_log)


def begin_gateway_journal(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("begin", locals())


def get_gateway_journal(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("get", locals())


def claim_consume_intent(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    lease_id: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("claim", locals())


def record_consume_response(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    lease_id: Any,
    expected_fence_epoch: Any,
    answer: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("record_consume", locals())


def take_provider_intent(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    lease_id: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("take_provider_intent", locals())


def report_provider_submission(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    lease_id: Any,
    expected_fence_epoch: Any,
    claim_id: Any,
    provider_submission_id: Any,
    payment_reference: Any,
    caller_outcome: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("report", locals())


def take_reconcile_lease(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    lease_id: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("take_reconcile_lease", locals())


def apply_settlement_evidence(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    lease_id: Any,
    expected_fence_epoch: Any,
    evidence: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("apply_evidence", locals())


def record_manual_terminal(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    processor_result: Any,
    claimed_independent_verification: Any,
    submission_fenced: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("manual_terminal", locals())


def close_submission_window(
    *,
    db: Any,
    namespace: Any,
    consistency: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
    clock: Clock = system_clock,
    attempt_log: AttemptLog | None = None,
) -> GatewayOutput:
    return _call("close_window", locals())
