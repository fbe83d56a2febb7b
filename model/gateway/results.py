"""Step results: the output JSON (or error code), the row that fired, `wrote`, and the stored state after.

Every extra output key is a stored field of the record after the call, except `lease_active` (the
observer's `now`) and the report's own fixed class; which keys an outcome carries is `OUTPUT_KEYS`. Losing
answers (`pending`, `observed`, `reconciliation_required`, errors) carry no key, permit or deadline (G32).
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import attrs

from . import constants as c
from .state import Journal
from .transitions import TRANSITION_IDS

_LEASE = ("fence_epoch", "lease_expires_at")
_PROVIDER_KEYS = ("provider_create_idempotency_key", "provider_confirm_idempotency_key")
OUTPUT_KEYS: dict[str, tuple[str, ...]] = {
    c.JOURNAL_STATE: ("revision", "fence_epoch", "lease_kind", "lease_active", "settlement_deadline_at"),
    c.CONSUME_CLAIMED: (*_LEASE, "consume_idempotency_key"),
    c.CONSUME_RECOVERY_CLAIMED: (*_LEASE, "consume_idempotency_key"),
    c.OUT_CONSUMED: ("permit_id", "settlement_deadline_at"),
    c.WINDOW_CLOSED: ("settlement_deadline_at",),
    c.WINDOW_OPEN: ("settlement_deadline_at",),
    c.PROVIDER_INTENT_TAKEN: (*_LEASE, "settlement_deadline_at", "permit_id", *_PROVIDER_KEYS),
    c.SUBMISSION_REPORTED: ("evidence_class", "independent_verification"),
    c.RECONCILE_LEASE_TAKEN: (*_LEASE, "settlement_deadline_at", *_PROVIDER_KEYS, "payment_reference"),
    c.COMMITTED: ("evidence_class", "independent_verification", "terminal_path"),
    c.RELEASED: ("evidence_class", "independent_verification", "terminal_path"),
    c.OUT_UNKNOWN: ("evidence_class", "independent_verification"),
}
# The report is caller-asserted whatever evidence later arrived (a retry after a commit says the same).
_FIXED = {c.SUBMISSION_REPORTED: {"evidence_class": c.CALLER_ASSERTED, "independent_verification": False}}


def timestamp_parts(moment: datetime) -> dict[str, int]:
    delta = moment - c.EPOCH
    return {"seconds": delta.days * 86_400 + delta.seconds, "nanoseconds": delta.microseconds * 1_000}


def _json(value: Any) -> Any:
    return timestamp_parts(value) if isinstance(value, datetime) else value


@attrs.frozen(cache_hash=True)
class Result:
    """Exactly one of `outcome` (a successful output) or `code` (an error) is set."""

    transition: str
    wrote: bool
    outcome: str | None = None
    code: str | None = None
    state: str | None = None  # the stored state after the call (outcomes only)
    data: tuple[tuple[str, Any], ...] = ()  # the extra output keys, in output order

    @property
    def ok(self) -> bool:
        """An output, not an error (nor a fault, which answers nothing)."""
        return self.outcome is not None

    @property
    def output(self) -> dict[str, Any] | None:
        """The output's JSON, or None for an error."""
        if self.outcome is None:
            return None
        out: dict[str, Any] = {"schema_version": c.SCHEMA_VERSION, "outcome": self.outcome, "state": self.state}
        out.update((key, _json(value)) for key, value in self.data)
        return out

    def matches(self, observed: dict[str, Any] | str) -> bool:
        if isinstance(observed, str):
            return self.code == observed and self.outcome is None
        return _typed(self.output) == _typed(observed)

    @property
    def answer(self) -> tuple:
        """Hashable form of what a caller observes, ignoring transition and `wrote`."""
        return ("error", self.code) if self.outcome is None else ("output", self.outcome, self.state, self.data)


def _typed(value: Any) -> Any:
    """Exact comparison: key order and value types (True is not 1)."""
    if isinstance(value, dict):
        return ("dict", tuple((k, _typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(_typed(v) for v in value))
    return (type(value).__name__, value)


def _check(transition: str) -> None:
    if transition not in TRANSITION_IDS:
        raise ValueError(f"transition {transition!r} is not in the table")


@functools.cache
def error(transition: str, code: str) -> Result:
    _check(transition)
    return Result(transition, False, None, code)


def answer(transition: str, outcome: str, journal: Journal, *, wrote: bool = False, **extra: Any) -> Result:
    """An outcome whose extra keys are read from `journal` (the record after the call)."""
    _check(transition)
    fixed = {**_FIXED.get(outcome, {}), **extra}
    data = tuple((key, fixed[key] if key in fixed else getattr(journal, key)) for key in OUTPUT_KEYS.get(outcome, ()))
    return Result(transition, wrote, outcome, None, journal.state, data)
