"""Short human-readable renderings for failure reports: hashes cut to 8 characters, times relative to an
optional `epoch` (`T+60.000000s`) or ISO 8601 without one. Holders appear as their owner fingerprint, so an
operation's `holder=` matches the `holder=` of the lifecycle it produced."""

from __future__ import annotations

from datetime import datetime, timedelta

from .ops import Acquire, Complete, Fail, InjectFault, Operation, Register
from .state import CommandRecord, JournalState

_ONE_MICROSECOND = timedelta(microseconds=1)


def _t(moment: datetime, epoch: datetime | None) -> str:
    if epoch is None:
        return moment.isoformat()
    micros = (moment - epoch) // _ONE_MICROSECOND
    sign = "-" if micros < 0 else "+"
    seconds, rest = divmod(abs(micros), 1_000_000)
    return f"T{sign}{seconds}.{rest:06d}s"


def _describe_command(op: Operation) -> str:
    ref = op.command
    return f"cmd={ref.key_hash[:8]} [{ref.command_type} v{ref.endpoint_schema_version} p={ref.payload_fingerprint[:8]}]"


def describe_op(op: Operation, *, epoch: datetime | None = None) -> str:
    if isinstance(op, InjectFault):
        return f"fault({op.kind.value} cmd={op.command.key_hash[:8]})"
    parts = [_describe_command(op)]
    if isinstance(op, Register):
        name = "register"
    else:
        parts.append(f"holder={op.owner_fingerprint[:8]}")
        if isinstance(op, Acquire):
            name = "acquire"
        else:
            parts.append(f"fence={op.expected_fence_epoch}")
            if isinstance(op, Complete):
                name = "complete"
                parts.append(f"ref={op.terminal_reference_fingerprint[:8]}")
            else:
                assert isinstance(op, Fail)
                name = "fail"
    parts.append(f"at {_t(op.now, epoch)}")
    if op.commit_fails:
        parts.append("COMMIT-FAILS")
    if op.response_lost:
        parts.append("RESPONSE-LOST")
    return f"{name}({' '.join(parts)})"


def describe_state(state: JournalState, *, epoch: datetime | None = None) -> str:
    if not state.records:
        return "<empty journal>"
    lines = []
    for h, record in state.records:
        if not isinstance(record, CommandRecord):
            paths = ", ".join(path.replace(h, h[:8]) for path, _doc in record.documents)
            lines.append(f"{h[:8]}: CORRUPT {{{paths}}}")
            continue
        reg = record.registration
        line = (
            f"{h[:8]}: registered at {_t(reg.created_at, epoch)} "
            f"[{reg.command_type} v{reg.endpoint_schema_version} p={reg.payload_fingerprint[:8]}]"
        )
        lc = record.lifecycle
        if lc is not None:
            line += (
                f"; {lc.state} rev={lc.revision} fence={lc.fence_epoch} holder={lc.owner_fingerprint[:8]}"
                f" acquired={_t(lc.acquired_at, epoch)} expires={_t(lc.expires_at, epoch)}"
                f" updated={_t(lc.updated_at, epoch)}"
            )
            if lc.terminal_hash is not None:
                line += f" commitment={lc.terminal_hash[:8]}"
        revisions = [1, *(e.revision for e in record.audits)]
        line += f"; audits {revisions[0]}..{revisions[-1]}" if len(revisions) > 1 else "; audits 1"
        if revisions != list(range(1, len(revisions) + 1)):
            line += f" {revisions}"
        lines.append(line)
    return "\n".join(lines)
