"""Operations: the four journal calls, each with its injected clock reading, plus fault injection.

Every operation is a frozen, hashable value. A `CommandRef` carries exactly the inputs that the reference's
functions receive (the payload as its canonical JSON string); identities derived from it are memoized.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import attrs

from . import identity

_ZERO = timedelta(0)


def _utc_datetime(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, datetime) or value.utcoffset() != _ZERO:
        raise ValueError(f"{attribute.name} must be an aware UTC datetime")


@functools.lru_cache(maxsize=1 << 16)
def key_hash_of(environment: str, caller_scope_kind: str, caller_scope_value: str, command_id: str) -> str:
    return identity.command_key_hash(environment, caller_scope_kind, caller_scope_value, command_id)


@functools.lru_cache(maxsize=1 << 16)
def payload_fingerprint_of(key_hash: str, canonical_payload: str) -> str:
    return identity.payload_fingerprint(key_hash, canonical_payload)


@functools.lru_cache(maxsize=1 << 16)
def owner_fingerprint_of(key_hash: str, lease_id: str) -> str:
    return identity.lease_owner_fingerprint(key_hash, lease_id)


@functools.lru_cache(maxsize=1 << 16)
def commitment_hash_of(key_hash: str, terminal_reference_fingerprint: str) -> str:
    return identity.terminal_commitment_hash(key_hash, terminal_reference_fingerprint)


@attrs.frozen(cache_hash=True)
class CommandRef:
    """The command inputs shared by all four calls (assumed valid: the model starts after input validation)."""

    environment: str
    caller_scope_kind: str
    caller_scope_value: str
    command_id: str
    command_type: str
    endpoint_schema_version: int
    payload: str  # canonical JSON of the payload mapping

    @classmethod
    def from_inputs(
        cls,
        *,
        environment: str,
        caller_scope: Mapping[str, str],
        command_id: str,
        command_type: str,
        endpoint_schema_version: int,
        payload: Mapping[str, Any],
    ) -> CommandRef:
        """Build from the reference's keyword arguments (payload as a mapping)."""
        return cls(
            environment,
            caller_scope["kind"],
            caller_scope["value"],
            command_id,
            command_type,
            endpoint_schema_version,
            identity.canonical_json(payload),
        )

    @property
    def caller_scope(self) -> dict[str, str]:
        return {"kind": self.caller_scope_kind, "value": self.caller_scope_value}

    @property
    def payload_value(self) -> Any:
        return json.loads(self.payload)

    @property
    def key_hash(self) -> str:
        return key_hash_of(self.environment, self.caller_scope_kind, self.caller_scope_value, self.command_id)

    @property
    def payload_fingerprint(self) -> str:
        return payload_fingerprint_of(self.key_hash, self.payload)

    def kwargs(self) -> dict[str, Any]:
        """The reference's keyword arguments for this command (without db, clock or lease fields)."""
        return {
            "environment": self.environment,
            "caller_scope": self.caller_scope,
            "command_id": self.command_id,
            "command_type": self.command_type,
            "endpoint_schema_version": self.endpoint_schema_version,
            "payload": self.payload_value,
        }


@attrs.frozen(cache_hash=True)
class Register:
    command: CommandRef
    now: datetime = attrs.field(validator=_utc_datetime)
    commit_fails: bool = False
    # the harness loses the commit's answer on the wire (fencecheck/wire/lockstep.py); the step is the same
    response_lost: bool = attrs.field(default=False, metadata={"omit_default": True})


@attrs.frozen(cache_hash=True)
class Acquire:
    command: CommandRef
    lease_id: str
    now: datetime = attrs.field(validator=_utc_datetime)
    commit_fails: bool = False
    # the harness loses the commit's answer on the wire (fencecheck/wire/lockstep.py); the step is the same
    response_lost: bool = attrs.field(default=False, metadata={"omit_default": True})

    @property
    def owner_fingerprint(self) -> str:
        return owner_fingerprint_of(self.command.key_hash, self.lease_id)


@attrs.frozen(cache_hash=True)
class Complete:
    command: CommandRef
    lease_id: str
    expected_fence_epoch: int
    terminal_reference_fingerprint: str
    now: datetime = attrs.field(validator=_utc_datetime)
    commit_fails: bool = False
    # the harness loses the commit's answer on the wire (fencecheck/wire/lockstep.py); the step is the same
    response_lost: bool = attrs.field(default=False, metadata={"omit_default": True})

    @property
    def owner_fingerprint(self) -> str:
        return owner_fingerprint_of(self.command.key_hash, self.lease_id)

    @property
    def commitment_hash(self) -> str:
        return commitment_hash_of(self.command.key_hash, self.terminal_reference_fingerprint)


@attrs.frozen(cache_hash=True)
class Fail:
    command: CommandRef
    lease_id: str
    expected_fence_epoch: int
    now: datetime = attrs.field(validator=_utc_datetime)
    commit_fails: bool = False
    # the harness loses the commit's answer on the wire (fencecheck/wire/lockstep.py); the step is the same
    response_lost: bool = attrs.field(default=False, metadata={"omit_default": True})

    @property
    def owner_fingerprint(self) -> str:
        return owner_fingerprint_of(self.command.key_hash, self.lease_id)


class FaultKind(enum.Enum):
    """Malformed-record classes of seeds 000/001; see `faults.py` for what each writes and when it applies."""

    MISSING_ROOT = "missing_root"
    MISSING_REGISTRATION_AUDIT = "missing_registration_audit"
    ORPHAN_LIFECYCLE = "orphan_lifecycle"
    MISSING_CURRENT_AUDIT = "missing_current_audit"
    PRESEEDED_NEXT_AUDIT = "preseeded_next_audit"
    EXTRA_FIELD = "extra_field"
    WRONG_TYPE = "wrong_type"
    FUTURE_VERSION = "future_version"
    BAD_HASH = "bad_hash"
    TIMESTAMP_REGRESSION = "timestamp_regression"
    ENVIRONMENT_MISMATCH = "environment_mismatch"
    REVISION_AT_MAXIMUM = "revision_at_maximum"
    REVISION_BELOW_MAXIMUM = "revision_below_maximum"
    FENCE_AT_MAXIMUM = "fence_at_maximum"


@attrs.frozen(cache_hash=True)
class InjectFault:
    """Rewrite the stored documents of one command key (the harness writes `documents_for` that key)."""

    command: CommandRef
    kind: FaultKind


Operation = Register | Acquire | Complete | Fail | InjectFault
JOURNAL_OPERATIONS = (Register, Acquire, Complete, Fail)
