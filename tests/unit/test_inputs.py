"""Every rule of SPEC.md "Inputs": valid boundary values pass, invalid ones are `invalid_command_input`
before any Firestore call (the fake's call log stays empty)."""

from __future__ import annotations

import collections
import enum
import types
import uuid
from collections.abc import Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from reference import CommandJournalError
from tests.fakes import FakeFirestore
from tests.systems.journal.builders import CMD, COMMAND_ID, LEASE_A, OPERATIONS, REF_A, T0, T1, answer, call, seed
from tests.systems.journal.builders import lifecycle_docs as _lifecycle_docs

ALL_OPS = OPERATIONS
LEASE_OPS = ("acquire", "complete", "fail")
FENCE_OPS = ("complete", "fail")


# -- exotic values -------------------------------------------------------------------------------------------------
class StrSub(str):
    pass


class IntSub(int):
    pass


class Color(enum.IntEnum):
    RED = 1


class Kind(enum.StrEnum):
    FIREBASE = "firebase_uid"


class DictSub(dict):
    pass


class ListSub(list):
    pass


class SneakyDict(dict):
    """Shows the validator one thing and the hasher another."""

    def items(self):
        return [("k", 1.5)]

    def __getitem__(self, key):
        return 1.5


class CountingMapping(Mapping):
    """A custom Mapping whose every access is a side effect."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.accesses = 0

    def __getitem__(self, key: str) -> Any:
        self.accesses += 1
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        self.accesses += 1
        return iter(self._data)

    def __len__(self) -> int:
        self.accesses += 1
        return len(self._data)


Point = collections.namedtuple("Point", "x y")


def nested_dicts(levels: int) -> dict[str, Any]:
    """`levels` mappings nested inside each other, the payload itself included, with a scalar leaf."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def nested_lists(levels: int) -> dict[str, Any]:
    """The payload mapping plus `levels - 1` lists inside it."""
    value: Any = 1
    for _ in range(levels - 1):
        value = [value]
    return {"a": value}


def sized(total_bytes: int, unit: str = "x") -> dict[str, Any]:
    """A payload whose canonical JSON is exactly `total_bytes` UTF-8 bytes: '{"k":"' + text + '"}'."""
    width = len(unit.encode("utf-8"))
    body = total_bytes - 8
    count, rest = divmod(body, width)
    return {"k": unit * count + "x" * rest}


def self_cycle() -> dict[str, Any]:
    payload: dict[str, Any] = {}
    payload["self"] = payload
    return payload


def list_cycle() -> dict[str, Any]:
    items: list[Any] = []
    items.append(items)
    return {"k": items}


def mutual_cycle() -> dict[str, Any]:
    first: dict[str, Any] = {}
    second: dict[str, Any] = {"back": first}
    first["next"] = second
    return {"k": first}


def shared_explosion() -> dict[str, Any]:
    """15 levels of [x, x]: few objects, 2**15 leaves, far beyond the size limit once expanded."""
    value: Any = "xxxx"
    for _ in range(15):
        value = [value, value]
    return {"k": value}


