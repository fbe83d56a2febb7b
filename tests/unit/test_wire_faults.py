"""Fault plans, the fault event log and the protobuf reader of the wire proxy (issue 15): pure logic.

A plan's rule "call n of method m, and the next times-1" counts that method's calls from 1 after the plan was
set; the first matching rule wins; a plan refuses what could never fire (an unknown short method name, a cut of
a unary call, an OK status). Events are immutable and numbered 1, 2, ... in the order they were recorded.
"""

from __future__ import annotations

import threading

import attrs
import grpc
import pytest
from google.cloud.firestore_v1.types import CommitRequest, RollbackRequest, Write

from fencecheck.checker.history import WireFault
from fencecheck.errors import UsageError
from fencecheck.wire import (
    EventLog,
    FaultKind,
    FaultPlan,
    cut_stream,
    delay,
    drop_response,
    fail_response,
    on,
    reject,
)
from fencecheck.wire.lanes import wire_fault
from fencecheck.wire.methods import METHODS, Cardinality, cardinality, full_name, is_known, short_name
from fencecheck.wire.protowire import length_delimited_fields, rollback_for_commit

COMMIT = "/google.firestore.v1.Firestore/Commit"


def test_a_rule_covers_calls_first_to_first_plus_times_minus_one() -> None:
    rule = on("Commit", reject(), call=2, times=2)
    assert [rule.matches(COMMIT, n) for n in range(1, 6)] == [False, True, True, False, False]
    assert not rule.matches(full_name("BeginTransaction"), 2)


def test_times_none_is_every_call_from_first_on() -> None:
    rule = on("Commit", reject(), call=3, times=None)
    assert [rule.matches(COMMIT, n) for n in (1, 2, 3, 4, 1000)] == [False, False, True, True, True]


def test_the_first_matching_rule_wins_and_unmatched_calls_are_forwarded() -> None:
    first, second = fail_response(), reject()
    plan = FaultPlan((on("Commit", first, call=2), on("Commit", second, times=None)))
    assert plan.fault_for(COMMIT, 1) is second
    assert plan.fault_for(COMMIT, 2) is first
    assert plan.fault_for(COMMIT, 3) is second
    assert plan.fault_for(full_name("Rollback"), 1) is None
    assert FaultPlan().fault_for(COMMIT, 1) is None


def test_definite_is_refused_or_delayed_indefinite_is_forwarded_and_lost() -> None:
    kinds = {fault.kind: fault.definite for fault in
             (reject(), delay(0.1), fail_response(), drop_response(), cut_stream())}
    assert kinds == {FaultKind.REJECT: True, FaultKind.DELAY: True, FaultKind.FAIL_RESPONSE: False,
                     FaultKind.DROP_RESPONSE: False, FaultKind.CUT_STREAM: False}
    assert [kind.forwards for kind in FaultKind] == [kind is not FaultKind.REJECT for kind in FaultKind]


def test_default_codes_are_the_ones_the_docs_name() -> None:
    assert reject().code is grpc.StatusCode.ABORTED
    assert fail_response().code is grpc.StatusCode.UNAVAILABLE
    assert cut_stream().code is grpc.StatusCode.UNAVAILABLE
    assert drop_response().code is None and delay(1).code is None


@pytest.mark.parametrize("build", [
    lambda: reject(grpc.StatusCode.OK),
    lambda: delay(0),
    lambda: delay(float("inf")),
    lambda: on("Comit", reject()),  # a typo would never fire
    lambda: on("Commit", cut_stream()),  # unary: no stream to cut
    lambda: on("Commit", reject(), call=0),
    lambda: on("Commit", reject(), times=0),
    lambda: on("Commit", reject(), call=True),
])
def test_a_plan_that_could_never_fire_as_meant_is_refused(build) -> None:
    with pytest.raises(UsageError):
        build()


def test_method_names() -> None:
    assert full_name("Commit") == COMMIT and full_name("/other.Service/Call") == "/other.Service/Call"
    assert short_name(COMMIT) == "Commit" and short_name("/other.Service/Call") == "/other.Service/Call"
    assert cardinality(COMMIT) is Cardinality.UNARY_UNARY
    assert cardinality(full_name("RunQuery")) is Cardinality.UNARY_STREAM
    assert cardinality(full_name("Listen")) is Cardinality.STREAM_STREAM
    assert cardinality("/other.Service/Call") is Cardinality.STREAM_STREAM  # any cardinality fits a bidi stream
    assert cardinality("/google.firestore.v1.Firestore/NewRpc") is Cardinality.STREAM_STREAM
    assert is_known(COMMIT) and not is_known("/google.firestore.v1.Firestore/NewRpc")
    on("/other.Service/Call", cut_stream())  # unknown methods are streams: a cut is allowed


