"""Fault injection: the document damage a broken writer of the seed's findings leaves behind.

- stranded_guard (subject: a user whose guard names their stored-active lantern, litAt <= now < expiresAt):
  the lantern is extinguished at now (pin deleted, venue -1 if it exists) and the guard stays. Breaks INV-2
  (finding #4).
- counter_drift (subject: an existing venue): activeLanternCount - 1. Breaks INV-3 (finding #5).

The layer repairs only what D2 repairs: a stranded guard is overwritten by the user's next light. Counter
drift is permanent (no reconciliation in this pass, seed non-goal).
"""

from __future__ import annotations

import attrs

from .constants import EXTINGUISHED
from .ops import FaultKind, InjectFault
from .results import Result, fixed
from .state import LanternState
from .writesets import end_lantern

_NOT_APPLICABLE = fixed("fault.not_applicable")


def fault_applies(state: LanternState, op: InjectFault) -> bool:
    if op.kind is FaultKind.COUNTER_DRIFT:
        return state.venue(op.subject) is not None
    guard = state.guard(op.subject)
    if guard is None or op.now is None:
        return False
    lantern = state.lantern(guard.lantern_id)
    return (
        lantern is not None
        and lantern.user_id == op.subject
        and lantern.stored_active
        and lantern.lit_at <= op.now < lantern.expires_at
    )


def apply_fault(state: LanternState, op: InjectFault) -> tuple[LanternState, Result]:
    if not fault_applies(state, op):
        return state, _NOT_APPLICABLE
    if op.kind is FaultKind.COUNTER_DRIFT:
        venue = state.venue(op.subject)
        drifted = attrs.evolve(venue, active_lantern_count=venue.active_lantern_count - 1)
        return state.with_venue(op.subject, drifted), fixed("fault.counter_drift", wrote=True)
    guard = state.guard(op.subject)
    new_state = end_lantern(state, guard.lantern_id, EXTINGUISHED, op.now, clear_guard=False)
    return new_state, fixed("fault.stranded_guard", wrote=True)
