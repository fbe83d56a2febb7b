"""Fail-closed parsing of stored documents (docs/gateway-contract.md, "Documents", precedence step 4).

A record or event that is not exactly of this contract (other fields, other types, bounds, identity,
schema version, state/field rules the decisions rely on, a chain that disagrees) is `unrecognized_record`,
never repaired. Parsed values are plain: timestamps become aware UTC `datetime`s at microsecond precision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from . import constants as c
from . import identity
from .errors import GatewayError
from .inputs import ID, SHA, UUID4, is_int, matches

Check = Callable[[Any], bool]


def _ts(value: Any) -> bool:
    return (
        isinstance(value, datetime)
        and value.utcoffset() == timedelta(0)
        and getattr(value, "nanosecond", 0) % 1000 == 0  # only microseconds are ever written
    )


def _ms(value: Any) -> bool:
    return is_int(value) and 0 <= value <= c.MS_MAX


def _enum(*allowed: str) -> Check:
    return lambda value: type(value) is str and value in allowed


def _pattern(pattern) -> Check:
    return lambda value: matches(pattern, value)


def _int(low: int, high: int) -> Check:
    return lambda value: is_int(value) and low <= value <= high


def _bool(value: Any) -> bool:
    return type(value) is bool


_sha, _id = _pattern(SHA), _pattern(ID)
# name -> (check, nullable); declaration order is the record's field order.
RECORD_SCHEMA: dict[str, tuple[Check, bool]] = {
    "schema_version": (lambda v: is_int(v) and v == c.SCHEMA_VERSION, False),
    "journal_key": (_sha, False),
    "namespace_id": (_id, False),
    "gateway_binding_id": (_id, False),
    "operation_id": (_pattern(UUID4), False),
    "provider": (_enum(*c.PROVIDERS), False),
    "operation_identity": (_sha, False),
    "provider_input_digest": (_sha, False),
    "consume_idempotency_key": (_sha, False),
    "provider_create_idempotency_key": (_sha, False),
    "provider_confirm_idempotency_key": (_sha, False),
    "state": (_enum(*c.STATES), False),
    "revision": (_int(1, c.MAX_REVISION), False),
    "fence_epoch": (_int(0, c.MAX_FENCE), False),
    "lease_kind": (_enum(*c.LEASE_STATE), True),
    "lease_owner_fingerprint": (_sha, True),
    "lease_acquired_at": (_ts, True),
    "lease_expires_at": (_ts, True),
    "consume_intent_at": (_ts, True),
    "consume_transition_id": (_id, True),
    "permit_id": (_id, True),
    "permit_digest": (_sha, True),
    "consume_transitioned_at": (_ms, True),
    "settlement_deadline_at": (_ms, True),
    "provider_intent_at": (_ts, True),
    "claim_id": (_id, True),
    "provider_submission_id": (_id, True),
    "caller_outcome": (_enum(*c.CALLER_OUTCOMES), True),
    "submission_reported_at": (_ts, True),
    "payment_reference": (_id, True),
    "reconciliation_started_at": (_ts, True),
    "evidence_class": (_enum(*c.EVIDENCE_CLASSES), True),
    "independent_verification": (_bool, True),
    "evidence_verdict": (_enum(*c.DECISIVE_VERDICTS), True),
    "submission_fenced": (_bool, True),
    "terminal_path": (_enum(*c.TERMINAL_PATHS), True),
    "terminal_receipt_digest": (_sha, True),
    "processor_result": (_enum("COMMIT", "RELEASE"), True),
    "created_at": (_ts, False),
    "updated_at": (_ts, False),
}
RECORD_FIELDS = tuple(RECORD_SCHEMA)
EVENT_SCHEMA: dict[str, tuple[Check, bool]] = {
    "schema_version": RECORD_SCHEMA["schema_version"],
    "journal_key": (_sha, False),
    "revision": (_int(1, c.MAX_REVISION), False),
    "event_type": (_enum(*c.EVENT_TYPES), False),
    "from_state": (_enum(*c.STATES), True),
    "to_state": (_enum(*c.STATES), False),
    "fence_epoch": (_int(0, c.MAX_FENCE), False),
    "lease_kind": (_enum(*c.LEASE_STATE), True),
    "lease_expires_at": (_ts, True),
    "evidence_class": (_enum(*c.EVIDENCE_CLASSES), True),
    "independent_verification": (_bool, True),
    "region": (_id, False),
    "occurred_at": (_ts, False),
}
EVENT_FIELDS = tuple(EVENT_SCHEMA)
# What the record's current event repeats (G-INV-10).
_MIRRORED = ("fence_epoch", "lease_kind", "lease_expires_at", "evidence_class", "independent_verification")

PERMIT = ("consume_transition_id", "permit_id", "permit_digest", "consume_transitioned_at", "settlement_deadline_at")
REPORT = ("claim_id", "provider_submission_id", "caller_outcome", "submission_reported_at")
LEASE = ("lease_kind", "lease_owner_fingerprint", "lease_acquired_at", "lease_expires_at")
_AFTER_PERMIT = (
    "CONSUMED",
    "SUBMISSION_WINDOW_CLOSED",
    "PROVIDER_INTENT",
    "RECONCILE_INTENT",
    "OUTCOME_UNKNOWN",
    "COMMIT",
    "RELEASE",
)
_PROVIDER_OWNED = ("PROVIDER_INTENT", "RECONCILE_INTENT", "OUTCOME_UNKNOWN", "COMMIT", "RELEASE")


def unrecognized() -> GatewayError:
    return GatewayError("unrecognized_record")


def _require(condition: bool) -> None:
    if not condition:
        raise unrecognized()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):  # the client's DatetimeWithNanoseconds, as a plain datetime
        return datetime(*value.timetuple()[:6], value.microsecond, tzinfo=UTC)
    return value


def _parse(data: Any, schema: Mapping[str, tuple[Check, bool]]) -> dict[str, Any]:
    _require(isinstance(data, Mapping) and set(data) == set(schema))
    for name, (check, nullable) in schema.items():
        value = data[name]
        _require((nullable and value is None) or check(value))
    return {name: _plain(data[name]) for name in schema}


def _all_or_none(r: dict[str, Any], names: tuple[str, ...]) -> bool:
    present = [r[n] is not None for n in names]
    return all(present) or not any(present)


def _state_rules(r: dict[str, Any]) -> None:
    """The state/field rules the decisions dereference (a subset of G-INV-3..8; the full table is the
    model's `invariant_violations`, which the suites apply to stored documents)."""
    state = r["state"]
    for group in (PERMIT, REPORT, LEASE, ("evidence_class", "independent_verification")):
        _require(_all_or_none(r, group))
    if state == "BEGUN":
        _require(r["revision"] == 1 and r["fence_epoch"] == 0)
        _require(all(r[n] is None for n in RECORD_FIELDS[14:38]))
        return
    _require(r["lease_kind"] is not None and r["consume_intent_at"] is not None and r["fence_epoch"] >= 1)
    kind = r["lease_kind"]
    if state in c.LEASE_STATE.values():
        _require(c.LEASE_STATE[kind] == state)
    _require((state in _AFTER_PERMIT) == (r["permit_id"] is not None))
    if r["permit_id"] is not None:
        _require(r["settlement_deadline_at"] == r["consume_transitioned_at"] + c.SETTLEMENT_WINDOW_MS)
    _require((state in _PROVIDER_OWNED) == (r["provider_intent_at"] is not None))
    if r["claim_id"] is not None:
        _require(r["payment_reference"] is not None and r["evidence_class"] is not None)
    if state in ("RECONCILE_INTENT", "OUTCOME_UNKNOWN"):
        _require(r["reconciliation_started_at"] is not None)
    _require((state in ("COMMIT", "RELEASE")) == (r["terminal_path"] is not None))
    _require(_lease_arithmetic(r))
    times = [
        r[n]
        for n in ("created_at", "consume_intent_at", "provider_intent_at", "reconciliation_started_at", "updated_at")
        if r[n] is not None
    ]
    _require(times == sorted(times) and r["lease_acquired_at"] <= r["updated_at"])


def _lease_arithmetic(r: dict[str, Any]) -> bool:
    """G-INV-4: a stretched lease would let a stale owner act, so its length is part of the record's shape."""
    kind, acquired, expires = r["lease_kind"], r["lease_acquired_at"], r["lease_expires_at"]
    if kind == "provider":
        deadline = r["settlement_deadline_at"]
        return (
            deadline is not None
            and acquired == r["provider_intent_at"]
            and expires == min(acquired + c.PROVIDER_LEASE, c.ms_time(deadline))
        )
    return expires - acquired == (c.CONSUME_LEASE if kind == "consume" else c.RECONCILE_LEASE)


def parse_record(data: Any, namespace_id: str, journal_key: str) -> dict[str, Any]:
    """The stored record at `gatewayNamespaces/{namespace_id}/journals/{journal_key}`, checked."""
    r = _parse(data, RECORD_SCHEMA)
    _require(r["namespace_id"] == namespace_id and r["journal_key"] == journal_key)
    _require(identity.journal_key(r["namespace_id"], r["gateway_binding_id"], r["operation_id"]) == journal_key)
    keys = identity.derived_keys(r["operation_identity"])
    _require(
        keys
        == (r["consume_idempotency_key"], r["provider_create_idempotency_key"], r["provider_confirm_idempotency_key"])
    )
    _state_rules(r)
    return r


def parse_event(data: Any, journal_key: str, revision: int) -> dict[str, Any]:
    e = _parse(data, EVENT_SCHEMA)
    _require(e["journal_key"] == journal_key and e["revision"] == revision)
    _require((e["from_state"] is None) == (revision == 1))
    return e


def check_chain(record: dict[str, Any], current_event: Any, next_event: Any) -> None:
    """The record's current event exists and agrees with it; the next one does not exist yet."""
    _require(current_event is not None and next_event is None)
    e = parse_event(current_event, record["journal_key"], record["revision"])
    _require(e["to_state"] == record["state"] and e["occurred_at"] == record["updated_at"])
    _require(all(type(e[n]) is type(record[n]) and e[n] == record[n] for n in _MIRRORED))