def test_events_are_numbered_in_order_and_immutable() -> None:
    log = EventLog()
    first = log.record(COMMIT, 1, reject(), forwarded=False, upstream_code=None, client_code="ABORTED")
    second = log.record("/other.Service/Call", 4, fail_response(), forwarded=True, upstream_code="OK",
                        client_code="UNAVAILABLE")
    assert log.events() == (first, second)
    assert (first.seq, first.method, first.call, first.kind, first.definite, first.forwarded) == (
        1, "Commit", 1, FaultKind.REJECT, True, False)
    assert (second.seq, second.method, second.kind, second.definite, second.upstream_code, second.client_code) == (
        2, "/other.Service/Call", FaultKind.FAIL_RESPONSE, False, "OK", "UNAVAILABLE")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        first.seq = 3
    assert isinstance(log.events(), tuple)
    assert (first.label, second.label) == ("reject Commit", "fail-response /other.Service/Call")


@pytest.mark.parametrize(
    ("fault", "forwarded", "lost"),
    [
        (reject(), False, False),  # refused before the emulator: nothing applied, the client knows
        (delay(0.01), True, False),  # forwarded and answered, only later
        (fail_response(), True, True),  # applied, perhaps, and the answer replaced by an error
        (drop_response(), True, True),
        (cut_stream(), True, True),
    ],
    ids=lambda value: value.kind.value if hasattr(value, "kind") else None,
)
def test_a_history_keeps_the_whole_event_and_knows_which_lost_an_answer(fault, forwarded, lost) -> None:
    """`wire_fault` hands a history the event as it happened (how the proxy records each kind: only a reject is
    not forwarded), and only a forwarded fault that is not definite lost the call's answer."""
    event = EventLog().record("BatchGetDocuments", 1, fault, forwarded=forwarded, upstream_code=None,
                              client_code=None)
    kept = wire_fault(event)
    assert kept == WireFault(fault.kind.value, "BatchGetDocuments", forwarded, fault.kind.definite)
    assert (kept.label, kept.lost_answer) == (event.label, lost)
    assert kept.forwarded is fault.kind.forwards  # the table above records each kind as the proxy does


def test_wait_for_returns_once_the_events_are_there() -> None:
    log = EventLog()
    recorder = threading.Thread(target=lambda: [log.record(COMMIT, n, reject(), forwarded=False,
                                                           upstream_code=None, client_code="ABORTED")
                                                for n in (1, 2)])
    recorder.start()
    events = log.wait_for(2, timeout=60)
    recorder.join()
    assert [event.seq for event in events] == [1, 2]
    assert log.wait_for(3, timeout=0) == events  # not there: what there is, at once


def test_rollback_for_a_transactional_commit_names_its_database_and_transaction() -> None:
    commit = CommitRequest(database="projects/demo-x/databases/(default)", transaction=b"\x00tx\xff" * 40,
                           writes=[Write(delete="projects/demo-x/databases/(default)/documents/c/d")])
    rollback = RollbackRequest.deserialize(rollback_for_commit(CommitRequest.serialize(commit)))
    assert (rollback.database, rollback.transaction) == (commit.database, commit.transaction)


def test_a_commit_outside_a_transaction_needs_no_rollback() -> None:
    commit = CommitRequest(database="projects/demo-x/databases/(default)",
                           writes=[Write(delete="projects/demo-x/databases/(default)/documents/c/d")])
    assert rollback_for_commit(CommitRequest.serialize(commit)) is None


@pytest.mark.parametrize("garbage", [b"\x0a\x05ab", b"\x80", b"\x0b"])
def test_a_malformed_message_is_refused(garbage: bytes) -> None:
    with pytest.raises(UsageError):
        length_delimited_fields(garbage)


def test_the_method_table_is_the_python_clients() -> None:
    """Every RPC of google-cloud-firestore's gRPC transport, with its cardinality, is in the table (a client
    upgrade that adds an RPC fails here until the table has it)."""
    import inspect
    import re

    from google.cloud.firestore_v1.services.firestore.transports import grpc as transport

    stubs = re.findall(r'\.(unary_unary|unary_stream|stream_stream)\(\s*"/google\.firestore\.v1\.Firestore/(\w+)"',
                       inspect.getsource(transport))
    assert len(stubs) >= 15
    shapes = {"unary_unary": Cardinality.UNARY_UNARY, "unary_stream": Cardinality.UNARY_STREAM,
              "stream_stream": Cardinality.STREAM_STREAM}
    assert {name: shapes[shape] for shape, name in stubs} == {
        name: cardinality(full_name(name)) for name in (stub[1] for stub in stubs)}
    assert {name for _, name in stubs} == set(METHODS)
