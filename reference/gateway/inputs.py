"""Input validation, all before any Firestore call (docs/gateway-contract.md, precedence step 2; G33).

By exact type (`type(x) is dict`, never isinstance), as the command journal's: a subclass could show the
validator one value and the hasher another. Request and provider input are copied into plain JSON values
while they are checked, so later mutation by the caller cannot change what was hashed. Every broken rule is
`invalid_gateway_input`; which rule broke is never said (the message is fixed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import constants as c
from . import identity
from .errors import GatewayError

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
SHA = re.compile(r"[0-9a-f]{64}")
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 16
ANSWER_FIELDS = (
    "kind",
    "idempotency_key",
    "operation_identity",
    "hosted_state",
    "transition_id",
    "permit_id",
    "permit_digest",
    "transitioned_at",
    "settlement_deadline_at",
)
EVIDENCE_FIELDS = (
    "evidence_class",
    "independent_verification",
    "verdict",
    "operation_identity",
    "payment_reference",
    "submission_fenced",
    "receipt_digest",
)


def _require(condition: bool) -> None:
    if not condition:
        raise GatewayError("invalid_gateway_input")


def is_int(value: object) -> bool:
    return type(value) is int  # bool is refused


def matches(pattern: re.Pattern[str], value: object) -> bool:
    return type(value) is str and pattern.fullmatch(value) is not None


def _plain(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1  # every JSON value costs at least one byte: bounds shared-reference blow-ups
    _require(budget[0] >= 0)
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        _require(-MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER)
        return value
    if kind in (dict, list, tuple):
        _require(depth < MAX_DEPTH)  # a cycle ends here too
        if kind is dict:
            _require(all(type(key) is str for key in value))
            return {key: _plain(item, depth + 1, budget) for key, item in value.items()}
        return [_plain(item, depth + 1, budget) for item in value]
    raise GatewayError("invalid_gateway_input")  # floats, bytes, sets, custom mappings, ...


def canonical_object(value: Any) -> str:
    """A JSON object of plain values, as canonical JSON of at most 16 384 UTF-8 bytes."""
    _require(type(value) is dict)
    text = identity.canonical_json(_plain(value, 0, [c.MAX_JSON_BYTES]))
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates have no UTF-8 form
        raise GatewayError("invalid_gateway_input") from None
    _require(size <= c.MAX_JSON_BYTES)
    return text


def prepare_id(value: Any) -> str:
    _require(matches(ID, value))
    return value


@dataclass(frozen=True, slots=True)
class PreparedJournal:
    """What every call names, validated, with every identity derived from it."""

    namespace_id: str
    gateway_binding_id: str
    operation_id: str
    provider: str
    region: str
    journal_key: str
    provider_input_digest: str
    operation_identity: str
    consume_idempotency_key: str
    provider_create_idempotency_key: str
    provider_confirm_idempotency_key: str

    def owner(self, lease_id: Any) -> str:
        return identity.lease_owner_fingerprint(self.journal_key, prepare_id(lease_id))


def prepare_journal(
    *,
    namespace: Any,
    gateway_binding_id: Any,
    operation_id: Any,
    provider: Any,
    request: Any,
    provider_input: Any,
    region: Any,
) -> PreparedJournal:
    namespace, binding, region = prepare_id(namespace), prepare_id(gateway_binding_id), prepare_id(region)
    _require(matches(UUID4, operation_id))
    _require(type(provider) is str and provider in c.PROVIDERS)
    request_text, input_text = canonical_object(request), canonical_object(provider_input)
    key = identity.journal_key(namespace, binding, operation_id)
    input_digest = identity.provider_input_digest(input_text)
    op_identity = identity.operation_identity(key, provider, request_text, input_digest)
    return PreparedJournal(
        namespace,
        binding,
        operation_id,
        provider,
        region,
        key,
        input_digest,
        op_identity,
        *identity.derived_keys(op_identity),
    )


def prepare_fence(value: Any) -> int:
    # 0 is allowed: it is the fence a BEGUN journal stores, held by no lease, so it answers lease_rejected
    # as any stale fence does (the model generates it; the contract bounds only the maximum).
    _require(is_int(value) and 0 <= value <= c.MAX_FENCE)
    return value


def prepare_bool(value: Any) -> bool:
    _require(type(value) is bool)
    return value


def prepare_enum(value: Any, allowed: tuple[str, ...]) -> str:
    _require(type(value) is str and value in allowed)
    return value


def _ms(value: Any) -> bool:
    return is_int(value) and 0 <= value <= c.MS_MAX


def prepare_answer(value: Any) -> dict[str, Any]:
    """The simulated hosted CONSUME answer: a dict with exactly ANSWER_FIELDS."""
    _require(type(value) is dict and tuple(sorted(value)) == tuple(sorted(ANSWER_FIELDS)))
    a = dict(value)
    _require(type(a["kind"]) is str and a["kind"] in c.ANSWER_KINDS)
    _require(matches(SHA, a["idempotency_key"]) and matches(SHA, a["operation_identity"]))
    _require(matches(ID, a["hosted_state"]))
    permit = (a["transition_id"], a["permit_id"], a["permit_digest"], a["transitioned_at"], a["settlement_deadline_at"])
    checks = (lambda v: matches(ID, v), lambda v: matches(ID, v), lambda v: matches(SHA, v), _ms, _ms)
    if a["kind"] == "OTHER_STATE":
        # Not consumed: whatever permit fields it echoes are never recorded (a well-typed value or null).
        _require(a["hosted_state"] != "CONSUMED")
        _require(all(v is None or check(v) for check, v in zip(checks, permit, strict=True)))
    else:
        _require(a["hosted_state"] == "CONSUMED")
        _require(all(check(v) for check, v in zip(checks, permit, strict=True)))
    return a


def prepare_evidence(value: Any) -> dict[str, Any]:
    """The simulated settlement evidence: a dict with exactly EVIDENCE_FIELDS."""
    _require(type(value) is dict and tuple(sorted(value)) == tuple(sorted(EVIDENCE_FIELDS)))
    e = dict(value)
    prepare_enum(e["evidence_class"], c.EVIDENCE_CLASSES)
    prepare_bool(e["independent_verification"])
    prepare_enum(e["verdict"], c.VERDICTS)
    _require(matches(SHA, e["operation_identity"]))
    _require(e["payment_reference"] is None or matches(ID, e["payment_reference"]))
    prepare_bool(e["submission_fenced"])
    _require(e["receipt_digest"] is None or matches(SHA, e["receipt_digest"]))
    return e
