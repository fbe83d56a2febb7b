"""Golden identity vectors of the gateway journal (docs/gateway-contract.md "Identity";
tests/vectors/gateway-identity-golden.json), computed by each side's own identity functions (the model's
`model.gateway.identity` and the reference's `reference.gateway.identity`, two copies written from the
contract, each pinned here on its own), by a `JournalRef` and a begun record (what the model stores where),
and by the formula written out here with struct and incremental hashlib and a canonical JSON encoder of its
own (so a wrong vector file, or a wrong shared helper, is caught too)."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from model.gateway import GatewayState, JournalRef, documents, identity, owner_fingerprint_of, step
from model.gateway.ops import Begin
from reference.gateway import identity as reference_identity
from tests.systems.gateway.builders import T0

FILE = Path(__file__).parents[2] / "vectors" / "gateway-identity-golden.json"
VECTORS = json.loads(FILE.read_text("utf-8"))["vectors"]
IDS = [f"{v['input']['provider']}-{v['provider_input_digest'][:6]}" for v in VECTORS]
HASH_KEYS = (
    "journal_key",
    "provider_input_digest",
    "operation_identity",
    "consume_idempotency_key",
    "provider_create_idempotency_key",
    "provider_confirm_idempotency_key",
    "lease_owner_fingerprint",
)


def _model_derived(op_identity: str) -> tuple[str, str, str]:
    return (
        identity.consume_idempotency_key(op_identity),
        identity.provider_create_idempotency_key(op_identity),
        identity.provider_confirm_idempotency_key(op_identity),
    )


# Each side's identity module and how it spells the three idempotency keys derived from an operation identity
# (the model: one function each; the reference: `derived_keys`). Pinned independently: the model imports no
# reference (tests/unit/test_model_imports.py), so a formula wrong in one side fails here on its own.
SIDES = [
    pytest.param((identity, _model_derived), id="model"),
    pytest.param((reference_identity, reference_identity.derived_keys), id="reference"),
]


def independent_digest(*fields: str) -> str:
    h = hashlib.sha256()
    for text in fields:
        data = text.encode("utf-8")
        h.update(struct.pack(">I", len(data)))
        h.update(data)
    return h.hexdigest()


def independent_canonical(value) -> str:
    if isinstance(value, dict):
        items = sorted(value.items())  # str keys sort by code point
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{independent_canonical(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(independent_canonical(v) for v in value) + "]"
    if value is True or value is False or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return json.dumps(value, ensure_ascii=False)


def _ref(given: dict) -> JournalRef:
    return JournalRef(
        given["namespace_id"],
        given["gateway_binding_id"],
        given["operation_id"],
        given["provider"],
        identity.canonical_json(given["request"]),
        identity.canonical_json(given["provider_input"]),
    )


def test_three_vectors_two_share_a_key_and_differ_only_in_provider_input():
    assert len(VECTORS) == 3
    first, changed, _ = VECTORS
    assert first["journal_key"] == changed["journal_key"]  # same operation id: the same record path
    assert first["operation_identity"] != changed["operation_identity"]  # a changed input cannot reuse it
    assert len({v["operation_identity"] for v in VECTORS}) == 3
    for v in VECTORS:
        keys = {v[k] for k in HASH_KEYS}
        assert len(keys) == len(HASH_KEYS)


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_the_formula_written_out_reproduces_the_vector_file(vector):
    given = vector["input"]
    request, provider_input = independent_canonical(given["request"]), independent_canonical(given["provider_input"])
    assert (request, provider_input) == (vector["canonical_request_json"], vector["canonical_provider_input_json"])
    key = independent_digest(
        "gateway-journal-key", "2", given["namespace_id"], given["gateway_binding_id"], given["operation_id"]
    )
    input_digest = independent_digest("gateway-provider-input", "2", provider_input)
    op_identity = independent_digest("gateway-operation-identity", "2", key, given["provider"], request, input_digest)
    expected = {
        "journal_key": key,
        "provider_input_digest": input_digest,
        "operation_identity": op_identity,
        "consume_idempotency_key": independent_digest("gateway-consume-idempotency", "2", op_identity),
        "provider_create_idempotency_key": independent_digest("gateway-provider-create", "2", op_identity),
        "provider_confirm_idempotency_key": independent_digest("gateway-provider-confirm", "2", op_identity),
        "lease_owner_fingerprint": independent_digest("gateway-lease-owner", "2", key, given["lease_id"]),
        "record_path": f"gatewayNamespaces/{given['namespace_id']}/journals/{key}",
        "first_event_path": f"gatewayNamespaces/{given['namespace_id']}/journals/{key}/events/0000000001",
    }
    assert {k: vector[k] for k in expected} == expected


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_identity_functions_reproduce_every_vector(vector, side):
    ids, derived = side
    given = vector["input"]
    request, provider_input = ids.canonical_json(given["request"]), ids.canonical_json(given["provider_input"])
    assert (request, provider_input) == (vector["canonical_request_json"], vector["canonical_provider_input_json"])
    key = ids.journal_key(given["namespace_id"], given["gateway_binding_id"], given["operation_id"])
    input_digest = ids.provider_input_digest(provider_input)
    op_identity = ids.operation_identity(key, given["provider"], request, input_digest)
    assert (key, input_digest, op_identity) == (
        vector["journal_key"],
        vector["provider_input_digest"],
        vector["operation_identity"],
    )
    assert derived(op_identity) == (
        vector["consume_idempotency_key"],
        vector["provider_create_idempotency_key"],
        vector["provider_confirm_idempotency_key"],
    )
    assert ids.lease_owner_fingerprint(key, given["lease_id"]) == vector["lease_owner_fingerprint"]
    assert ids.record_path(given["namespace_id"], key) == vector["record_path"]
    assert ids.event_path(given["namespace_id"], key, 1) == vector["first_event_path"]


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_model_refs_reproduce_every_vector(vector):
    given = vector["input"]
    ref = _ref(given)
    assert (ref.request, ref.provider_input) == (
        vector["canonical_request_json"],
        vector["canonical_provider_input_json"],
    )
    for name in HASH_KEYS[:-1]:
        assert getattr(ref, name) == vector[name], name
    assert owner_fingerprint_of(ref.journal_key, given["lease_id"]) == vector["lease_owner_fingerprint"]
    assert identity.record_path(ref.namespace_id, ref.journal_key) == vector["record_path"]
    assert identity.event_path(ref.namespace_id, ref.journal_key, 1) == vector["first_event_path"]


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_a_begun_record_stores_the_golden_identity_at_the_golden_paths(vector):
    state, result = step(GatewayState.empty(), Begin(journal=_ref(vector["input"]), now=T0))
    assert result.transition == "begin.new"
    docs = documents(state)
    assert set(docs) == {vector["record_path"], vector["first_event_path"]}
    stored = docs[vector["record_path"]]
    for name in HASH_KEYS[:-1]:
        assert stored[name] == vector[name], name
    assert stored["operation_id"] == vector["input"]["operation_id"]
    assert docs[vector["first_event_path"]]["journal_key"] == vector["journal_key"]


@pytest.mark.parametrize("side", SIDES)
def test_framing_makes_shifted_boundaries_differ(side):
    ids, _ = side
    assert ids.digest("ab", "c") != ids.digest("a", "bc")
    assert ids.digest("ab", "c") == independent_digest("ab", "c")
    assert ids.canonical_json({"\uffff": 1, "😀": [True, None]}) == independent_canonical(
        {"\uffff": 1, "😀": [True, None]}
    )
