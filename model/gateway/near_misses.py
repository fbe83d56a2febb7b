"""The gateway's near-miss classes that only its state tells (fencecheck.checker.near_miss): a fenced call by a
caller that does not hold the journal's lease but presents its current fence; evidence equal to the stored
evidence but for one field, or a consume answer that differs from the stored consume in one field; a reading at
the stored lease expiry or settlement deadline, or 1 µs either side (the deadline is stored in milliseconds:
1 ms either side of it too). Pure, like the step."""

from __future__ import annotations

from datetime import timedelta

from ..boundaries import US, near
from .constants import ms_time
from .ops import ApplyEvidence, RecordConsume
from .state import GatewayState, Journal
from .writes import key_of

MS = timedelta(milliseconds=1)


def near_misses(state: GatewayState, op: object) -> tuple[str, ...]:
    record = state.get(key_of(op))
    if not isinstance(record, Journal):
        return ()
    found = []
    fence = getattr(op, "expected_fence_epoch", None)
    if (fence is not None and record.lease_owner_fingerprint is not None and fence == record.fence_epoch
            and op.owner_fingerprint != record.lease_owner_fingerprint):
        found.append("current-fence-other-holder")
    if isinstance(op, ApplyEvidence) and record.evidence_class is not None:
        stored = (record.evidence_class, record.independent_verification, record.evidence_verdict,
                  record.payment_reference, record.submission_fenced)
        evidence = op.evidence
        given = (evidence.evidence_class, evidence.independent_verification, evidence.verdict,
                 evidence.payment_reference, evidence.submission_fenced)
        if sum(a != b for a, b in zip(stored, given, strict=True)) == 1:
            found.append("stored-but-one-field")
    if isinstance(op, RecordConsume) and record.consume_transition_id is not None:
        stored = (record.consume_transition_id, record.permit_id, record.permit_digest,
                  record.consume_transitioned_at, record.settlement_deadline_at)
        answer = op.answer
        given = (answer.transition_id, answer.permit_id, answer.permit_digest, answer.transitioned_at,
                 answer.settlement_deadline_at)
        if sum(a != b for a, b in zip(stored, given, strict=True)) == 1:
            found.append("stored-but-one-field")
    deadline = None if record.settlement_deadline_at is None else ms_time(record.settlement_deadline_at)
    if near(op.now, [record.lease_expires_at], US) or near(op.now, [deadline], MS):
        found.append("clock-boundary")
    return tuple(found)
