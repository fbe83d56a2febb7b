"""Frozen operation outputs; `to_json()` gives the contract's keys in its order
(docs/gateway-contract.md, "Operations": schema_version, outcome, state, then the outcome's own keys)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .constants import CALLER_ASSERTED, EPOCH, SCHEMA_VERSION

_LEASE = ("fence_epoch", "lease_expires_at")
_PROVIDER_KEYS = ("provider_create_idempotency_key", "provider_confirm_idempotency_key")
_EVIDENCE = ("evidence_class", "independent_verification")
EXTRA_KEYS: dict[str, tuple[str, ...]] = {
    "journal_state": ("revision", "fence_epoch", "lease_kind", "lease_active", "settlement_deadline_at"),
    "consume_claimed": (*_LEASE, "consume_idempotency_key"),
    "consume_recovery_claimed": (*_LEASE, "consume_idempotency_key"),
    "consumed": ("permit_id", "settlement_deadline_at"),
    "submission_window_closed": ("settlement_deadline_at",),
    "window_open": ("settlement_deadline_at",),
    "provider_intent_taken": (*_LEASE, "settlement_deadline_at", "permit_id", *_PROVIDER_KEYS),
    "submission_reported": _EVIDENCE,
    "reconcile_lease_taken": (*_LEASE, "settlement_deadline_at", *_PROVIDER_KEYS, "payment_reference"),
    "committed": (*_EVIDENCE, "terminal_path"),
    "released": (*_EVIDENCE, "terminal_path"),
    "outcome_unknown": _EVIDENCE,
}
# The report's answer names the report's own class, whatever evidence was stored later.
_FIXED = {"submission_reported": {"evidence_class": CALLER_ASSERTED, "independent_verification": False}}


def timestamp_json(moment: datetime) -> dict[str, int]:
    delta = moment - EPOCH  # exact integer arithmetic
    return {"seconds": delta.days * 86_400 + delta.seconds, "nanoseconds": delta.microseconds * 1_000}


@dataclass(frozen=True, slots=True)
class GatewayOutput:
    outcome: str
    state: str
    values: tuple[tuple[str, Any], ...] = ()  # the outcome's extra keys, in output order

    @classmethod
    def of(cls, outcome: str, record: dict[str, Any], **extra: Any) -> GatewayOutput:
        known = {**record, **_FIXED.get(outcome, {}), **extra}
        return cls(outcome, record["state"], tuple((key, known[key]) for key in EXTRA_KEYS.get(outcome, ())))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "outcome": self.outcome, "state": self.state}
        for key, value in self.values:
            out[key] = timestamp_json(value) if isinstance(value, datetime) else value
        return out
