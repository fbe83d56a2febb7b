"""The wire proxy forwards and faults calls, against a fake upstream gRPC server (no emulator needed).

The fake stands in for the emulator with a few methods of every cardinality, so the tests see exactly what
reached it (bytes, metadata, deadline) and what came back to the client. The emulator-backed tests
(tests/emulator/test_wire_proxy.py) show the same faults through a real google-cloud-firestore client.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.cloud.firestore_v1.types import CommitRequest, RollbackRequest

from fencecheck.errors import EmulatorTargetError, UsageError
from fencecheck.wire import FaultKind, WireProxy, cut_stream, delay, drop_response, fail_response, on, reject

F = "/google.firestore.v1.Firestore/"
REPO_ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 60  # seconds: only ever reached if the proxy hangs (then the test fails instead of hanging)


class FakeUpstream(grpc.GenericRpcHandler):
    """Records every call: (method, request, metadata, deadline set?)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object, dict, bool]] = []

    def _note(self, method: str, request: object, context: grpc.ServicerContext) -> None:
        remaining = context.time_remaining()
        self.calls.append((method, request, dict(context.invocation_metadata()), remaining < 3600))

    def methods(self) -> list[str]:
        return [call[0] for call in self.calls]

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = details.method

        def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
            self._note(method, request, context)
            if method == F + "GetDocument":
                context.set_trailing_metadata((("x-why", "because"), ("x-bin", b"\x00\xff")))
                context.abort(grpc.StatusCode.NOT_FOUND, "no such document")
            context.send_initial_metadata((("x-initial", "i"),))
            context.set_trailing_metadata((("x-trailing", "t"),))
            return b"answer:" + request

        def stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
            self._note(method, request, context)
            yield from (b"r0", b"r1", b"r2")

        def bidi(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
            self._note(method, None, context)
            for request in requests:
                yield request.upper()

        if method in (F + "RunQuery", F + "BatchGetDocuments"):
            return grpc.unary_stream_rpc_method_handler(stream)
        if method == F + "Listen":
            return grpc.stream_stream_rpc_method_handler(bidi)
        return grpc.unary_unary_rpc_method_handler(unary)  # also /other.Service/Echo: unary upstream


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    server = grpc.server(futures.ThreadPoolExecutor(8, thread_name_prefix="fake-upstream"), handlers=[fake])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield fake, f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


@pytest.fixture
def fake(upstream: tuple[FakeUpstream, str]) -> FakeUpstream:
    upstream[0].calls.clear()
    return upstream[0]


@pytest.fixture
def proxy(upstream: tuple[FakeUpstream, str]) -> Iterator[WireProxy]:
    with WireProxy(upstream[1]) as running:
        yield running


@pytest.fixture
def channel(proxy: WireProxy) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(proxy.host) as client_channel:
        yield client_channel


def test_unary_bytes_metadata_and_deadline_pass_both_ways(fake: FakeUpstream, channel: grpc.Channel) -> None:
    response, call = channel.unary_unary(F + "Commit").with_call(
        b"\x00raw\xff", metadata=(("x-goog-request-params", "database=x"), ("x-token-bin", b"\x01")), timeout=30)
    assert response == b"answer:\x00raw\xff"
    assert ("x-initial", "i") in call.initial_metadata() and ("x-trailing", "t") in call.trailing_metadata()
    [(method, request, metadata, has_deadline)] = fake.calls
    assert (method, request, has_deadline) == (F + "Commit", b"\x00raw\xff", True)
    assert metadata["x-goog-request-params"] == "database=x" and metadata["x-token-bin"] == b"\x01"


def test_no_deadline_is_forwarded_as_none(fake: FakeUpstream, channel: grpc.Channel) -> None:
    channel.unary_unary(F + "Commit")(b"x")
    assert fake.calls[0][3] is False


def test_an_upstream_error_reaches_the_client_with_its_details_and_trailers(channel: grpc.Channel) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        channel.unary_unary(F + "GetDocument")(b"x")
    error = raised.value
    assert (error.code(), error.details()) == (grpc.StatusCode.NOT_FOUND, "no such document")
    trailers = dict(error.trailing_metadata())
    assert (trailers["x-why"], trailers["x-bin"]) == ("because", b"\x00\xff")


def test_streams_and_unknown_methods_are_forwarded(fake: FakeUpstream, channel: grpc.Channel) -> None:
    assert list(channel.unary_stream(F + "RunQuery")(b"q")) == [b"r0", b"r1", b"r2"]
    assert list(channel.stream_stream(F + "Listen")(iter([b"a", b"b"]))) == [b"A", b"B"]
    # unknown to the proxy, so forwarded as a bidi stream; upstream (and the client) see a unary call
    assert channel.unary_unary("/other.Service/Echo")(b"hi") == b"answer:hi"
    assert fake.methods() == [F + "RunQuery", F + "Listen", "/other.Service/Echo"]


def test_a_rejected_commit_is_never_forwarded_and_its_transaction_is_rolled_back(
        fake: FakeUpstream, proxy: WireProxy, channel: grpc.Channel) -> None:
    commit = CommitRequest(database="projects/demo-x/databases/(default)", transaction=b"tx-1")
    proxy.set_plan(on("Commit", reject()))
    with pytest.raises(grpc.RpcError) as raised:
        channel.unary_unary(F + "Commit")(CommitRequest.serialize(commit))
    assert raised.value.code() is grpc.StatusCode.ABORTED
    [(method, request, _, _)] = fake.calls
    assert method == F + "Rollback"
    assert RollbackRequest.deserialize(request).transaction == b"tx-1"
    [event] = proxy.log.events()
    assert (event.kind, event.definite, event.forwarded, event.client_code) == (
        FaultKind.REJECT, True, False, "ABORTED")


def test_a_lost_response_was_forwarded_and_the_client_sees_the_fault_code(
        fake: FakeUpstream, proxy: WireProxy, channel: grpc.Channel) -> None:
    proxy.set_plan(on("Commit", fail_response()))
    with pytest.raises(grpc.RpcError) as raised:
        channel.unary_unary(F + "Commit")(b"x")
    assert raised.value.code() is grpc.StatusCode.UNAVAILABLE
    assert fake.methods() == [F + "Commit"]
    [event] = proxy.log.events()
    assert (event.kind, event.definite, event.forwarded, event.upstream_code, event.client_code) == (
        FaultKind.FAIL_RESPONSE, False, True, "OK", "UNAVAILABLE")
    assert channel.unary_unary(F + "Commit")(b"y") == b"answer:y"  # only call 1 of the plan


def test_a_cut_stream_delivers_its_first_response_then_the_error(proxy: WireProxy, channel: grpc.Channel) -> None:
    proxy.set_plan(on("RunQuery", cut_stream()))
    received = []
    with pytest.raises(grpc.RpcError) as raised:
        for response in channel.unary_stream(F + "RunQuery")(b"q"):
            received.append(response)
    assert received == [b"r0"] and raised.value.code() is grpc.StatusCode.UNAVAILABLE
    [event] = proxy.log.events()
    assert (event.kind, event.method, event.definite, event.forwarded) == (
        FaultKind.CUT_STREAM, "RunQuery", False, True)


def test_a_failed_stream_response_delivers_nothing(fake: FakeUpstream, proxy: WireProxy,
                                                   channel: grpc.Channel) -> None:
    proxy.set_plan(on("BatchGetDocuments", fail_response(grpc.StatusCode.INTERNAL)))
    received = []
    with pytest.raises(grpc.RpcError) as raised:
        received.extend(channel.unary_stream(F + "BatchGetDocuments")(b"q"))
    assert received == [] and raised.value.code() is grpc.StatusCode.INTERNAL
    assert proxy.log.events()[0].upstream_code == "OK" and fake.methods() == [F + "BatchGetDocuments"]


def test_a_dropped_response_holds_the_call_until_the_client_cancels(proxy: WireProxy, channel: grpc.Channel) -> None:
    proxy.set_plan(on("Commit", drop_response()))
    pending = channel.unary_unary(F + "Commit").future(b"x")
    [event] = proxy.log.wait_for(1, timeout=HANG_GUARD)  # recorded once the emulator's answer is discarded
    assert (event.kind, event.upstream_code, event.client_code) == (FaultKind.DROP_RESPONSE, "OK", None)
    assert not pending.done()
    pending.cancel()
    assert pending.cancelled()


def test_a_dropped_response_ends_when_the_client_deadline_passes(proxy: WireProxy, channel: grpc.Channel) -> None:
    proxy.set_plan(on("Commit", drop_response()))
    with pytest.raises(grpc.RpcError) as raised:
        channel.unary_unary(F + "Commit")(b"x", timeout=0.5)
    assert raised.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED


def test_a_delayed_call_is_forwarded_unchanged(fake: FakeUpstream, proxy: WireProxy, channel: grpc.Channel) -> None:
    proxy.set_plan(on("Commit", delay(0.05)))
    assert channel.unary_unary(F + "Commit")(b"x") == b"answer:x"
    [event] = proxy.log.events()
    assert (event.kind, event.definite, event.forwarded) == (FaultKind.DELAY, True, True)


def test_plans_count_calls_afresh_and_faults_restores_none(proxy: WireProxy, channel: grpc.Channel) -> None:
    commit = channel.unary_unary(F + "Commit")
    commit(b"1")
    with proxy.faults(on("Commit", reject(), call=2)):
        commit(b"2")  # call 1 of this plan
        with pytest.raises(grpc.RpcError):
            commit(b"3")
    commit(b"4")
    assert proxy.call_counts() == {"Commit": 4}
    assert [(event.seq, event.call) for event in proxy.log.events()] == [(1, 2)]


def _threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if not thread.name.startswith("fake-upstream")}


