"""Short human-readable renderings for failure reports: digests cut to 8 characters, times relative to an
optional `epoch` (`T+30.000000s`) or ISO 8601 without one, ms values as times too. Lease holders appear as
their owner fingerprint, so an operation's `holder=` matches the `holder=` of the record it produced."""

from __future__ import annotations

from datetime import datetime, timedelta

from .constants import ms_time
from .faults import InjectFault
from .ops import OPERATION_NAMES, ApplyEvidence, ManualTerminal, RecordConsume, ReportSubmission, _Leased
from .state import GatewayState, Journal

_US = timedelta(microseconds=1)


def _t(moment: datetime | None, epoch: datetime | None) -> str:
    if moment is None:
        return "-"
    if epoch is None:
        return moment.isoformat()
    micros = (moment - epoch) // _US
    seconds, rest = divmod(abs(micros), 1_000_000)
    return f"T{'-' if micros < 0 else '+'}{seconds}.{rest:06d}s"


def _ms(value: int | None, epoch: datetime | None) -> str:
    return "-" if value is None else _t(ms_time(value), epoch)


def describe_op(op, *, epoch: datetime | None = None) -> str:
    ref = op.journal
    if isinstance(op, InjectFault):
        return f"fault({op.kind} j={ref.journal_key[:8]} ns={ref.namespace_id})"
    parts = [f"j={ref.journal_key[:8]}", f"ns={ref.namespace_id}", f"id={ref.operation_identity[:8]}"]
    if ref.consistency != "GLOBAL_SHARED_LINEARIZABLE":
        parts.append(f"consistency={ref.consistency}")
    if isinstance(op, _Leased):
        parts.append(f"holder={op.owner_fingerprint[:8]}")
    if hasattr(op, "expected_fence_epoch"):
        parts.append(f"fence={op.expected_fence_epoch}")
    if isinstance(op, RecordConsume):
        a = op.answer
        parts.append(
            f"answer={a.kind} permit={a.permit_id} at={_ms(a.transitioned_at, epoch)}"
            f" deadline={_ms(a.settlement_deadline_at, epoch)}"
        )
    elif isinstance(op, ReportSubmission):
        parts.append(f"report=({op.claim_id} {op.provider_submission_id} {op.payment_reference} {op.caller_outcome})")
    elif isinstance(op, ApplyEvidence):
        e = op.evidence
        parts.append(
            f"evidence=({e.evidence_class} verified={e.independent_verification} {e.verdict}"
            f" ref={e.payment_reference} fenced={e.submission_fenced} receipt={bool(e.receipt_digest)})"
        )
    elif isinstance(op, ManualTerminal):
        parts.append(
            f"{op.processor_result} claimed={op.claimed_independent_verification} fenced={op.submission_fenced}"
        )
    parts.append(f"from {op.region} at {_t(op.now, epoch)}")
    if getattr(op, "commit_fails", False):
        parts.append("COMMIT-FAILS")
    return f"{OPERATION_NAMES[type(op)]}({' '.join(parts)})"


def describe_state(state: GatewayState, *, epoch: datetime | None = None) -> str:
    if not state.records:
        return "<empty gateway>"
    lines = []
    for (namespace_id, key), record in state.records:
        if not isinstance(record, Journal):
            lines.append(f"{namespace_id}/{key[:8]}: CORRUPT ({record.label})")
            continue
        j = record
        line = f"{namespace_id}/{key[:8]}: {j.state} rev={j.revision} fence={j.fence_epoch}"
        if j.lease_kind is not None:
            line += (
                f" {j.lease_kind}-lease holder={j.lease_owner_fingerprint[:8]}"
                f" [{_t(j.lease_acquired_at, epoch)}, {_t(j.lease_expires_at, epoch)})"
            )
        if j.settlement_deadline_at is not None:
            line += f" permit={j.permit_id} deadline={_ms(j.settlement_deadline_at, epoch)}"
        if j.claim_id is not None:
            line += f" report=({j.payment_reference} {j.caller_outcome})"
        if j.evidence_class is not None:
            line += f" evidence=({j.evidence_class} {j.independent_verification} {j.evidence_verdict}"
            line += f" fenced={j.submission_fenced})"
        if j.terminal_path is not None:
            line += f" path={j.terminal_path}"
        line += f" updated={_t(j.updated_at, epoch)}; events " + ",".join(e.event_type for e in j.events)
        lines.append(line)
    return "\n".join(lines)