# -- the invalid cases ------------------------------------------------------------------------------------------------
UUID_INVALID = [
    pytest.param("0F8FAD5B-D9CB-469F-A165-70867728950E", id="uppercase"),
    pytest.param("0f8fad5b-d9cb-469f-A165-70867728950e", id="one-uppercase-group"),
    pytest.param("6ba7b810-9dad-11d1-80b4-00c04fd430c8", id="uuid-v1"),
    pytest.param("0f8fad5b-d9cb-569f-a165-70867728950e", id="uuid-v5"),
    pytest.param("0f8fad5b-d9cb-469f-c165-70867728950e", id="variant-c"),
    pytest.param("0f8fad5b-d9cb-469f-7165-70867728950e", id="variant-7"),
    pytest.param("00000000-0000-0000-0000-000000000000", id="nil"),
    pytest.param("0f8fad5bd9cb469fa16570867728950e", id="no-hyphens"),
    pytest.param("{0f8fad5b-d9cb-469f-a165-70867728950e}", id="braces"),
    pytest.param("urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e", id="urn"),
    pytest.param("0f8fad5b-d9cb-469f-a165-70867728950e\n", id="trailing-newline"),
    pytest.param(" 0f8fad5b-d9cb-469f-a165-70867728950e", id="leading-space"),
    pytest.param("0f8fad5b-d9cb-469f-a165-70867728950", id="short"),
    pytest.param(uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e"), id="uuid-object"),
    pytest.param(StrSub("0f8fad5b-d9cb-469f-a165-70867728950e"), id="str-subclass"),
    pytest.param(b"0f8fad5b-d9cb-469f-a165-70867728950e", id="bytes"),
    pytest.param("", id="empty"),
    pytest.param(None, id="none"),
]

COMMAND_CASES = [
    *(
        pytest.param("environment", value, id=f"environment-{name}")
        for name, value in [
            ("capitalised", "Production"),
            ("abbreviated", "prod"),
            ("empty", ""),
            ("none", None),
            ("trailing-space", "test "),
            ("trailing-newline", "test\n"),
            ("bytes", b"test"),
            ("str-subclass", StrSub("test")),
        ]
    ),
    *(
        pytest.param("caller_scope", value, id=f"caller-scope-{name}")
        for name, value in [
            ("none", None),
            ("list", [("kind", "firebase_uid"), ("value", "u")]),
            ("string", "firebase_uid:u"),
            ("missing-value", {"kind": "firebase_uid"}),
            ("missing-kind", {"value": "u"}),
            ("empty", {}),
            ("extra-key", {"kind": "firebase_uid", "value": "u", "extra": "x"}),
            ("kind-uppercase", {"kind": "FIREBASE_UID", "value": "u"}),
            ("kind-unknown", {"kind": "admin", "value": "u"}),
            ("kind-none", {"kind": None, "value": "u"}),
            ("kind-str-enum", {"kind": Kind.FIREBASE, "value": "u"}),
            ("value-empty", {"kind": "firebase_uid", "value": ""}),
            ("value-129-chars", {"kind": "firebase_uid", "value": "x" * 129}),
            ("value-129-non-ascii-chars", {"kind": "firebase_uid", "value": "é" * 129}),
            ("value-int", {"kind": "firebase_uid", "value": 1}),
            ("value-none", {"kind": "firebase_uid", "value": None}),
            ("value-bytes", {"kind": "firebase_uid", "value": b"u"}),
            ("value-str-subclass", {"kind": "firebase_uid", "value": StrSub("u")}),
            ("value-nul", {"kind": "firebase_uid", "value": "u\x00"}),
            ("value-newline", {"kind": "firebase_uid", "value": "u\n"}),
            ("value-tab-only", {"kind": "firebase_uid", "value": "\t"}),
            ("value-escape", {"kind": "firebase_uid", "value": "u\x1b[0m"}),
            ("value-delete", {"kind": "firebase_uid", "value": "u\x7f"}),
            ("value-c1-control", {"kind": "firebase_uid", "value": "u\x85"}),
            ("value-lone-surrogate", {"kind": "firebase_uid", "value": "u\ud800"}),
            ("dict-subclass", DictSub(kind="firebase_uid", value="u")),
            ("mapping-proxy", types.MappingProxyType({"kind": "firebase_uid", "value": "u"})),
            ("ordered-dict", collections.OrderedDict(kind="firebase_uid", value="u")),
            ("custom-mapping", CountingMapping({"kind": "firebase_uid", "value": "u"})),
        ]
    ),
    *(pytest.param("command_id", param.values[0], id=f"command-id-{param.id}") for param in UUID_INVALID),
    *(
        pytest.param("command_type", value, id=f"command-type-{name}")
        for name, value in [
            ("empty", ""),
            ("capital", "Create"),
            ("leading-digit", "1abc"),
            ("leading-underscore", "_abc"),
            ("hyphen", "a-b"),
            ("space", "a b"),
            ("65-chars", "a" * 65),
            ("trailing-newline", "abc\n"),
            ("non-ascii", "ä"),
            ("none", None),
            ("int", 1),
            ("str-subclass", StrSub("abc")),
        ]
    ),
    *(
        pytest.param("endpoint_schema_version", value, id=f"endpoint-version-{name}")
        for name, value in [
            ("zero", 0),
            ("negative", -1),
            ("1000001", 1_000_001),
            ("2**53", 2**53),
            ("true", True),
            ("false", False),
            ("float", 1.0),
            ("string", "1"),
            ("none", None),
            ("int-subclass", IntSub(1)),
            ("int-enum", Color.RED),
            ("decimal", Decimal(1)),
        ]
    ),
    *(
        pytest.param("payload", value, id=f"payload-{name}")
        for name, value in [
            ("none", None),
            ("list", []),
            ("string", "{}"),
            ("tuple-of-pairs", (("k", 1),)),
            ("float", {"k": 1.0}),
            ("float-zero", {"k": 0.0}),
            ("nan", {"k": float("nan")}),
            ("inf", {"k": float("inf")}),
            ("int-2**53", {"k": 2**53}),
            ("int-minus-2**53", {"k": -(2**53)}),
            ("int-2**63", {"k": 2**63}),
            ("int-key", {1: "v"}),
            ("bool-key", {True: "v"}),
            ("none-key", {None: "v"}),
            ("tuple-key", {("a",): "v"}),
            ("str-subclass-key", {StrSub("k"): "v"}),
            ("bytes", {"k": b"v"}),
            ("bytearray", {"k": bytearray(b"v")}),
            ("set", {"k": {1}}),
            ("frozenset", {"k": frozenset()}),
            ("decimal", {"k": Decimal("1")}),
            ("complex", {"k": 1j}),
            ("object", {"k": object()}),
            ("datetime", {"k": T0}),
            ("str-subclass-value", {"k": StrSub("v")}),
            ("int-subclass-value", {"k": IntSub(1)}),
            ("int-enum-value", {"k": Color.RED}),
            ("namedtuple", {"k": Point(1, 2)}),
            ("dict-subclass", DictSub(k=1)),
            ("nested-dict-subclass", {"k": DictSub(k=1)}),
            ("nested-list-subclass", {"k": ListSub([1])}),
            ("ordered-dict", collections.OrderedDict(k=1)),
            ("defaultdict", collections.defaultdict(int, k=1)),
            ("user-dict", collections.UserDict(k=1)),
            ("mapping-proxy", types.MappingProxyType({"k": 1})),
            ("nested-mapping-proxy", {"k": types.MappingProxyType({"k": 1})}),
            ("sneaky-dict-subclass", SneakyDict(k=1)),
            ("custom-mapping", CountingMapping({"k": 1})),
            ("nested-custom-mapping", {"k": CountingMapping({"k": 1})}),
            ("self-cycle", self_cycle()),
            ("list-cycle", list_cycle()),
            ("mutual-cycle", mutual_cycle()),
            ("depth-17-dicts", nested_dicts(17)),
            ("depth-17-lists", nested_lists(17)),
            ("shared-reference-explosion", shared_explosion()),
            ("32769-bytes-ascii", sized(32_769)),
            ("32769-bytes-two-byte-chars", sized(32_769, "é")),
            ("32769-bytes-four-byte-chars", sized(32_769, "😀")),
            ("lone-surrogate-value", {"k": "\ud800"}),
            ("lone-surrogate-key", {"\udfff": 1}),
        ]
    ),
]

LEASE_CASES = [
    *(pytest.param("lease_id", param.values[0], id=f"lease-id-{param.id}") for param in UUID_INVALID),
    pytest.param("lease_id", COMMAND_ID, id="lease-id-equals-command-id"),
]

FENCE_CASES = [
    pytest.param("expected_fence_epoch", value, id=f"fence-{name}")
    for name, value in [
        ("zero", 0),
        ("negative", -1),
        ("10**10", 10**10),
        ("true", True),
        ("false", False),
        ("float", 1.0),
        ("string", "1"),
        ("none", None),
        ("int-subclass", IntSub(1)),
        ("int-enum", Color.RED),
    ]
]

REFERENCE_CASES = [
    pytest.param("terminal_reference_fingerprint", value, id=f"terminal-reference-{name}")
    for name, value in [
        ("uppercase", "A" * 64),
        ("63-chars", "a" * 63),
        ("65-chars", "a" * 65),
        ("non-hex", "g" * 64),
        ("trailing-newline", "a" * 64 + "\n"),
        ("none", None),
        ("int", 1),
        ("bytes", b"a" * 64),
        ("str-subclass", StrSub("a" * 64)),
        ("sha256-prefixed", "sha256:" + "a" * 57),
    ]
]


def _assert_invalid_without_firestore(operation: str, field: str, value: Any) -> None:
    db = FakeFirestore()
    with pytest.raises(CommandJournalError) as caught:
        call(operation, db, T0, **{field: value})
    assert caught.value.code == "invalid_command_input"
    assert db.calls == []
    assert db.dump() == {}


@pytest.mark.parametrize("operation", ALL_OPS)
@pytest.mark.parametrize(("field", "value"), COMMAND_CASES)
def test_invalid_command_input(operation, field, value):
    _assert_invalid_without_firestore(operation, field, value)


@pytest.mark.parametrize("operation", LEASE_OPS)
@pytest.mark.parametrize(("field", "value"), LEASE_CASES)
def test_invalid_lease_id(operation, field, value):
    _assert_invalid_without_firestore(operation, field, value)


@pytest.mark.parametrize("operation", FENCE_OPS)
@pytest.mark.parametrize(("field", "value"), FENCE_CASES)
def test_invalid_expected_fence_epoch(operation, field, value):
    _assert_invalid_without_firestore(operation, field, value)


@pytest.mark.parametrize(("field", "value"), REFERENCE_CASES)
def test_invalid_terminal_reference_fingerprint(field, value):
    _assert_invalid_without_firestore("complete", field, value)


def test_custom_mapping_is_rejected_without_being_read():
    scope = CountingMapping({"kind": "firebase_uid", "value": "u"})
    payload = CountingMapping({"k": 1})
    nested = CountingMapping({"k": 1})
    for field, value in (("caller_scope", scope), ("payload", payload), ("payload", {"k": nested})):
        _assert_invalid_without_firestore("register", field, value)
    assert (scope.accesses, payload.accesses, nested.accesses) == (0, 0, 0)


@pytest.mark.parametrize("operation", LEASE_OPS)
def test_input_validation_precedes_a_malformed_store(operation):
    db = FakeFirestore()
    db.seed(CMD.root_path, {"garbage": True})
    with pytest.raises(CommandJournalError) as caught:
        call(operation, db, T0, lease=COMMAND_ID)
    assert caught.value.code == "invalid_command_input"
    assert db.calls == []


# -- valid boundary values ---------------------------------------------------------------------------------------------
VALID_COMMAND = [
    *(pytest.param("environment", env, id=f"environment-{env}") for env in ("local", "test", "staging", "production")),
    *(
        pytest.param("caller_scope", {"kind": kind, "value": "u"}, id=f"caller-kind-{kind}")
        for kind in ("firebase_uid", "anonymous_principal", "internal_system")
    ),
    pytest.param("caller_scope", {"kind": "firebase_uid", "value": "x"}, id="caller-value-1-char"),
    pytest.param("caller_scope", {"kind": "firebase_uid", "value": "x" * 128}, id="caller-value-128-chars"),
    pytest.param("caller_scope", {"kind": "firebase_uid", "value": "😀" * 128}, id="caller-value-128-astral-chars"),
    pytest.param("caller_scope", {"value": "u v", "kind": "firebase_uid"}, id="caller-value-space-key-order"),
    *(
        pytest.param("command_id", f"0f8fad5b-d9cb-469f-{variant}165-70867728950e", id=f"command-id-variant-{variant}")
        for variant in "89ab"
    ),
    pytest.param("command_type", "a", id="command-type-1-char"),
    pytest.param("command_type", "a" + "_" * 63, id="command-type-64-chars"),
    pytest.param("command_type", "a0_9z", id="command-type-digits-underscore"),
    pytest.param("endpoint_schema_version", 1, id="endpoint-version-1"),
    pytest.param("endpoint_schema_version", 1_000_000, id="endpoint-version-1000000"),
    pytest.param("payload", {}, id="payload-empty"),
    pytest.param("payload", {"k": 2**53 - 1, "m": -(2**53 - 1), "z": 0}, id="payload-safe-integer-bounds"),
    pytest.param("payload", {"t": True, "f": False, "n": None, "s": ""}, id="payload-literals"),
    pytest.param("payload", {"k": (1, "two", [3])}, id="payload-tuple"),
    pytest.param("payload", {"ключ": "značka", "😀": "\n\t\x00"}, id="payload-unicode-and-controls-in-strings"),
    pytest.param("payload", nested_dicts(16), id="payload-depth-16-dicts"),
    pytest.param("payload", nested_lists(16), id="payload-depth-16-lists"),
    pytest.param("payload", sized(32_768), id="payload-32768-bytes-ascii"),
    pytest.param("payload", sized(32_768, "é"), id="payload-32768-bytes-two-byte-chars"),
    pytest.param("payload", sized(32_768, "😀"), id="payload-32768-bytes-four-byte-chars"),
    pytest.param("payload", {"a": [1] * 100, "b": [1] * 100}, id="payload-shared-small-lists"),
]


def test_payload_size_helper_is_exact():
    from reference.journal.identity import canonical_json

    assert [len(canonical_json(sized(n, unit)).encode()) for n, unit in [(32_768, "x"), (32_769, "é")]] == [
        32_768,
        32_769,
    ]


@pytest.mark.parametrize(("field", "value"), VALID_COMMAND)
def test_valid_command_boundary_values_register(field, value):
    db = FakeFirestore()
    assert call("register", db, T0, **{field: value}).outcome == "registered_new"
    assert len(db.dump()) == 2


@pytest.mark.parametrize(
    "lease", [f"886313e1-3b8a-4372-{v}b90-0c9aee199e5d" for v in "89ab"], ids=[f"variant-{v}" for v in "89ab"]
)
def test_valid_lease_ids_acquire(lease):
    db = FakeFirestore()
    call("register", db, T0)
    assert answer("acquire", db, T1, lease=lease) == "lease_acquired"


@pytest.mark.parametrize("operation", FENCE_OPS)
@pytest.mark.parametrize("fence", [1, 9_999_999_999], ids=["fence-1", "fence-max"])
def test_valid_fence_bounds_reach_the_lease_rules(operation, fence):
    db = seed(FakeFirestore(), _lifecycle_docs(fence=5))  # a real lease at another fence: rejected, not invalid
    assert answer(operation, db, T1, fence=fence) == "lease_rejected"


@pytest.mark.parametrize("reference", ["0" * 64, "f" * 64, REF_A], ids=["zeros", "fs", "as"])
def test_valid_terminal_reference_fingerprints_complete(reference):
    db = FakeFirestore()
    call("register", db, T0)
    call("acquire", db, T1)
    assert answer("complete", db, T1, ref=reference) == "terminal_succeeded"


def test_bool_stays_bool_in_the_payload_fingerprint():
    db = FakeFirestore()
    call("register", db, T0, payload={"k": True})
    assert answer("register", db, T0, payload={"k": 1}) == "command_conflict"
    assert answer("register", db, T0, payload={"k": True}) == "registered_existing"


def test_a_tuple_is_the_same_json_value_as_a_list():
    db = FakeFirestore()
    call("register", db, T0, payload={"k": (1, 2)})
    assert answer("register", db, T0, payload={"k": [1, 2]}) == "registered_existing"


def test_payload_key_order_does_not_change_identity():
    db = FakeFirestore()
    call("register", db, T0, payload={"a": 1, "b": 2})
    assert answer("register", db, T0, payload={"b": 2, "a": 1}) == "registered_existing"


def test_caller_mutating_the_payload_afterwards_changes_nothing_stored():
    db = FakeFirestore()
    payload = {"k": [1, 2]}
    call("register", db, T0, payload=payload)
    stored = db.dump()
    payload["k"].append(3)
    assert db.dump() == stored
    assert answer("register", db, T0, payload={"k": [1, 2]}) == "registered_existing"


def test_lease_id_distinct_from_command_id_is_accepted():
    assert LEASE_A != COMMAND_ID
    db = FakeFirestore()
    call("register", db, T0)
    assert answer("acquire", db, T1, lease=LEASE_A) == "lease_acquired"


def test_datetime_payload_value_is_not_json():
    _assert_invalid_without_firestore("register", "payload", {"k": datetime(2030, 1, 1)})
