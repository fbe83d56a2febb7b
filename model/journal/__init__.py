"""Executable specification of the command journal (seeds 000/001, SPEC.md, docs/journal-decisions.md).

Pure and deterministic: `step(state, op) -> (new_state, result)` over frozen, hashable values;
`documents(state)` gives the exact Firestore documents the reference must hold for that state.
"""

from .constants import LEASE_DURATION, MAX_REVISION
from .describe import describe_op, describe_state
from .documents import documents, documents_for, record_documents
from .faults import FAULT_LEASE_ID, VALID_FAULTS, fault_applies
from .ops import (
    Acquire,
    CommandRef,
    Complete,
    Fail,
    FaultKind,
    InjectFault,
    Operation,
    Register,
    commitment_hash_of,
    owner_fingerprint_of,
)
from .results import Result, timestamp_parts
from .state import (
    AuditEvent,
    CommandRecord,
    CorruptRecord,
    JournalState,
    Lifecycle,
    Registration,
)
from .step import step
from .transitions import TRANSITION_IDS, TRANSITIONS, TRANSITIONS_BY_ID, Transition
from .validate import record_problem

Fault = InjectFault

__all__ = [
    "FAULT_LEASE_ID",
    "LEASE_DURATION",
    "MAX_REVISION",
    "TRANSITIONS",
    "TRANSITIONS_BY_ID",
    "TRANSITION_IDS",
    "VALID_FAULTS",
    "Acquire",
    "AuditEvent",
    "CommandRecord",
    "CommandRef",
    "Complete",
    "CorruptRecord",
    "Fail",
    "Fault",
    "FaultKind",
    "InjectFault",
    "JournalState",
    "Lifecycle",
    "Operation",
    "Register",
    "Registration",
    "Result",
    "Transition",
    "describe_op",
    "describe_state",
    "documents",
    "commitment_hash_of",
    "documents_for",
    "fault_applies",
    "owner_fingerprint_of",
    "record_documents",
    "record_problem",
    "step",
    "timestamp_parts",
]
