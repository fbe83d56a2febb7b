"""Input validation and preparation, all before any Firestore call (SPEC.md, "Inputs").

Validation is by exact type (`type(x) is dict`, never isinstance): a subclass can override `__getitem__`,
`keys` or `__eq__` and show the validator one value and the hasher another. The payload is copied into
plain values while it is checked, so later mutation by the caller cannot change what was hashed.
Only digests survive preparation; raw caller values and ids are dropped here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from . import identity
from .errors import CommandJournalError

ENVIRONMENTS = ("local", "test", "staging", "production")
CALLER_SCOPE_KINDS = ("firebase_uid", "anonymous_principal", "internal_system")
MAX_ENDPOINT_SCHEMA_VERSION = 1_000_000
MAX_FENCE_EPOCH = 9_999_999_999
MAX_SAFE_INTEGER = 2**53 - 1
MAX_PAYLOAD_DEPTH = 16
MAX_PAYLOAD_BYTES = 32_768
MAX_CALLER_VALUE_LENGTH = 128

_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_COMMAND_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class PreparedCommand:
    """What the transaction needs to know about a command: derived digests and public enums only."""

    environment: str
    caller_scope_kind: str
    command_type: str
    endpoint_schema_version: int
    command_key_hash: str
    payload_fingerprint: str


def _invalid() -> CommandJournalError:
    return CommandJournalError("invalid_command_input")


def _require(condition: bool) -> None:
    if not condition:
        raise _invalid()


def _is_int(value: object) -> bool:
    return type(value) is int  # bool is a subclass of int and is refused here


def _matches(pattern: re.Pattern[str], value: object) -> bool:
    return type(value) is str and pattern.fullmatch(value) is not None


def _plain_json(value: Any, depth: int, budget: list[int]) -> Any:
    # Every JSON value costs at least one byte, so a payload within the size limit has at most that many
    # values; the budget stops a shared-reference structure from expanding exponentially before that check.
    budget[0] -= 1
    _require(budget[0] >= 0)
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        _require(-MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER)
        return value
    if kind is dict or kind is list or kind is tuple:
        # A container nests one level deeper; a cycle therefore ends here too.
        _require(depth < MAX_PAYLOAD_DEPTH)
        if kind is dict:
            _require(all(type(key) is str for key in value))
            return {key: _plain_json(item, depth + 1, budget) for key, item in value.items()}
        return [_plain_json(item, depth + 1, budget) for item in value]
    raise _invalid()  # float, bytes, sets, proxies, custom mappings and everything else


def canonical_payload(payload: Any) -> str:
    _require(type(payload) is dict)
    plain = _plain_json(payload, 0, [MAX_PAYLOAD_BYTES])
    text = identity.canonical_json(plain)  # cannot fail: plain holds only JSON-safe values, and no floats
    _require(_is_utf8_encodable(text))  # lone surrogates have no UTF-8 form
    _require(len(text.encode("utf-8")) <= MAX_PAYLOAD_BYTES)
    return text


def _caller_scope(caller_scope: Any) -> tuple[str, str]:
    _require(type(caller_scope) is dict and set(caller_scope) == {"kind", "value"})
    kind, value = caller_scope["kind"], caller_scope["value"]
    _require(type(kind) is str and kind in CALLER_SCOPE_KINDS)
    _require(type(value) is str and 1 <= len(value) <= MAX_CALLER_VALUE_LENGTH)
    _require(not any(unicodedata.category(char) == "Cc" for char in value))
    _require(_is_utf8_encodable(value))  # the key hash frames UTF-8 bytes: lone surrogates have none
    return kind, value


def _is_utf8_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def prepare_command(
    *,
    environment: Any,
    caller_scope: Any,
    command_id: Any,
    command_type: Any,
    endpoint_schema_version: Any,
    payload: Any,
) -> PreparedCommand:
    _require(type(environment) is str and environment in ENVIRONMENTS)
    kind, value = _caller_scope(caller_scope)
    _require(_matches(_UUID4, command_id))
    _require(_matches(_COMMAND_TYPE, command_type))
    _require(_is_int(endpoint_schema_version) and 1 <= endpoint_schema_version <= MAX_ENDPOINT_SCHEMA_VERSION)
    payload_text = canonical_payload(payload)
    key_hash = identity.command_key_hash(environment, kind, value, command_id)
    return PreparedCommand(
        environment=environment,
        caller_scope_kind=kind,
        command_type=command_type,
        endpoint_schema_version=endpoint_schema_version,
        command_key_hash=key_hash,
        payload_fingerprint=identity.payload_fingerprint(key_hash, payload_text),
    )


def prepare_lease_owner(command: PreparedCommand, *, command_id: Any, lease_id: Any) -> str:
    _require(_matches(_UUID4, lease_id) and lease_id != command_id)
    return identity.lease_owner_fingerprint(command.command_key_hash, lease_id)


def prepare_fence(expected_fence_epoch: Any) -> int:
    _require(_is_int(expected_fence_epoch) and 1 <= expected_fence_epoch <= MAX_FENCE_EPOCH)
    return expected_fence_epoch


def prepare_commitment(command: PreparedCommand, terminal_reference_fingerprint: Any) -> str:
    _require(_matches(_SHA256_HEX, terminal_reference_fingerprint))
    return identity.terminal_commitment_hash(command.command_key_hash, terminal_reference_fingerprint)
