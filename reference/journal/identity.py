"""Deterministic identities: length-framed, domain-separated SHA-256 digests (SPEC.md, "Identity").

Pure functions of their arguments. Every digest binds a domain string and a version so that no value
computed for one purpose can be replayed as another, and every per-command digest binds the command key
hash so that nothing can be moved from one command to another.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

COMMAND_KEY_DOMAIN = "commerce-command-key"
PAYLOAD_DOMAIN = "commerce-command-payload"
LEASE_OWNER_DOMAIN = "commerce-command-lease-owner"
TERMINAL_COMMITMENT_DOMAIN = "commerce-command-terminal-commitment"
IDENTITY_VERSION = "1"
TERMINAL_COMMITMENT_KIND = "business_record_digest"


def frame(text: str) -> bytes:
    """4-byte big-endian length of the UTF-8 bytes, then the bytes: no two field lists collide."""
    data = text.encode("utf-8")
    return len(data).to_bytes(4, "big") + data


def digest(*fields: str) -> str:
    return hashlib.sha256(b"".join(frame(field) for field in fields)).hexdigest()


def canonical_json(value: Any) -> str:
    """Keys sorted by code point, no whitespace, non-ASCII kept, NaN and Infinity refused."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def command_key_hash(environment: str, caller_scope_kind: str, caller_scope_value: str, command_id: str) -> str:
    return digest(COMMAND_KEY_DOMAIN, IDENTITY_VERSION, environment, caller_scope_kind, caller_scope_value, command_id)


def payload_fingerprint(key_hash: str, canonical_payload: str) -> str:
    return digest(PAYLOAD_DOMAIN, IDENTITY_VERSION, key_hash, canonical_payload)


def lease_owner_fingerprint(key_hash: str, lease_id: str) -> str:
    return digest(LEASE_OWNER_DOMAIN, IDENTITY_VERSION, key_hash, lease_id)


def terminal_commitment_hash(key_hash: str, terminal_reference_fingerprint: str) -> str:
    return digest(
        TERMINAL_COMMITMENT_DOMAIN,
        IDENTITY_VERSION,
        key_hash,
        TERMINAL_COMMITMENT_KIND,
        terminal_reference_fingerprint,
    )


def root_path(key_hash: str) -> str:
    return f"checkoutRequests/{key_hash}"


def lifecycle_path(key_hash: str) -> str:
    return f"checkoutRequests/{key_hash}/lifecycle/current"


def audit_path(key_hash: str, revision: int) -> str:
    return f"auditEvents/commerce_command_{key_hash}_{revision:010d}"
