"""The journal's near-miss classes that only its state tells (fencecheck.checker.near_miss): a finish by a caller
that does not hold the lease but presents its current fence, a call whose identity differs from the stored
registration in exactly one field, and a reading at a stored lease expiry or update time, or 1 µs either side.
Pure, like the step: the state before the call and the call in, class names out."""

from __future__ import annotations

from ..boundaries import near
from .ops import Complete, Fail, Operation
from .state import CommandRecord, JournalState


def near_misses(state: JournalState, op: Operation) -> tuple[str, ...]:
    record = state.get(op.command.key_hash)
    if not isinstance(record, CommandRecord):
        return ()
    found = []
    lc = record.lifecycle
    if (isinstance(op, Complete | Fail) and lc is not None and lc.state == "leased"
            and op.expected_fence_epoch == lc.fence_epoch and op.owner_fingerprint != lc.owner_fingerprint):
        found.append("current-fence-other-holder")
    reg, ref = record.registration, op.command
    differing = (reg.command_type != ref.command_type, reg.endpoint_schema_version != ref.endpoint_schema_version,
                 reg.payload_fingerprint != ref.payload_fingerprint)
    if sum(differing) == 1:
        found.append("stored-but-one-field")
    moments = (reg.created_at,) if lc is None else (lc.expires_at, lc.updated_at)
    if near(op.now, moments):
        found.append("clock-boundary")
    return tuple(found)