def test_a_stopped_proxy_leaves_no_thread_and_frees_its_port(upstream: tuple[FakeUpstream, str]) -> None:
    before = _threads()
    proxy = WireProxy(upstream[1]).start()
    port = int(proxy.host.rsplit(":", 1)[1])
    with grpc.insecure_channel(proxy.host) as client_channel:
        proxy.set_plan(on("Commit", drop_response()))
        held = client_channel.unary_unary(F + "Commit").future(b"x")  # in flight when the proxy stops
        proxy.log.wait_for(1, timeout=HANG_GUARD)
        assert len(_threads() - before) > 0
        proxy.stop()
        with pytest.raises(grpc.RpcError):
            held.result(timeout=HANG_GUARD)
    proxy.stop()  # idempotent
    assert _threads() - before == set()
    assert not proxy.running
    with socket.socket() as probe:  # nobody listens there any more
        with pytest.raises(ConnectionRefusedError):
            probe.connect(("127.0.0.1", port))
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


def test_a_proxy_not_running_has_no_host_and_only_sits_in_front_of_loopback() -> None:
    with pytest.raises(UsageError):
        WireProxy("127.0.0.1:1").host  # noqa: B018
    with pytest.raises(EmulatorTargetError):
        WireProxy("10.0.0.1:8080")


