"""The implementation seam accepts every reasonable output shape and error class (issue 12, point 7).

An output is the object's `.to_json()` or any `Mapping` (nested too), turned into plain dicts and lists with
key order and value types kept; the contract's error is any exception whose `.code` is one of the
contract's codes. Anything else is still a crash. Checked without an emulator: the foreign implementation
`tests.fakes.frozen_journal` runs on the in-memory Firestore fake.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from types import MappingProxyType

import pytest

from fencecheck.checker.history import Definite, Indefinite, classifier
from fencecheck.plugin.records import UndeclaredError, contract_error_code, impl_output_json
from fencecheck.systems.journal.plugin import JOURNAL, ReferenceAPI, resolve_system
from fencecheck.systems.lantern.plugin import LANTERN
from model.journal import Acquire, CommandRef, Register
from model.lantern import CreateVenue, FaultKind, InjectFault
from reference import LeaseAcquired, LeaseTimestamp
from tests.fakes import FakeFirestore
from tests.fakes import frozen_journal as frozen_journal_module

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
CMD = CommandRef("test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000",
                 "create_checkout_session", 1, '{"quantity":1}')
HOLDER = "0000000a-1ea5-4000-a000-000000000000"


class ForeignError(Exception):
    def __init__(self, code: object) -> None:
        super().__init__("foreign")
        self.code = code


class Code(enum.StrEnum):
    LEASE_REJECTED = "lease_rejected"


class WithToJson:
    def __init__(self, value: object) -> None:
        self.value = value

    def to_json(self) -> object:
        return self.value


def _kinds(value: object) -> object:
    """The container types at every level, to check nothing stays a proxy or a tuple."""
    if isinstance(value, dict):
        return ("dict", [(key, _kinds(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_kinds(item) for item in value])
    return type(value).__name__


# --- outputs ---------------------------------------------------------------------------------------------------


def test_a_nested_mapping_proxy_becomes_plain_dicts_with_order_and_types_kept():
    frozen = MappingProxyType({
        "zeta": True,
        "alpha": MappingProxyType({"seconds": 1, "nanoseconds": 0}),
        "pins": (MappingProxyType({"b": 1.0, "a": None}), [False]),
        "count": 1,
    })
    plain = impl_output_json(frozen)
    assert plain == {"zeta": True, "alpha": {"seconds": 1, "nanoseconds": 0},
                     "pins": [{"b": 1.0, "a": None}, [False]], "count": 1}
    assert list(plain) == ["zeta", "alpha", "pins", "count"]
    assert list(plain["pins"][0]) == ["b", "a"]
    assert _kinds(plain) == ("dict", [
        ("zeta", "bool"), ("alpha", ("dict", [("seconds", "int"), ("nanoseconds", "int")])),
        ("pins", ("list", [("dict", [("b", "float"), ("a", "NoneType")]), ("list", ["bool"])])), ("count", "int"),
    ])
    assert plain["zeta"] is True and plain["pins"][1][0] is False


def test_outputs_with_to_json_and_plain_dicts_read_as_before():
    output = LeaseAcquired(3, LeaseTimestamp(1_700_000_000, 5_000))
    assert impl_output_json(output) == output.to_json()
    assert impl_output_json({"outcome": "x"}) == {"outcome": "x"}
    assert impl_output_json(WithToJson(MappingProxyType({"a": WithToJson(MappingProxyType({"b": 1}))}))) == {
        "a": {"b": 1}
    }


@pytest.mark.parametrize("value", [None, "registered", ["outcome"], 1, WithToJson(["not", "a", "mapping"])])
def test_anything_that_is_not_a_mapping_is_still_no_output(value):
    with pytest.raises(TypeError, match="not an output"):
        impl_output_json(value)


def test_a_converted_output_is_compared_exactly():
    result = JOURNAL.step(JOURNAL.initial_state(), Register(CMD, T0))[1]
    expected = result.output
    assert JOURNAL.answer_matches(result, impl_output_json(MappingProxyType(dict(expected))))
    truthy = {key: (True if value == 1 else value) for key, value in expected.items()}
    assert truthy["journalSchemaVersion"] is True  # 1 in the model: True must not pass for it
    assert not JOURNAL.answer_matches(result, impl_output_json(MappingProxyType(truthy)))
    reordered = dict(reversed(list(expected.items())))
    assert not JOURNAL.answer_matches(result, impl_output_json(MappingProxyType(reordered)))


def test_the_lockstep_compares_nested_key_order_and_types_exactly():
    state = JOURNAL.step(JOURNAL.initial_state(), Register(CMD, T0))[0]
    result = JOURNAL.step(state, Acquire(CMD, HOLDER, T0))[1]
    expected = result.output
    assert JOURNAL.answer_matches(result, impl_output_json(MappingProxyType(expected)))
    expiry = expected["leaseExpiresAt"]
    swapped = {**expected, "leaseExpiresAt": MappingProxyType(dict(reversed(list(expiry.items()))))}
    assert not JOURNAL.answer_matches(result, impl_output_json(MappingProxyType(swapped)))
    as_float = {**expected, "fenceEpoch": float(expected["fenceEpoch"])}
    assert not JOURNAL.answer_matches(result, impl_output_json(as_float))
    assert not JOURNAL.answer_matches(result, None) and not JOURNAL.answer_matches(result, "lease_rejected")
    venue = LANTERN.step(LANTERN.initial_state(), CreateVenue("bar", "Bar", 52.52, 13.405, 150))
    output = venue[1].output
    assert LANTERN.answer_matches(venue[1], dict(output))
    assert not LANTERN.answer_matches(venue[1], dict(reversed(list(output.items()))))  # the lantern's too
    fault = LANTERN.step(venue[0], InjectFault(FaultKind.COUNTER_DRIFT, "bar"))[1]
    assert LANTERN.answer_matches(fault, None) and not LANTERN.answer_matches(fault, {})


# --- errors ----------------------------------------------------------------------------------------------------


def test_the_contract_error_is_recognized_by_its_code():
    assert contract_error_code(ForeignError("lease_rejected"), ("lease_rejected",)) == "lease_rejected"
    recognized = contract_error_code(ForeignError(Code.LEASE_REJECTED), ("lease_rejected",))
    assert recognized == "lease_rejected" and type(recognized) is str
    for code in ("LEASE_REJECTED", "bogus", 409, None, b"lease_rejected"):
        assert contract_error_code(ForeignError(code), ("lease_rejected",)) is None
    assert contract_error_code(ValueError("lease_rejected"), ("lease_rejected",)) is None  # no `.code`


def test_both_plugins_recognize_a_foreign_error_class_by_its_code():
    assert JOURNAL.error_code(JOURNAL.reference, ForeignError("terminal_conflict")) == "terminal_conflict"
    assert JOURNAL.error_code(JOURNAL.reference, ForeignError("venue_not_found")) is None  # the lantern's
    assert LANTERN.error_code(LANTERN.reference, ForeignError("venue_not_found")) == "venue_not_found"
    assert LANTERN.error_code(LANTERN.reference, ForeignError("lease_rejected")) is None  # the journal's
    classify = classifier(JOURNAL, JOURNAL.reference)
    assert classify(ForeignError("journal_unavailable")) == Indefinite("journal_unavailable")
    assert classify(ForeignError("lease_rejected")) == Definite("lease_rejected")
    assert classify(ForeignError("nonsense")) == Indefinite("transport:ForeignError")


def test_a_foreign_implementation_answers_through_the_seam():
    system = resolve_system("tests.fakes.frozen_journal")
    assert system.error_type is UndeclaredError and system.module == "tests.fakes.frozen_journal"
    db, clock = FakeFirestore(), (lambda: T0)
    assert JOURNAL.answer(system, db, Acquire(CMD, HOLDER, T0), clock) == "command_not_registered"
    assert frozen_journal_module.SEEN["error:command_not_registered"] >= 1  # its own class carried it
    registered = JOURNAL.answer(system, db, Register(CMD, T0), clock)
    state, result = JOURNAL.step(JOURNAL.initial_state(), Register(CMD, T0))
    assert type(registered) is dict and JOURNAL.answer_matches(result, registered)
    acquired = JOURNAL.answer(system, db, Acquire(CMD, HOLDER, T0), clock)
    assert type(acquired["leaseExpiresAt"]) is dict
    assert JOURNAL.answer_matches(JOURNAL.step(state, Acquire(CMD, HOLDER, T0))[1], acquired)


def test_an_error_without_a_contract_code_still_propagates():
    def broken(**_kwargs):
        raise ForeignError("not-a-contract-code")

    system = ReferenceAPI(broken, broken, broken, broken, UndeclaredError, "broken")
    with pytest.raises(ForeignError):
        JOURNAL.answer(system, FakeFirestore(), Register(CMD, T0), lambda: T0)
