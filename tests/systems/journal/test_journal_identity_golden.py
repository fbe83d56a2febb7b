"""Golden identity vectors (SPEC.md "Identity and fingerprints"; tests/vectors/identity-golden.json).

Every hash, the canonical payload JSON and every document path of each vector, computed by each side's own
identity functions (the model's `model.journal.identity` and the reference's `reference.journal.identity`:
two copies written from the contract, each pinned here on its own, so neither can drift and take the other
with it), by each side end to end (what the reference's API stores where; what the model's operations
derive and its documents place where), and by the SPEC formula written out here (so a wrong vector file is
caught too).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from model.journal import Acquire, CommandRef, Complete, JournalState, Register, documents, step
from model.journal import identity as model_identity
from reference import acquire_commerce_command_lease, complete_commerce_command, register_commerce_command
from reference.journal import identity as reference_identity
from reference.journal.inputs import prepare_command, prepare_commitment, prepare_lease_owner
from tests.fakes import FakeFirestore
from tests.systems.journal.builders import T0, T1, Clock, Command
from tests.systems.journal.builders import canonical_json as spec_canonical_json
from tests.systems.journal.builders import digest as spec_digest

VECTORS = json.loads((Path(__file__).parents[2] / "vectors" / "identity-golden.json").read_text("utf-8"))["vectors"]
IDS = [vector["input"]["commandType"] for vector in VECTORS]

# Each side's identity module, pinned to the vectors independently: the model must not borrow the reference's
# (tests/unit/test_model_imports.py), so a formula wrong in one is a failure here, not a shared blind spot.
SIDES = [pytest.param(model_identity, id="model"), pytest.param(reference_identity, id="reference")]


def _command(vector: dict) -> Command:
    given = vector["input"]
    return Command(
        environment=given["environment"],
        kind=given["callerScope"]["kind"],
        value=given["callerScope"]["value"],
        command_id=given["commandId"],
        command_type=given["commandType"],
        endpoint_schema_version=given["endpointSchemaVersion"],
        payload=given["payload"],
    )


def test_there_are_three_distinct_vectors():
    assert len(VECTORS) == 3
    assert len({vector["commandKeyHash"] for vector in VECTORS}) == 3


def test_the_two_sides_are_two_modules():
    assert model_identity is not reference_identity
    assert model_identity.__name__ == "model.journal.identity"


@pytest.mark.parametrize("identity", SIDES)
@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_identity_functions_reproduce_every_hash_and_path(vector, identity):
    given = vector["input"]
    key = identity.command_key_hash(
        given["environment"], given["callerScope"]["kind"], given["callerScope"]["value"], given["commandId"]
    )
    assert key == vector["commandKeyHash"]
    assert identity.canonical_json(given["payload"]) == vector["canonicalPayloadJson"]
    assert identity.payload_fingerprint(key, vector["canonicalPayloadJson"]) == vector["payloadFingerprint"]
    assert identity.lease_owner_fingerprint(key, given["leaseId"]) == vector["leaseOwnerFingerprint"]
    assert (
        identity.terminal_commitment_hash(key, given["terminalReferenceFingerprint"])
        == vector["terminalCommitmentHash"]
    )
    assert identity.root_path(key) == vector["rootPath"]
    assert identity.lifecycle_path(key) == vector["lifecyclePath"]
    assert identity.audit_path(key, 1) == vector["registrationAuditPath"]
    assert identity.audit_path(key, 2) == vector["firstLeaseAuditPath"]


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_input_preparation_reproduces_every_hash(vector):
    given = vector["input"]
    command = prepare_command(
        environment=given["environment"],
        caller_scope=dict(given["callerScope"]),
        command_id=given["commandId"],
        command_type=given["commandType"],
        endpoint_schema_version=given["endpointSchemaVersion"],
        payload=given["payload"],
    )
    assert command.command_key_hash == vector["commandKeyHash"]
    assert command.payload_fingerprint == vector["payloadFingerprint"]
    owner = prepare_lease_owner(command, command_id=given["commandId"], lease_id=given["leaseId"])
    assert owner == vector["leaseOwnerFingerprint"]
    assert prepare_commitment(command, given["terminalReferenceFingerprint"]) == vector["terminalCommitmentHash"]


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_spec_formula_reproduces_the_vector_file(vector):
    command = _command(vector)
    assert spec_canonical_json(command.payload) == vector["canonicalPayloadJson"]
    assert command.key_hash == vector["commandKeyHash"]
    assert command.payload_fingerprint == vector["payloadFingerprint"]
    assert command.owner(vector["input"]["leaseId"]) == vector["leaseOwnerFingerprint"]
    assert command.commitment(vector["input"]["terminalReferenceFingerprint"]) == vector["terminalCommitmentHash"]
    assert (command.root_path, command.lifecycle_path) == (vector["rootPath"], vector["lifecyclePath"])
    assert (command.audit_path(1), command.audit_path(2)) == (
        vector["registrationAuditPath"],
        vector["firstLeaseAuditPath"],
    )


def _assert_at_the_golden_paths(stored: dict, vector: dict) -> None:
    """The documents a register, a lease and a completion store: at the vector's paths, the root's fingerprint
    the vector's."""
    assert set(stored) == {
        vector["rootPath"],
        vector["registrationAuditPath"],
        vector["lifecyclePath"],
        vector["firstLeaseAuditPath"],
        vector["firstLeaseAuditPath"][:-1] + "3",
    }
    assert stored[vector["rootPath"]]["payloadFingerprint"] == vector["payloadFingerprint"]


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_api_stores_the_golden_hashes_at_the_golden_paths(vector):
    given = vector["input"]
    common = {
        "db": FakeFirestore(),
        "environment": given["environment"],
        "caller_scope": dict(given["callerScope"]),
        "command_id": given["commandId"],
        "command_type": given["commandType"],
        "endpoint_schema_version": given["endpointSchemaVersion"],
        "payload": given["payload"],
    }
    db = common["db"]
    register_commerce_command(**common, clock=Clock(T0))
    acquire_commerce_command_lease(**common, lease_id=given["leaseId"], clock=Clock(T1))
    complete_commerce_command(
        **common,
        lease_id=given["leaseId"],
        expected_fence_epoch=1,
        terminal_reference_fingerprint=given["terminalReferenceFingerprint"],
        clock=Clock(T1),
    )
    stored = db.dump()
    _assert_at_the_golden_paths(stored, vector)
    assert stored[vector["registrationAuditPath"]]["commandKeyHash"] == vector["commandKeyHash"]
    assert stored[vector["lifecyclePath"]]["commandKeyHash"] == vector["commandKeyHash"]
    assert stored[vector["lifecyclePath"]]["leaseOwnerFingerprint"] == vector["leaseOwnerFingerprint"]
    assert stored[vector["lifecyclePath"]]["terminalCommitmentHash"] == vector["terminalCommitmentHash"]
    assert stored[vector["firstLeaseAuditPath"]]["commandKeyHash"] == vector["commandKeyHash"]


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_the_model_derives_and_stores_the_golden_hashes_at_the_golden_paths(vector):
    """The model's side end to end, as the API test is the reference's: its operations derive the vector's
    identities and its documents put them at the vector's paths."""
    given = vector["input"]
    ref = CommandRef.from_inputs(
        environment=given["environment"],
        caller_scope=dict(given["callerScope"]),
        command_id=given["commandId"],
        command_type=given["commandType"],
        endpoint_schema_version=given["endpointSchemaVersion"],
        payload=given["payload"],
    )
    assert (ref.payload, ref.key_hash, ref.payload_fingerprint) == (
        vector["canonicalPayloadJson"],
        vector["commandKeyHash"],
        vector["payloadFingerprint"],
    )
    acquire = Acquire(ref, given["leaseId"], T1)
    complete = Complete(ref, given["leaseId"], 1, given["terminalReferenceFingerprint"], T1)
    assert acquire.owner_fingerprint == vector["leaseOwnerFingerprint"]
    assert complete.commitment_hash == vector["terminalCommitmentHash"]
    state = JournalState.empty()
    for op in (Register(ref, T0), acquire, complete):
        state, _ = step(state, op)
    stored = documents(state)
    _assert_at_the_golden_paths(stored, vector)
    assert stored[vector["lifecyclePath"]]["leaseOwnerFingerprint"] == vector["leaseOwnerFingerprint"]
    assert stored[vector["lifecyclePath"]]["terminalCommitmentHash"] == vector["terminalCommitmentHash"]


