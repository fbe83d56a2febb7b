"""What every gateway step shares: precedence steps 1-5 (`precheck`), lease and deadline predicates, and
`write`, which appends one revision and its event, or answers one of the two overlays of every writing
row instead (an earlier clock reading: `any.clock_earlier`; the revision/fence maximum: `any.overflow`)."""

from __future__ import annotations

from datetime import datetime

import attrs

from . import constants as c
from .constants import ms_time
from .results import Result, answer, error
from .state import Event, GatewayState, Journal


def key_of(op) -> tuple[str, str]:
    return op.journal.namespace_id, op.journal.journal_key


def undeclared(op) -> Result | None:
    """Precedence step 1: a namespace not declared GLOBAL_SHARED_LINEARIZABLE is refused before any read."""
    if op.journal.consistency != c.LINEARIZABLE:
        return error("any.not_linearizable", c.NAMESPACE_NOT_LINEARIZABLE)
    return None


def precheck(state: GatewayState, op) -> Journal | Result:
    refused = undeclared(op)
    if refused is not None:
        return refused
    record = state.get(key_of(op))
    if record is None:
        return error("any.not_begun", c.JOURNAL_NOT_BEGUN)
    if record.corrupt:
        return error("any.corrupt", c.UNRECOGNIZED_RECORD)
    if record.operation_identity != op.journal.operation_identity:
        return error("any.binding_conflict", c.BINDING_CONFLICT)
    return record


def held_at(j: Journal, now: datetime) -> bool:
    """Someone holds the lease of the record's current state at `now` (equality with the expiry is expired)."""
    return j.lease_kind is not None and c.LEASE_STATE[j.lease_kind] == j.state and now < j.lease_expires_at


def is_holder(j: Journal, op) -> bool:
    return j.lease_owner_fingerprint == op.owner_fingerprint and j.fence_epoch == op.expected_fence_epoch


def elapsed(j: Journal, now: datetime) -> bool:
    return now >= ms_time(j.settlement_deadline_at)


def write(
    gw: GatewayState, op, j: Journal, transition: str, outcome: str, event_type: str, *, grant: bool = False, **changes
):
    """Append one revision (and its event) to `j` in `gw`, or answer an overlay row instead; `changes` are the
    record's new field values (`state=` among them)."""
    now = op.now
    if now < j.updated_at:
        return gw, error("any.clock_earlier", c.GATEWAY_UNAVAILABLE)
    if j.revision >= c.MAX_REVISION or (grant and j.fence_epoch >= c.MAX_FENCE):
        return gw, error("any.overflow", c.UNRECOGNIZED_RECORD)
    new = attrs.evolve(j, revision=j.revision + 1, fence_epoch=j.fence_epoch + grant, updated_at=now, **changes)
    event = Event(
        new.revision,
        event_type,
        j.state,
        new.state,
        new.fence_epoch,
        new.lease_kind,
        new.lease_expires_at,
        new.evidence_class,
        new.independent_verification,
        op.region,
        now,
    )
    new = attrs.evolve(new, events=j.events + (event,))
    return gw.with_record(key_of(op), new), answer(transition, outcome, new, wrote=True)


def lease(kind: str, op, expires: datetime) -> dict:
    return {
        "lease_kind": kind,
        "lease_owner_fingerprint": op.owner_fingerprint,
        "lease_acquired_at": op.now,
        "lease_expires_at": expires,
    }
