"""Fault plans and the fault event log of the wire proxy: pure logic, no sockets.

A ``FaultPlan`` is an immutable list of ``FaultRule``: "the n-th call (and the next ``times - 1``) of this
method, counted from when the plan was set, gets this ``Fault``". The first matching rule wins; a call no
rule matches is forwarded unchanged. The harness sets a plan per step or per call
(``WireProxy.set_plan``, ``WireProxy.faults``).

Each fault the proxy applies is recorded as a ``FaultEvent``: method, kind, whether the outcome is
*definite* (the client learns the true outcome: the call was refused before it reached the emulator, or
merely delayed) or *indefinite* (it reached the emulator and the answer was lost or cut: it may have been
applied), what the emulator answered and what the client was told, under a monotonic sequence number.

Status codes, chosen after google-cloud-firestore 2.34 (``firestore_v1/transaction.py`` and the gapic
retry table in ``services/firestore/transports/base.py``):

* ``reject`` defaults to ABORTED, what Firestore answers a commit that lost a contention: ``@transactional``
  retries the whole function on it (up to ``max_attempts``), no gapic layer retries it.
* ``fail_response`` and ``cut_stream`` default to UNAVAILABLE, what a client sees when the connection breaks
  after its request was sent. The gapic layer retries UNAVAILABLE on every Firestore RPC (Commit too, with
  the same transaction id) for up to 60 s, so pass another code (DEADLINE_EXCEEDED is not retried on
  Commit; PERMISSION_DENIED nowhere) when the error must reach the caller's code.
"""

from __future__ import annotations

import enum
import math
import threading

import attrs
import grpc

from fencecheck.errors import UsageError
from fencecheck.wire.methods import Cardinality, cardinality, full_name, short_name


class FaultKind(enum.Enum):
    REJECT = "reject"  # answer an error without forwarding: definite, nothing applied
    FAIL_RESPONSE = "fail-response"  # forward, then answer an error in place of the response: indefinite
    DROP_RESPONSE = "drop-response"  # forward, then answer nothing until the client gives up or the proxy stops
    CUT_STREAM = "cut-stream"  # forward, relay the first response only, then end the call with an error
    DELAY = "delay"  # wait, then forward unchanged: definite

    @property
    def definite(self) -> bool:
        return self in (FaultKind.REJECT, FaultKind.DELAY)

    @property
    def forwards(self) -> bool:
        return self is not FaultKind.REJECT


def _code(value: grpc.StatusCode | None) -> grpc.StatusCode | None:
    if value is grpc.StatusCode.OK:
        raise UsageError("a fault's status code must be an error code, not OK")
    return value


@attrs.frozen
class Fault:
    """What happens to one call. Build with ``reject``, ``fail_response``, ``drop_response``, ``cut_stream``,
    ``delay``."""

    kind: FaultKind
    code: grpc.StatusCode | None = attrs.field(default=None, converter=_code)  # told to the client
    details: str = ""
    seconds: float = 0.0  # DELAY only

    def __attrs_post_init__(self) -> None:
        needs_code = self.kind in (FaultKind.REJECT, FaultKind.FAIL_RESPONSE, FaultKind.CUT_STREAM)
        if needs_code != (self.code is not None):
            raise UsageError(f"a {self.kind.value} fault {'needs' if needs_code else 'takes no'} status code")
        if self.kind is FaultKind.DELAY and not (math.isfinite(self.seconds) and self.seconds > 0):
            raise UsageError(f"a delay needs a finite number of seconds above 0, got {self.seconds!r}")

    @property
    def definite(self) -> bool:
        return self.kind.definite


def reject(code: grpc.StatusCode = grpc.StatusCode.ABORTED, details: str = "rejected by the fault proxy") -> Fault:
    return Fault(FaultKind.REJECT, code, details)


def fail_response(
    code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE, details: str = "response lost by the fault proxy"
) -> Fault:
    return Fault(FaultKind.FAIL_RESPONSE, code, details)