@pytest.mark.parametrize(
    ("text", "framed"),
    [
        pytest.param("", b"\x00\x00\x00\x00", id="empty"),
        pytest.param("1", b"\x00\x00\x00\x011", id="ascii"),
        pytest.param("é", b"\x00\x00\x00\x02\xc3\xa9", id="two-byte-utf8"),
        pytest.param("😀", b"\x00\x00\x00\x04\xf0\x9f\x98\x80", id="astral-utf8"),
    ],
)
@pytest.mark.parametrize("identity", SIDES)
def test_frame_is_a_four_byte_big_endian_utf8_length_then_the_bytes(text, framed, identity):
    assert identity.frame(text) == framed


@pytest.mark.parametrize("identity", SIDES)
def test_digest_frames_each_field_so_shifted_boundaries_differ(identity):
    assert identity.digest("ab", "c") != identity.digest("a", "bc")
    assert identity.digest("ab", "c") == hashlib.sha256(b"\x00\x00\x00\x02ab\x00\x00\x00\x01c").hexdigest()
    assert identity.digest("a", "b") == spec_digest("a", "b")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param({"b": 1, "a": 2, "B": 3}, '{"B":3,"a":2,"b":1}', id="code-point-order"),
        pytest.param({"\uffff": 1, "😀": 2}, '{"\uffff":1,"😀":2}', id="astral-after-bmp-not-utf16-order"),
        pytest.param({"k": "café ☕"}, '{"k":"café ☕"}', id="non-ascii-kept"),
        pytest.param({"k": [True, None, -1]}, '{"k":[true,null,-1]}', id="literals"),
        pytest.param({"z": {"y": 1, "x": 2}}, '{"z":{"x":2,"y":1}}', id="nested-sorted"),
    ],
)
@pytest.mark.parametrize("identity", SIDES)
def test_canonical_json(payload, expected, identity):
    assert identity.canonical_json(payload) == expected


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("identity", SIDES)
def test_canonical_json_refuses_non_finite_numbers(number, identity):
    with pytest.raises(ValueError):
        identity.canonical_json({"k": number})
