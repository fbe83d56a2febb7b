"""Executable specification of the lantern transaction layer (docs/lantern-contract.md).

Pure and deterministic: `step(state, op) -> (new_state, result)` over frozen, hashable values;
`documents(state)` gives the exact Firestore documents the reference must hold for that state;
`invariant_violations` checks INV-1..INV-5 on any set of stored documents. No Firestore, threads or clocks:
time is the explicit `now` of each operation.
"""

from .constants import ERROR_CODES, LANTERN_TTL, OUTCOMES, guard_path, lantern_path, pin_path, venue_path
from .describe import describe_op, describe_state
from .documents import documents
from .faults import fault_applies
from .geo import distance_meters, within_geofence
from .invariants import INVARIANTS, Violation, invariant_violations, write_set_violations
from .ops import (
    CreateVenue,
    DeleteVenue,
    Extinguish,
    FaultKind,
    InjectFault,
    Light,
    Operation,
    ReadActive,
    ScheduledLight,
    operation_name,
)
from .results import LanternView, Result, iso
from .state import Guard, Lantern, LanternState, Venue
from .step import step
from .transitions import REACHABLE_IDS, TRANSITION_IDS, TRANSITIONS, TRANSITIONS_BY_ID, Transition

__all__ = [
    "ERROR_CODES",
    "INVARIANTS",
    "LANTERN_TTL",
    "OUTCOMES",
    "REACHABLE_IDS",
    "TRANSITIONS",
    "TRANSITIONS_BY_ID",
    "TRANSITION_IDS",
    "CreateVenue",
    "DeleteVenue",
    "Extinguish",
    "FaultKind",
    "Guard",
    "InjectFault",
    "Lantern",
    "LanternState",
    "LanternView",
    "Light",
    "Operation",
    "ReadActive",
    "Result",
    "ScheduledLight",
    "Transition",
    "Venue",
    "Violation",
    "describe_op",
    "describe_state",
    "distance_meters",
    "documents",
    "fault_applies",
    "guard_path",
    "invariant_violations",
    "iso",
    "lantern_path",
    "operation_name",
    "pin_path",
    "step",
    "venue_path",
    "within_geofence",
    "write_set_violations",
]