def drop_response() -> Fault:
    return Fault(FaultKind.DROP_RESPONSE)


def cut_stream(
    code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE, details: str = "stream cut by the fault proxy"
) -> Fault:
    return Fault(FaultKind.CUT_STREAM, code, details)


def delay(seconds: float) -> Fault:
    return Fault(FaultKind.DELAY, seconds=seconds)


def _first(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"a rule's first call is counted from 1, got {value!r}")
    return value


def _times(value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UsageError(f"a rule applies to at least 1 call (or None: every call), got {value!r}")
    return value


@attrs.frozen
class FaultRule:
    """Calls ``first`` .. ``first + times - 1`` of ``method`` (a full name) get ``fault``; ``times=None``: every
    call from ``first`` on."""

    method: str = attrs.field(converter=full_name)
    fault: Fault
    first: int = attrs.field(default=1, converter=_first)
    times: int | None = attrs.field(default=1, converter=_times)

    def __attrs_post_init__(self) -> None:
        if self.fault.kind is FaultKind.CUT_STREAM and cardinality(self.method) is Cardinality.UNARY_UNARY:
            raise UsageError(f"{short_name(self.method)} is unary: it has no stream to cut (use fail_response)")

    def matches(self, method: str, call: int) -> bool:
        return method == self.method and call >= self.first and (self.times is None or call < self.first + self.times)


def on(method: str, fault: Fault, *, call: int = 1, times: int | None = 1) -> FaultRule:
    """The rule "call number ``call`` of ``method`` (``"Commit"`` or a full name), and ``times - 1`` after it"."""
    return FaultRule(method, fault, call, times)


@attrs.frozen
class FaultPlan:
    rules: tuple[FaultRule, ...] = attrs.field(default=(), converter=tuple)

    def fault_for(self, method: str, call: int) -> Fault | None:
        """The fault for call number ``call`` (from 1) of ``method`` (a full name), or None: forward it."""
        return next((rule.fault for rule in self.rules if rule.matches(method, call)), None)


NO_FAULTS = FaultPlan()


@attrs.frozen
class FaultEvent:
    """One fault applied to one call. ``call`` counts that method's calls since the plan was set;
    ``upstream_code`` is the emulator's answer (None when the call was not forwarded, or the stream was cut
    before it ended), ``client_code`` what the client was told (None: nothing, the response was dropped)."""

    seq: int
    method: str  # short name for Firestore's RPCs, else the full name
    call: int
    kind: FaultKind
    definite: bool
    forwarded: bool
    upstream_code: str | None
    client_code: str | None

    @property
    def label(self) -> str:
        """Kind and method, e.g. "fail-response Commit": how fault counts and the checker's timeline name this
        event (a history's call keeps the whole event, ``fencecheck.checker.history.WireFault``)."""
        return f"{self.kind.value} {self.method}"


class EventLog:
    """The proxy's append-only record of fault events, numbered 1, 2, ... in the order they were applied."""

    def __init__(self) -> None:
        self._events: list[FaultEvent] = []
        self._changed = threading.Condition()

    def record(self, method: str, call: int, fault: Fault, *, forwarded: bool, upstream_code: str | None,
               client_code: str | None) -> FaultEvent:
        with self._changed:
            event = FaultEvent(len(self._events) + 1, short_name(method), call, fault.kind, fault.definite,
                               forwarded, upstream_code, client_code)
            self._events.append(event)
            self._changed.notify_all()
            return event

    def events(self) -> tuple[FaultEvent, ...]:
        with self._changed:
            return tuple(self._events)

    def wait_for(self, count: int, timeout: float) -> tuple[FaultEvent, ...]:
        """The events once there are at least ``count``; fewer if ``timeout`` seconds pass first."""
        with self._changed:
            self._changed.wait_for(lambda: len(self._events) >= count, timeout)
            return tuple(self._events)
