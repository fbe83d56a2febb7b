"""The wire proxy in front of the real emulator, seen through a real google-cloud-firestore client (issue 15).

Each test pins what google-cloud-firestore 2.34 does under one fault; docs/wire-faults.md lists them as
findings. Where the client's own retries absorb a fault, the proxy's call counts show the retry. A test here
failing after a client upgrade means the client's behaviour under that fault changed: update the note.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.api_core import exceptions
from google.cloud import firestore

from fencecheck.emulator.lifecycle import EmulatorHandle, close_client
from fencecheck.wire import FaultKind, WireProxy, cut_stream, delay, drop_response, fail_response, on, reject
from fencecheck.wire.proxy import COMMIT_RESEND_SECONDS

pytestmark = pytest.mark.emulator
HANG_GUARD = 60  # seconds: only reached if something hangs (the test then fails instead of hanging)


@pytest.fixture
def proxy(emulator: EmulatorHandle) -> Iterator[WireProxy]:
    with WireProxy(emulator.host) as running:
        yield running


@pytest.fixture
def wired(proxy: WireProxy, project_id: str) -> Iterator[firestore.Client]:
    """A client of the same project as ``firestore_db``, whose calls go through the proxy."""
    client = proxy.client(project_id)
    yield client
    close_client(client)


def increment(client: firestore.Client, path: str) -> Any:
    """One read-then-write transaction; returns the commit's write results."""
    ref = client.document(path)
    transaction = client.transaction()

    @firestore.transactional
    def run(tx: firestore.Transaction) -> None:
        snapshot = ref.get(transaction=tx)
        tx.set(ref, {"n": (snapshot.get("n") if snapshot.exists else 0) + 1})

    run(transaction)
    return transaction.write_results


def counts_during(proxy: WireProxy, action) -> tuple[object, dict[str, int]]:
    """What ``action()`` returned or raised, and the calls per method the proxy received meanwhile."""
    before = proxy.call_counts()
    try:
        outcome: object = action()
    except Exception as error:  # the outcome under test
        outcome = error
    after = proxy.call_counts()
    return outcome, {method: count - before.get(method, 0) for method, count in after.items()
                     if count != before.get(method, 0)}


def stored(db: firestore.Client, path: str) -> dict | None:
    return db.document(path).get().to_dict()


