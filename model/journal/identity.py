"""The journal's identities, as the contract defines them (SPEC.md "Identity and fingerprints"; the golden
vectors in tests/vectors/identity-golden.json): pure functions of their arguments.

The model's own copy, written from the contract rather than imported from `reference.journal.identity`: the
specification must not depend on the code it checks, or a wrong formula in the reference would be the
model's too and no lockstep run could see it. Both copies are pinned to the same golden vectors,
independently (tests/systems/journal/test_journal_identity_golden.py runs every vector against each side).

The contract:

- a field is framed as the 4-byte big-endian length of its UTF-8 bytes, then those bytes, and a digest is
  the lowercase hex SHA-256 of its framed fields in order (so no two field lists share a byte string);
- every digest starts with its own domain string and the identity version "1", so no value computed for one
  purpose can stand in for another, and every per-command digest binds the command key hash, so nothing
  moves between commands;
- the canonical payload is JSON with keys sorted by code point, no whitespace, non-ASCII characters kept
  as they are, and NaN or Infinity refused.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

VERSION = "1"
KEY_DOMAIN = "commerce-command-key"
PAYLOAD_DOMAIN = "commerce-command-payload"
OWNER_DOMAIN = "commerce-command-lease-owner"
COMMITMENT_DOMAIN = "commerce-command-terminal-commitment"
COMMITMENT_KIND = "business_record_digest"  # what the terminal reference fingerprint commits to


def frame(text: str) -> bytes:
    """One field as the contract frames it: its UTF-8 length (4 bytes, big-endian), then its UTF-8 bytes."""
    data = text.encode("utf-8")
    return struct.pack(">I", len(data)) + data


def digest(*fields: str) -> str:
    hasher = hashlib.sha256()
    for field in fields:
        hasher.update(frame(field))
    return hasher.hexdigest()


def canonical_json(value: Any) -> str:
    # json's sort_keys compares str keys by code point, which is the contract's order (not UTF-16's)
    return json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"))


def command_key_hash(environment: str, caller_scope_kind: str, caller_scope_value: str, command_id: str) -> str:
    return digest(KEY_DOMAIN, VERSION, environment, caller_scope_kind, caller_scope_value, command_id)


def payload_fingerprint(key_hash: str, canonical_payload: str) -> str:
    return digest(PAYLOAD_DOMAIN, VERSION, key_hash, canonical_payload)


def lease_owner_fingerprint(key_hash: str, lease_id: str) -> str:
    return digest(OWNER_DOMAIN, VERSION, key_hash, lease_id)


def terminal_commitment_hash(key_hash: str, terminal_reference_fingerprint: str) -> str:
    return digest(COMMITMENT_DOMAIN, VERSION, key_hash, COMMITMENT_KIND, terminal_reference_fingerprint)


# --- where a command's documents live -------------------------------------------------------------------


def root_path(key_hash: str) -> str:
    return "checkoutRequests/" + key_hash


def lifecycle_path(key_hash: str) -> str:
    return root_path(key_hash) + "/lifecycle/current"


def audit_path(key_hash: str, revision: int) -> str:
    """The audit event of `revision`, its number zero-padded to ten digits so paths sort as revisions do."""
    return f"auditEvents/commerce_command_{key_hash}_{revision:010d}"
