"""Identity digests of the gateway journal (docs/gateway-contract.md, "Identity"): pure functions.

`frame`, `digest` and `canonical_json` are the command journal's (length-framed, domain-separated SHA-256;
sorted-key compact JSON). Every digest binds its own domain and the version "2", so no value computed for
one purpose can stand in for another; every per-journal digest binds the journal key or the operation
identity, so nothing moves between journals.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .constants import IDENTITY_VERSION

KEY_DOMAIN = "gateway-journal-key"
PROVIDER_INPUT_DOMAIN = "gateway-provider-input"
OPERATION_DOMAIN = "gateway-operation-identity"
CONSUME_KEY_DOMAIN = "gateway-consume-idempotency"
CREATE_KEY_DOMAIN = "gateway-provider-create"
CONFIRM_KEY_DOMAIN = "gateway-provider-confirm"
LEASE_OWNER_DOMAIN = "gateway-lease-owner"


def frame(text: str) -> bytes:
    data = text.encode("utf-8")
    return len(data).to_bytes(4, "big") + data


def digest(*fields: str) -> str:
    return hashlib.sha256(b"".join(frame(field) for field in fields)).hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def journal_key(namespace_id: str, gateway_binding_id: str, operation_id: str) -> str:
    return digest(KEY_DOMAIN, IDENTITY_VERSION, namespace_id, gateway_binding_id, operation_id)


def provider_input_digest(canonical_provider_input: str) -> str:
    return digest(PROVIDER_INPUT_DOMAIN, IDENTITY_VERSION, canonical_provider_input)


def operation_identity(key: str, provider: str, canonical_request: str, input_digest: str) -> str:
    return digest(OPERATION_DOMAIN, IDENTITY_VERSION, key, provider, canonical_request, input_digest)


def consume_idempotency_key(identity: str) -> str:
    return digest(CONSUME_KEY_DOMAIN, IDENTITY_VERSION, identity)


def provider_create_idempotency_key(identity: str) -> str:
    return digest(CREATE_KEY_DOMAIN, IDENTITY_VERSION, identity)


def provider_confirm_idempotency_key(identity: str) -> str:
    return digest(CONFIRM_KEY_DOMAIN, IDENTITY_VERSION, identity)


def lease_owner_fingerprint(key: str, lease_id: str) -> str:
    return digest(LEASE_OWNER_DOMAIN, IDENTITY_VERSION, key, lease_id)


def record_path(namespace_id: str, key: str) -> str:
    return f"gatewayNamespaces/{namespace_id}/journals/{key}"


def event_path(namespace_id: str, key: str, revision: int) -> str:
    return f"{record_path(namespace_id, key)}/events/{revision:010d}"