FORGOTTEN_PROXY = textwrap.dedent("""
    from concurrent import futures
    import grpc
    from fencecheck.wire import WireProxy, drop_response, on

    class Upstream(grpc.GenericRpcHandler):
        def service(self, details):
            return grpc.unary_unary_rpc_method_handler(lambda request, context: request)

    server = grpc.server(futures.ThreadPoolExecutor(2), handlers=[Upstream()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    proxy = WireProxy(f"127.0.0.1:{port}").start()
    proxy.set_plan(on("Commit", drop_response()))
    channel = grpc.insecure_channel(proxy.host)
    held = channel.unary_unary("/google.firestore.v1.Firestore/Commit").future(b"x")
    print("held" if proxy.log.wait_for(1, timeout=60) else "not held", flush=True)
    # the script ends here: the proxy is never stopped and a call is held in it
""")


def test_a_forgotten_proxy_holding_a_call_does_not_keep_the_interpreter_from_exiting() -> None:
    finished = subprocess.run([sys.executable, "-c", FORGOTTEN_PROXY], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=HANG_GUARD)
    assert (finished.returncode, finished.stdout) == (0, "held\n"), finished.stderr


def test_a_proxied_client_passes_the_same_guard_as_every_client(proxy: WireProxy) -> None:
    with pytest.raises(EmulatorTargetError):
        proxy.client("real-project")  # not demo-: refused before a client exists
    client = proxy.client("demo-wire-guard")
    assert client._emulator_host == proxy.host