def test_without_faults_a_transaction_through_the_proxy_is_one_made_directly(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    for _ in range(2):
        wired_results, direct_results = increment(wired, "c/wired"), increment(firestore_db, "c/direct")
    assert stored(firestore_db, "c/wired") == stored(firestore_db, "c/direct") == {"n": 2}
    assert stored(wired, "c/direct") == {"n": 2}  # reads through the proxy see the same documents
    assert [type(result.update_time) for result in wired_results] == [type(result.update_time)
                                                                       for result in direct_results]
    assert all(result.update_time is not None for result in wired_results)
    assert wired.document("c/wired").get().update_time == firestore_db.document("c/wired").get().update_time
    assert proxy.call_counts() == {"BeginTransaction": 2, "BatchGetDocuments": 4, "Commit": 2}
    assert proxy.log.events() == ()


def test_a_commit_rejected_every_time_stores_nothing_and_the_client_gives_up(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("Commit", reject(), times=None))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    # ABORTED: @transactional runs the function again, max_attempts (5) times, then raises ValueError
    assert isinstance(outcome, ValueError) and isinstance(outcome.__cause__, exceptions.Aborted)
    assert calls == {"BeginTransaction": 5, "BatchGetDocuments": 5, "Commit": 5, "Rollback": 1}
    assert stored(firestore_db, "c/d") is None
    events = proxy.log.events()
    assert [(event.seq, event.call, event.kind, event.definite, event.forwarded) for event in events] == [
        (n, n, FaultKind.REJECT, True, False) for n in range(1, 6)]


def test_a_commit_rejected_once_is_retried_by_the_client_and_leaves_no_lock_behind(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("Commit", reject()))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    assert not isinstance(outcome, Exception)
    # one retry, no lock wait: the proxy rolled the rejected commit's transaction back on the emulator
    assert calls == {"BeginTransaction": 2, "BatchGetDocuments": 2, "Commit": 2}
    assert stored(firestore_db, "c/d") == {"n": 1}


def test_a_commit_rejected_with_a_code_nobody_retries_raises_it(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("Commit", reject(grpc.StatusCode.FAILED_PRECONDITION)))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    assert isinstance(outcome, exceptions.FailedPrecondition)
    assert calls == {"BeginTransaction": 1, "BatchGetDocuments": 1, "Commit": 1, "Rollback": 1}
    assert stored(firestore_db, "c/d") is None
    proxy.set_plan()
    increment(wired, "c/d")  # no lock left behind either
    assert stored(firestore_db, "c/d") == {"n": 1}


def test_a_commit_applied_but_answered_unavailable_is_retried_and_then_refused(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("Commit", fail_response()))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    # The gapic layer retries Commit on UNAVAILABLE with the same transaction id; the emulator has committed
    # it and refuses: the caller sees InvalidArgument, an error that reads as definite, for an applied write.
    assert isinstance(outcome, exceptions.InvalidArgument)
    assert "Transaction is invalid or closed" in str(outcome)
    assert calls == {"BeginTransaction": 1, "BatchGetDocuments": 1, "Commit": 2, "Rollback": 1}
    assert stored(firestore_db, "c/d") == {"n": 1}
    [event] = proxy.log.events()
    assert (event.method, event.kind, event.definite, event.forwarded, event.upstream_code, event.client_code) == (
        "Commit", FaultKind.FAIL_RESPONSE, False, True, "OK", "UNAVAILABLE")


def _commit_retry(client: firestore.Client) -> Any:
    transport = client._firestore_api._transport
    return transport._wrapped_methods[transport.commit]._retry


def test_a_proxy_client_resends_a_commit_sooner_on_the_same_codes(
        wired: firestore.Client, firestore_db: firestore.Client) -> None:
    quick, default = _commit_retry(wired), _commit_retry(firestore_db)
    assert (default._initial, quick._initial) == (0.1, COMMIT_RESEND_SECONDS)
    assert (quick._maximum, quick._multiplier, quick._timeout) == (
        default._maximum, default._multiplier, default._timeout)
    errors = [exceptions.ServiceUnavailable("x"), exceptions.InternalServerError("x"),
              exceptions.ResourceExhausted("x"), exceptions.DeadlineExceeded("x"), exceptions.Aborted("x"),
              exceptions.InvalidArgument("x")]
    assert [quick._predicate(e) for e in errors] == [default._predicate(e) for e in errors]
    assert quick._predicate(exceptions.ServiceUnavailable("x")) is True  # the resend the lost answers are for


def test_a_commit_applied_but_answered_deadline_exceeded_raises_it(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("Commit", fail_response(grpc.StatusCode.DEADLINE_EXCEEDED)))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    assert isinstance(outcome, exceptions.DeadlineExceeded)
    assert calls == {"BeginTransaction": 1, "BatchGetDocuments": 1, "Commit": 1, "Rollback": 1}
    assert stored(firestore_db, "c/d") == {"n": 1}


def test_a_dropped_commit_response_is_applied_and_the_caller_waits_until_the_proxy_stops(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("Commit", drop_response()))
    batch = wired.batch()
    batch.set(wired.document("c/d"), {"n": 1})
    outcome: list[object] = []

    def commit() -> None:
        try:
            outcome.append(batch.commit(retry=None))  # the gapic retry would redial a stopped proxy for 60 s
        except Exception as error:
            outcome.append(error)

    caller = threading.Thread(target=commit)
    caller.start()
    [event] = proxy.log.wait_for(1, timeout=HANG_GUARD)
    assert (event.kind, event.upstream_code, event.client_code) == (FaultKind.DROP_RESPONSE, "OK", None)
    assert stored(firestore_db, "c/d") == {"n": 1}
    assert caller.is_alive() and outcome == []  # still waiting for an answer
    proxy.stop()
    caller.join(HANG_GUARD)
    [error] = outcome
    assert isinstance(error, exceptions.GoogleAPICallError), error


def test_begin_transaction_unavailable_once_is_absorbed_by_the_client_retry(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("BeginTransaction", reject(grpc.StatusCode.UNAVAILABLE)))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    assert not isinstance(outcome, Exception)
    assert calls == {"BeginTransaction": 2, "BatchGetDocuments": 1, "Commit": 1}
    assert stored(firestore_db, "c/d") == {"n": 1}


def test_begin_transaction_refused_surfaces_as_a_rollback_error(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("BeginTransaction", reject(grpc.StatusCode.PERMISSION_DENIED)))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    # The client's rollback-on-error finds no transaction id and raises ValueError; the PermissionDenied
    # is only its __context__.
    assert isinstance(outcome, ValueError) and "no transaction ID" in str(outcome)
    assert isinstance(outcome.__context__, exceptions.PermissionDenied)
    assert calls == {"BeginTransaction": 1}
    assert stored(firestore_db, "c/d") is None


def test_batch_get_unavailable_once_is_absorbed_and_refused_raises(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("BatchGetDocuments", fail_response()))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    assert not isinstance(outcome, Exception)
    assert calls == {"BeginTransaction": 1, "BatchGetDocuments": 2, "Commit": 1}
    proxy.set_plan(on("BatchGetDocuments", reject(grpc.StatusCode.PERMISSION_DENIED)))
    outcome, calls = counts_during(proxy, lambda: increment(wired, "c/d"))
    assert isinstance(outcome, exceptions.PermissionDenied)
    assert calls == {"BeginTransaction": 1, "BatchGetDocuments": 1, "Rollback": 1}
    assert stored(firestore_db, "c/d") == {"n": 1}


def test_batch_get_cut_after_the_first_document(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    firestore_db.document("c/a").set({"n": 1})
    firestore_db.document("c/b").set({"n": 2})
    proxy.set_plan(on("BatchGetDocuments", cut_stream(), times=None))
    # a single-document get reads the first response only: the cut is never seen
    assert wired.document("c/a").get().to_dict() == {"n": 1}
    outcome, calls = counts_during(proxy, lambda: list(wired.get_all([wired.document("c/a"),
                                                                        wired.document("c/b")])))
    assert isinstance(outcome, exceptions.ServiceUnavailable), outcome
    assert calls == {"BatchGetDocuments": 1}
    assert {event.kind for event in proxy.log.events()} == {FaultKind.CUT_STREAM}


def test_run_query_refused_raises_and_cut_hits_a_client_bug(
        proxy: WireProxy, wired: firestore.Client, firestore_db: firestore.Client) -> None:
    firestore_db.document("c/a").set({"n": 1})
    firestore_db.document("c/b").set({"n": 2})
    query = wired.collection("c")
    proxy.set_plan(on("RunQuery", reject(grpc.StatusCode.UNAVAILABLE)))
    outcome, calls = counts_during(proxy, lambda: [doc.id for doc in query.stream()])
    assert (outcome, calls) == (["a", "b"], {"RunQuery": 2})  # retried by the gapic layer
    proxy.set_plan(on("RunQuery", reject(grpc.StatusCode.PERMISSION_DENIED)))
    outcome, _ = counts_during(proxy, lambda: [doc.id for doc in query.stream()])
    assert isinstance(outcome, exceptions.PermissionDenied)
    proxy.set_plan(on("RunQuery", cut_stream()))
    outcome, calls = counts_during(proxy, lambda: [doc.id for doc in query.stream()])
    # google-cloud-firestore 2.34.1, Query._retry_query_after_exception: with the default retry it reads
    # `_retry` off the raw grpc callable, so a query stream that fails after a response raises AttributeError
    assert isinstance(outcome, AttributeError) and "_retry" in str(outcome), outcome
    assert calls == {"RunQuery": 1}


def test_a_delayed_commit_commits(proxy: WireProxy, wired: firestore.Client,
                                  firestore_db: firestore.Client) -> None:
    proxy.set_plan(on("Commit", delay(0.05)))
    increment(wired, "c/d")
    assert stored(firestore_db, "c/d") == {"n": 1}
    [event] = proxy.log.events()
    assert (event.kind, event.definite, event.forwarded) == (FaultKind.DELAY, True, True)


def test_the_event_log_lists_every_fault_in_order(proxy: WireProxy, wired: firestore.Client) -> None:
    with proxy.faults(on("BeginTransaction", reject(grpc.StatusCode.UNAVAILABLE)),
                      on("Commit", fail_response(grpc.StatusCode.DEADLINE_EXCEEDED))):
        with pytest.raises(exceptions.DeadlineExceeded):
            increment(wired, "c/d")
    increment(wired, "c/d")  # no faults after the block
    assert [(e.seq, e.method, e.call, e.kind, e.definite, e.forwarded, e.upstream_code, e.client_code)
            for e in proxy.log.events()] == [
        (1, "BeginTransaction", 1, FaultKind.REJECT, True, False, None, "UNAVAILABLE"),
        (2, "Commit", 1, FaultKind.FAIL_RESPONSE, False, True, "OK", "DEADLINE_EXCEEDED"),
    ]


def test_a_stopped_proxy_leaves_no_thread_and_its_port_is_free(emulator: EmulatorHandle, project_id: str) -> None:
    before = set(threading.enumerate())
    proxy = WireProxy(emulator.host).start()
    port = int(proxy.host.rsplit(":", 1)[1])
    client = proxy.client(project_id)
    increment(client, "c/d")
    close_client(client)
    proxy.stop()
    assert set(threading.enumerate()) - before == set()

    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))


def test_a_listen_stream_is_forwarded(proxy: WireProxy, wired: firestore.Client,
                                      firestore_db: firestore.Client) -> None:
    firestore_db.document("c/d").set({"n": 1})
    seen: list[dict] = []
    arrived = threading.Event()

    def on_snapshot(snapshots, changes, read_time) -> None:
        seen.extend(snapshot.to_dict() for snapshot in snapshots)
        if seen:
            arrived.set()

    watch = wired.document("c/d").on_snapshot(on_snapshot)
    try:
        assert arrived.wait(HANG_GUARD)
    finally:
        watch.unsubscribe()
    assert seen[0] == {"n": 1}
    assert proxy.call_counts()["Listen"] >= 1
