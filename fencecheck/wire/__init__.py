"""Faults on the wire: a gRPC proxy between any Firestore client and the emulator (``docs/wire-faults.md``)."""

from fencecheck.wire.faults import (
    NO_FAULTS,
    EventLog,
    Fault,
    FaultEvent,
    FaultKind,
    FaultPlan,
    FaultRule,
    cut_stream,
    delay,
    drop_response,
    fail_response,
    on,
    reject,
)
from fencecheck.wire.proxy import WireProxy

__all__ = [
    "NO_FAULTS", "EventLog", "Fault", "FaultEvent", "FaultKind", "FaultPlan", "FaultRule", "WireProxy",
    "cut_stream", "delay", "drop_response", "fail_response", "on", "reject",
]
