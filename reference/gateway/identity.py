"""Identity digests and paths (docs/gateway-contract.md, "Identity", "Documents"): the reference's own copy,
pinned to tests/vectors/gateway-identity-golden.json by tests/systems/gateway/test_gateway_reference_parts.py.

Own copy rather than `model.gateway.identity`: the reference imports nothing from the model it is checked
against, so a wrong formula in either one is a lockstep disagreement, not a shared blind spot."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .constants import IDENTITY_VERSION as V


def _frame(text: str) -> bytes:
    data = text.encode("utf-8")
    return len(data).to_bytes(4, "big") + data


def digest(*fields: str) -> str:
    return hashlib.sha256(b"".join(_frame(field) for field in fields)).hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def journal_key(namespace_id: str, gateway_binding_id: str, operation_id: str) -> str:
    return digest("gateway-journal-key", V, namespace_id, gateway_binding_id, operation_id)


def provider_input_digest(canonical_provider_input: str) -> str:
    return digest("gateway-provider-input", V, canonical_provider_input)


def operation_identity(key: str, provider: str, canonical_request: str, input_digest: str) -> str:
    return digest("gateway-operation-identity", V, key, provider, canonical_request, input_digest)


def derived_keys(identity: str) -> tuple[str, str, str]:
    """(consume, provider create, provider confirm) idempotency keys: functions of the identity alone."""
    return (
        digest("gateway-consume-idempotency", V, identity),
        digest("gateway-provider-create", V, identity),
        digest("gateway-provider-confirm", V, identity),
    )


def lease_owner_fingerprint(key: str, lease_id: str) -> str:
    return digest("gateway-lease-owner", V, key, lease_id)


def record_path(namespace_id: str, key: str) -> str:
    return f"gatewayNamespaces/{namespace_id}/journals/{key}"


def event_path(namespace_id: str, key: str, revision: int) -> str:
    return f"{record_path(namespace_id, key)}/events/{revision:010d}"
