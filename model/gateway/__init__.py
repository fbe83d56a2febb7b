"""Executable specification of the gateway journal (seed 003, docs/gateway-contract.md).

Pure and deterministic: `step(state, op) -> (new_state, result)` over frozen, hashable values; the hosted
service and the providers are simulated by the operations' arguments. `documents(state)` gives the exact
Firestore documents a state stands for; `invariant_violations` / `history_violations` check G-INV-1..12 on
documents alone.
"""

from .constants import MAX_FENCE, MAX_REVISION, SETTLEMENT_WINDOW_MS, floor_ms, ms_time
from .describe import describe_op, describe_state
from .documents import EVENT_FIELDS, RECORD_FIELDS, documents, record_documents, stored_documents
from .faults import FAULT_KINDS, InjectFault, fault_applies
from .invariants import Violation, history_violations, invariant_violations
from .ops import (
    ApplyEvidence,
    Begin,
    ClaimConsume,
    CloseWindow,
    Evidence,
    Get,
    HostedAnswer,
    JournalRef,
    ManualTerminal,
    Operation,
    RecordConsume,
    ReportSubmission,
    TakeProviderIntent,
    TakeReconcileLease,
    owner_fingerprint_of,
)
from .results import OUTPUT_KEYS, Result, timestamp_parts
from .state import CorruptRecord, Event, GatewayState, Journal
from .step import step
from .transitions import EDGES, TRANSITION_IDS, TRANSITIONS, TRANSITIONS_BY_ID, Transition

__all__ = [
    "EDGES",
    "EVENT_FIELDS",
    "FAULT_KINDS",
    "MAX_FENCE",
    "MAX_REVISION",
    "OUTPUT_KEYS",
    "RECORD_FIELDS",
    "SETTLEMENT_WINDOW_MS",
    "TRANSITIONS",
    "TRANSITIONS_BY_ID",
    "TRANSITION_IDS",
    "ApplyEvidence",
    "Begin",
    "ClaimConsume",
    "CloseWindow",
    "CorruptRecord",
    "Event",
    "Evidence",
    "GatewayState",
    "Get",
    "HostedAnswer",
    "InjectFault",
    "Journal",
    "JournalRef",
    "ManualTerminal",
    "Operation",
    "RecordConsume",
    "ReportSubmission",
    "Result",
    "TakeProviderIntent",
    "TakeReconcileLease",
    "Transition",
    "Violation",
    "describe_op",
    "describe_state",
    "documents",
    "fault_applies",
    "floor_ms",
    "history_violations",
    "invariant_violations",
    "ms_time",
    "owner_fingerprint_of",
    "record_documents",
    "step",
    "stored_documents",
    "timestamp_parts",
]
