"""Short human-readable renderings for failure reports: times relative to an optional `epoch`
(`T+60.000000s`) or ISO 8601 without one."""

from __future__ import annotations

from datetime import datetime, timedelta

from .ops import CreateVenue, DeleteVenue, Extinguish, InjectFault, Light, Operation, ReadActive, ScheduledLight
from .state import LanternState

_ONE_MICROSECOND = timedelta(microseconds=1)


def _t(moment: datetime | None, epoch: datetime | None) -> str:
    if moment is None:
        return "-"
    if epoch is None:
        return moment.isoformat()
    micros = (moment - epoch) // _ONE_MICROSECOND
    sign = "-" if micros < 0 else "+"
    seconds, rest = divmod(abs(micros), 1_000_000)
    return f"T{sign}{seconds}.{rest:06d}s"


def describe_op(op: Operation, *, epoch: datetime | None = None) -> str:
    text = _describe_op(op, epoch)
    return text + " RESPONSE-LOST" if getattr(op, "response_lost", False) else text


def _describe_op(op: Operation, epoch: datetime | None) -> str:
    if isinstance(op, CreateVenue):
        return f"create_venue({op.venue_id} at {op.latitude},{op.longitude} r={op.radius_meters}m)"
    if isinstance(op, DeleteVenue):
        return f"delete_venue({op.venue_id})"
    if isinstance(op, Light):
        return (
            f"light(user={op.user_id} lantern={op.lantern_id} venue={op.venue_id} "
            f"from {op.latitude},{op.longitude} at {_t(op.now, epoch)})"
        )
    if isinstance(op, ScheduledLight):
        return (
            f"scheduled_light(user={op.user_id} lantern={op.lantern_id} venue={op.venue_id} "
            f"for {_t(op.scheduled_for, epoch)} at {_t(op.now, epoch)})"
        )
    if isinstance(op, Extinguish):
        return f"extinguish(user={op.user_id} lantern={op.lantern_id} at {_t(op.now, epoch)})"
    if isinstance(op, ReadActive):
        return f"read_active(at {_t(op.now, epoch)})"
    assert isinstance(op, InjectFault)
    at = "" if op.now is None else f" at {_t(op.now, epoch)}"
    return f"fault({op.kind.value} {op.subject}{at})"


def describe_state(state: LanternState, *, epoch: datetime | None = None) -> str:
    if not (state.venues or state.lanterns or state.guards):
        return "<no lanterns, no venues>"
    lines = []
    for venue_id, venue in state.venues:
        lines.append(f"venue {venue_id}: count={venue.active_lantern_count} r={venue.radius_meters}m")
    for lantern_id, lantern in state.lanterns:
        line = (
            f"lantern {lantern_id}: {lantern.status} user={lantern.user_id} venue={lantern.venue_id} "
            f"{lantern.source} lit={_t(lantern.lit_at, epoch)} expires={_t(lantern.expires_at, epoch)}"
        )
        if lantern.ended_at is not None:
            line += f" ended={_t(lantern.ended_at, epoch)}"
        lines.append(line)
    for user_id, guard in state.guards:
        lines.append(f"guard {user_id}: lantern={guard.lantern_id} venue={guard.venue_id}")
    if state.retired_venue_ids:
        lines.append(f"retired venue ids: {', '.join(sorted(state.retired_venue_ids))}")
    return "\n".join(lines)
