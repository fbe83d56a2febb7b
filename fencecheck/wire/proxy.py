"""A gRPC proxy between a Firestore client and the emulator that forwards every call, or faults it by plan.

``WireProxy(upstream)`` listens on a free port of 127.0.0.1 and forwards each call to ``upstream`` (the
emulator's ``host:port``) unchanged: requests and responses as raw bytes (no Firestore protos here, only
method names, ``fencecheck.wire.methods``), invocation metadata, the emulator's initial and trailing
metadata, its status code and details, and the client's deadline. A fault plan
(``fencecheck.wire.faults``) can reject, delay, lose, drop or cut single calls; every fault applied is in
``proxy.log``.

gRPC only: the emulator's REST endpoints (``GET /``, project resets, rules) are not proxied; reach them on
the emulator itself (``EmulatorHandle``). Point a Python client at the proxy with ``proxy.client(project)``
(``FIRESTORE_EMULATOR_HOST=proxy.host``, behind the same loopback and ``demo-`` guard as every fencecheck
client), or any other client with ``FIRESTORE_EMULATOR_HOST=<proxy.host>``.

Use it as a context manager, or ``start()`` and ``stop()``. ``stop()`` ends every call in flight (a held
or delayed call at once), closes the channel to the emulator and joins the proxy's threads; it is also
run at interpreter exit for a proxy still running. Its threads are daemons, so a forgotten proxy with a
call in flight (a dropped response, a Listen stream) never keeps the interpreter from exiting.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import math
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import TYPE_CHECKING, Any

import grpc

from fencecheck.emulator.discovery import loopback_emulator_host
from fencecheck.errors import UsageError
from fencecheck.wire.faults import NO_FAULTS, EventLog, Fault, FaultKind, FaultPlan, FaultRule
from fencecheck.wire.methods import Cardinality, cardinality, full_name, short_name
from fencecheck.wire.protowire import rollback_for_commit, rollback_for_read

if TYPE_CHECKING:
    from google.cloud import firestore

LOOPBACK = "127.0.0.1"
UPSTREAM_SOURCE = "the wire proxy's upstream"
_POLL_SECONDS = 0.05  # how often a held call looks whether its client has gone (stop() wakes it at once)
_UNLIMITED = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
_NO_DEADLINE = 1e9  # seconds (31 years): longer is grpc's "no deadline"
_STOPPED = (grpc.StatusCode.UNAVAILABLE, "the fault proxy is stopping")

_COMMIT, _ROLLBACK = full_name("Commit"), full_name("Rollback")
# A proxy client's first resend of a Commit waits up to this long, not google-cloud-firestore's 100 ms
# (`quick_commit_resend`).
COMMIT_RESEND_SECONDS = 0.001

_running: set[WireProxy] = set()
_running_lock = threading.Lock()


def _forwardable(metadata: tuple[tuple[str, str | bytes], ...]) -> tuple[tuple[str, str | bytes], ...]:
    # Pseudo-headers, grpc-* (the deadline travels as the timeout) and user-agent (the forwarding channel
    # sets its own, and grpc refuses it as call metadata) belong to the transport, not the call.
    return tuple((key, value) for key, value in metadata
                 if not key.startswith((":", "grpc-")) and key != "user-agent")


def _timeout(context: grpc.ServicerContext) -> float | None:
    # Without a deadline grpc reports the time to its "infinite future" (2**63 ns, some 292 years), which
    # as a timeout would overflow: forward no deadline then.
    remaining = context.time_remaining()
    return remaining if remaining is not None and math.isfinite(remaining) and remaining < _NO_DEADLINE else None


class _DaemonPool(futures.Executor):
    """The server's executor, on daemon threads started as needed (at most ``max_workers``, idle ones reused).
    ThreadPoolExecutor's threads are joined when the interpreter exits, before ``atexit`` runs (Python 3.11
    ``threading._shutdown``): a call held by a proxy nobody stopped would keep the interpreter from exiting."""

    def __init__(self, max_workers: int, name: str) -> None:
        self._max, self._name = max_workers, name
        self._work: queue.SimpleQueue[tuple[futures.Future[Any], Callable[..., Any], tuple, dict] | None] = (
            queue.SimpleQueue())
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        future: futures.Future[Any] = futures.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._work.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                thread = threading.Thread(target=self._run, name=f"{self._name}_{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)
        return future

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as error:  # handed to the future, as ThreadPoolExecutor does
                    future.set_exception(error)
            del item, future  # drop references before idling
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._work.put(None)
        if wait:
            for thread in threads:
                thread.join()


class WireProxy:
    """A fault proxy in front of one emulator (see the module docstring)."""

    def __init__(self, upstream: str, *, max_workers: int = 32) -> None:
        loopback_emulator_host(upstream, UPSTREAM_SOURCE)  # only ever in front of an emulator on this machine
        self.upstream = upstream
        self.log = EventLog()
        self._max_workers = max_workers
        self._lock = threading.Lock()
        self._plan: FaultPlan = NO_FAULTS
        self._calls: Counter[str] = Counter()  # per method, since the plan was set
        self._totals: Counter[str] = Counter()  # per method, since start
        self._lifecycle = threading.Lock()
        self._stopping = threading.Event()
        self._server: grpc.Server | None = None
        self._channel: grpc.Channel | None = None
        self._pool: _DaemonPool | None = None
        self._port: int | None = None
        self._stubs: dict[tuple[Cardinality, str], Any] = {}  # one multicallable per method, per channel

    # --- lifecycle --------------------------------------------------------------------------
    @property
    def host(self) -> str:
        if self._port is None:
            raise UsageError("the wire proxy is not running: start() it (or use it as a context manager) first")
        return f"{LOOPBACK}:{self._port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> WireProxy:
        with self._lifecycle:
            if self._server is not None:
                return self
            self._stopping.clear()
            self._pool = _DaemonPool(self._max_workers, "fencecheck-wire")
            self._channel = grpc.insecure_channel(self.upstream, options=_UNLIMITED)
            server = grpc.server(self._pool, handlers=[_Handler(self)], options=[*_UNLIMITED, ("grpc.so_reuseport", 0)])
            try:
                self._port = server.add_insecure_port(f"{LOOPBACK}:0")
                server.start()
            except BaseException:
                server.stop(None)
                self._release()
                raise
            self._server = server
            with _running_lock:
                _running.add(self)
            return self

    def stop(self) -> None:
        """End every call in flight, close the channel and join the threads. Idempotent."""
        with self._lifecycle:
            if self._server is None:
                return
            self._stopping.set()  # held and delayed calls let go now
            self._server.stop(None).wait()  # cancels the calls in flight and closes the port
            self._server = None
            self._release()
            with _running_lock:
                _running.discard(self)

    def _release(self) -> None:
        if self._channel is not None:
            self._channel.close()  # forwarded calls still waiting on the emulator fail now
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._channel = self._pool = self._port = None
        self._stubs = {}

    def __enter__(self) -> WireProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"WireProxy(upstream={self.upstream!r}, host={self._port and self.host!r})"

    # --- plans and counts -------------------------------------------------------------------
    def set_plan(self, plan: FaultPlan | FaultRule | tuple[FaultRule, ...] = NO_FAULTS) -> None:
        """Replace the fault plan; calls are counted afresh from 1 for its rules."""
        if isinstance(plan, FaultRule):
            plan = FaultPlan((plan,))
        elif not isinstance(plan, FaultPlan):
            plan = FaultPlan(plan)
        with self._lock:
            self._plan, self._calls = plan, Counter()

    @contextlib.contextmanager
    def faults(self, *rules: FaultRule) -> Iterator[WireProxy]:
        """These rules for the duration of the block, no faults after it."""
        self.set_plan(FaultPlan(rules))
        try:
            yield self
        finally:
            self.set_plan(NO_FAULTS)

    def call_counts(self) -> dict[str, int]:
        """Calls received per method (short name for Firestore's RPCs) since start, faulted or not."""
        with self._lock:
            return {short_name(method): count for method, count in self._totals.items()}

    def _next_call(self, method: str) -> tuple[int, Fault | None]:
        with self._lock:
            self._calls[method] += 1
            self._totals[method] += 1
            call = self._calls[method]
            return call, self._plan.fault_for(method, call)

    def client(self, project_id: str) -> firestore.Client:
        """A google-cloud-firestore client for ``project_id`` whose calls go through this proxy, its Commit
        resent sooner (`quick_commit_resend`)."""
        from fencecheck.emulator.lifecycle import EmulatorHandle

        return quick_commit_resend(EmulatorHandle(self.host).client(project_id))

    # --- forwarding -------------------------------------------------------------------------
    def _stub(self, shape: Cardinality, method: str) -> Any:
        """The channel's callable for ``method`` without (de)serializers: bytes in, bytes out."""
        stub = self._stubs.get((shape, method))
        if stub is None:  # two threads may both build one: harmless, the last one stays
            make = {Cardinality.UNARY_UNARY: self._channel.unary_unary, Cardinality.UNARY_STREAM:
                    self._channel.unary_stream, Cardinality.STREAM_STREAM: self._channel.stream_stream}[shape]
            stub = self._stubs[(shape, method)] = make(method)
        return stub

    def _hold(self, context: grpc.ServicerContext, seconds: float | None) -> bool:
        """Wait ``seconds`` (None: until let go); False if let go early: the proxy stops or the client has
        gone (deadline or cancel)."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while context.is_active():
            wait = _POLL_SECONDS if deadline is None else min(_POLL_SECONDS, deadline - time.monotonic())
            if wait <= 0:
                return True
            if self._stopping.wait(wait):
                return False
        return False

    def _before(self, method: str, call: int, fault: Fault | None, context: grpc.ServicerContext,
                request: Any = None) -> None:
        """Reject or delay before forwarding (``context.abort`` raises)."""
        if fault is None:
            return
        if fault.kind is FaultKind.REJECT:
            if method == _COMMIT:
                self._roll_back(request, context)
            self.log.record(method, call, fault, forwarded=False, upstream_code=None, client_code=fault.code.name)
            context.abort(fault.code, fault.details)
        if fault.kind is FaultKind.DELAY:
            if not self._hold(context, fault.seconds):
                context.abort(*_STOPPED)
            self.log.record(method, call, fault, forwarded=True, upstream_code=None, client_code=None)

    def _roll_back(self, commit_request: bytes, context: grpc.ServicerContext) -> None:
        """End the transaction of a rejected Commit on the emulator, as a server that refuses a commit does
        (``fencecheck.wire.protowire`` says why). Best effort: a failed rollback leaves what a lost Rollback
        leaves, a transaction the emulator times out."""
        self._send_rollback(lambda: rollback_for_commit(commit_request), context)

    def _roll_back_read(self, method: str, request: Any, responses: list[bytes],
                        context: grpc.ServicerContext) -> None:
        """End the transaction a faulted read began (``fencecheck.wire.protowire.rollback_for_read`` says why).
        Best effort, as for a rejected Commit."""
        if isinstance(request, bytes):
            self._send_rollback(lambda: rollback_for_read(short_name(method), request, responses), context)

    def _send_rollback(self, build: Callable[[], bytes | None], context: grpc.ServicerContext) -> None:
        """Send the emulator the RollbackRequest `build` makes, if it names a transaction (None, or a request
        that is not the message expected: nothing the proxy could name). Best effort: an RPC error is dropped."""
        try:
            rollback = build()
        except UsageError:
            return
        if rollback is None:
            return
        with contextlib.suppress(grpc.RpcError):
            self._stub(Cardinality.UNARY_UNARY, _ROLLBACK).with_call(
                rollback, metadata=_forwardable(context.invocation_metadata()), timeout=_timeout(context))

    def _after(self, method: str, call: int, fault: Fault, context: grpc.ServicerContext,
               upstream_code: grpc.StatusCode | None) -> None:
        """Lose, drop or cut the answer after forwarding (always raises through ``context.abort``)."""
        upstream = upstream_code.name if upstream_code is not None else None
        if fault.kind is FaultKind.DROP_RESPONSE:
            self.log.record(method, call, fault, forwarded=True, upstream_code=upstream, client_code=None)
            self._hold(context, None)
            context.abort(*_STOPPED)  # the client has gone already, unless the proxy is stopping
        self.log.record(method, call, fault, forwarded=True, upstream_code=upstream, client_code=fault.code.name)
        context.abort(fault.code, fault.details)

    def _unary(self, method: str, request: bytes, context: grpc.ServicerContext) -> bytes:
        call, fault = self._next_call(method)
        self._before(method, call, fault, context, request)
        forward = self._stub(Cardinality.UNARY_UNARY, method)
        try:
            response, answer = forward.with_call(
                request, metadata=_forwardable(context.invocation_metadata()), timeout=_timeout(context))
        except grpc.RpcError as error:
            if fault is not None and fault.kind in _LOSES_ANSWER:
                self._after(method, call, fault, context, error.code())
            _relay_error(context, error)
        if fault is not None and fault.kind in _LOSES_ANSWER:
            self._after(method, call, fault, context, grpc.StatusCode.OK)
        context.send_initial_metadata(answer.initial_metadata() or ())
        context.set_trailing_metadata(answer.trailing_metadata() or ())
        return response

    def _streaming(self, method: str, request: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
        """Unary-stream (``request`` is bytes) and stream-stream (an iterator of bytes) calls."""
        call, fault = self._next_call(method)
        self._before(method, call, fault, context)
        kind = fault.kind if fault is not None else None
        forward = self._stub(cardinality(method), method)
        responses = forward(request, metadata=_forwardable(context.invocation_metadata()), timeout=_timeout(context))
        context.add_callback(responses.cancel)  # the client went away: so does the forwarded call
        faulted = kind in _LOSES_ANSWER or kind is FaultKind.CUT_STREAM
        seen: list[bytes] = []  # a faulted read's responses: the transaction it began, if any (_roll_back_read)
        try:
            if kind not in _LOSES_ANSWER:
                context.send_initial_metadata(responses.initial_metadata() or ())
            for response in responses:
                if faulted:
                    seen.append(response)
                if kind in _LOSES_ANSWER:
                    continue
                yield response
                if kind is FaultKind.CUT_STREAM:
                    responses.cancel()
                    self._roll_back_read(method, request, seen, context)
                    self._after(method, call, fault, context, None)
        except grpc.RpcError as error:
            if faulted:
                self._roll_back_read(method, request, seen, context)
                self._after(method, call, fault, context, error.code())
            _relay_error(context, error)
        finally:
            responses.cancel()  # no-op once the call has ended
        if faulted:  # a lost answer, or a cut stream with no response at all
            self._roll_back_read(method, request, seen, context)
            self._after(method, call, fault, context, grpc.StatusCode.OK)
        context.set_trailing_metadata(responses.trailing_metadata() or ())


_LOSES_ANSWER = (FaultKind.FAIL_RESPONSE, FaultKind.DROP_RESPONSE)


def _relay_error(context: grpc.ServicerContext, error: grpc.RpcError) -> None:
    """Answer the client the emulator's error: its code, details and trailing metadata (rich error details
    travel in ``grpc-status-details-bin`` there)."""
    context.set_trailing_metadata(error.trailing_metadata() or ())
    context.abort(error.code(), error.details() or "")


class _Handler(grpc.GenericRpcHandler):
    """Every method, by its cardinality (``fencecheck.wire.methods``); unknown methods as stream-stream."""

    def __init__(self, proxy: WireProxy) -> None:
        self._proxy = proxy

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        shape = cardinality(method)
        handler: Callable[..., Any]
        if shape is Cardinality.UNARY_UNARY:
            handler = functools.partial(self._proxy._unary, method)
            return grpc.unary_unary_rpc_method_handler(handler)
        handler = functools.partial(self._proxy._streaming, method)
        if shape is Cardinality.UNARY_STREAM:
            return grpc.unary_stream_rpc_method_handler(handler)
        return grpc.stream_stream_rpc_method_handler(handler)


def stop_all() -> None:
    """Stop every proxy of this process still running."""
    with _running_lock:
        proxies = list(_running)
    for proxy in proxies:
        proxy.stop()


atexit.register(stop_all)


def quick_commit_resend(db: firestore.Client) -> firestore.Client:
    """`db`, its Commit retry backing off from `COMMIT_RESEND_SECONDS` instead of the gapic default's 100 ms.

    A commit whose answer the proxy lost (`fail_response(UNAVAILABLE)`) is there for the client's own resend,
    which the emulator refuses because the transaction is closed, whenever it comes. The default's first pause
    (uniform up to 100 ms) only spent time: a fifth of a lockstep machine's run. The retried codes, the growth,
    the deadline and the resend itself stay the library's. There is no public setting for a method's default
    retry, so this replaces the one on the client's own wrapped Commit (google-cloud-firestore 2.x)."""
    transport = db._firestore_api._transport
    commit = transport._wrapped_methods[transport.commit]
    commit._retry = commit._retry.with_delay(initial=COMMIT_RESEND_SECONDS)
    return db
