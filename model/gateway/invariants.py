"""G-INV-1..12 as pure checks over stored documents ({path: fields}, as `documents(state)` gives them or as
read back from Firestore with timestamps as aware datetimes). They never consult `step`, only documents
and the contract's constants, identity formula and audit edges (docs/gateway-contract.md, "Invariants").

`invariant_violations(docs, namespace_id=...)` checks one snapshot (G-INV-1..8, 10..12);
`history_violations(before, after)` checks one step between two snapshots (G-INV-9, and G-INV-2's
immutability).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import attrs

from . import constants as c
from . import identity
from .documents import EVENT_FIELDS, RECORD_FIELDS
from .state_rules import ONCE_FIELDS, state_rule_violations
from .transitions import EDGES

Docs = Mapping[str, Mapping[str, Any]]
_ZERO = timedelta(0)
_SHA = re.compile(r"[0-9a-f]{64}")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_NAMESPACE = re.compile(r"[a-z][a-z0-9-]{2,62}")
_BINDING = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_REGION = re.compile(r"[a-z][a-z0-9-]{1,31}")
IDENTITY_FIELDS = (
    "journal_key",
    "namespace_id",
    "gateway_binding_id",
    "operation_id",
    "provider",
    "operation_identity",
    "provider_input_digest",
    "consume_idempotency_key",
    "provider_create_idempotency_key",
    "provider_confirm_idempotency_key",
    "created_at",
)
GRANT_EVENTS = (
    c.EV_CONSUME_CLAIMED,
    c.EV_CONSUME_RECOVERY,
    c.EV_PROVIDER_INTENT,
    c.EV_RECONCILE,
    c.EV_RECONCILE_TAKEOVER,
)
EVENT_TYPES = tuple(sorted({edge[1] for edge in EDGES}))


@attrs.frozen(order=True)
class Violation:
    invariant: str  # G-INV-1 .. G-INV-12
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant} {self.path}: {self.detail}"


def _ts(v: Any) -> bool:
    return isinstance(v, datetime) and v.utcoffset() == _ZERO


def _int(lo: int, hi: int):
    return lambda v: type(v) is int and lo <= v <= hi


def _match(pattern: re.Pattern):
    return lambda v: type(v) is str and pattern.fullmatch(v) is not None


def _one_of(*values):
    return lambda v: type(v) is str and v in values


def _opt(check):
    return lambda v: v is None or check(v)


def _bool(v: Any) -> bool:
    return type(v) is bool


_sha, _id, _ms = _match(_SHA), _match(_ID), _int(0, c.MS_MAX)
_RECORD_TYPES = {
    "schema_version": lambda v: type(v) is int and v == c.SCHEMA_VERSION,
    "journal_key": _sha,
    "namespace_id": _match(_NAMESPACE),
    "gateway_binding_id": _match(_BINDING),
    "operation_id": _match(_UUID4),
    "provider": _one_of(*c.PROVIDERS),
    "operation_identity": _sha,
    "provider_input_digest": _sha,
    "consume_idempotency_key": _sha,
    "provider_create_idempotency_key": _sha,
    "provider_confirm_idempotency_key": _sha,
    "state": _one_of(*c.STATES),
    "revision": _int(1, c.MAX_REVISION),
    "fence_epoch": _int(0, c.MAX_FENCE),
    "lease_kind": _opt(_one_of(*c.LEASE_STATE)),
    "lease_owner_fingerprint": _opt(_sha),
    "lease_acquired_at": _opt(_ts),
    "lease_expires_at": _opt(_ts),
    "consume_intent_at": _opt(_ts),
    "consume_transition_id": _opt(_id),
    "permit_id": _opt(_id),
    "permit_digest": _opt(_sha),
    "consume_transitioned_at": _opt(_ms),
    "settlement_deadline_at": _opt(_ms),
    "provider_intent_at": _opt(_ts),
    "claim_id": _opt(_id),
    "provider_submission_id": _opt(_id),
    "caller_outcome": _opt(_one_of(*c.CALLER_OUTCOMES)),
    "submission_reported_at": _opt(_ts),
    "payment_reference": _opt(_id),
    "reconciliation_started_at": _opt(_ts),
    "evidence_class": _opt(_one_of(*c.EVIDENCE_CLASSES)),
    "independent_verification": _opt(_bool),
    "evidence_verdict": _opt(_one_of(*c.DECISIVE_VERDICTS)),
    "submission_fenced": _opt(_bool),
    "terminal_path": _opt(_one_of(c.PATH_PROVIDER_OWNER, c.PATH_RECONCILIATION, c.PATH_MANUAL)),
    "terminal_receipt_digest": _opt(_sha),
    "processor_result": _opt(_one_of(c.COMMIT, c.RELEASE)),
    "created_at": _ts,
    "updated_at": _ts,
}
_EVENT_TYPES_CHECK = {
    "schema_version": _RECORD_TYPES["schema_version"],
    "journal_key": _sha,
    "revision": _int(1, c.MAX_REVISION),
    "event_type": _one_of(*EVENT_TYPES),
    "from_state": _opt(_one_of(*c.STATES)),
    "to_state": _one_of(*c.STATES),
    "fence_epoch": _int(0, c.MAX_FENCE),
    "lease_kind": _RECORD_TYPES["lease_kind"],
    "lease_expires_at": _opt(_ts),
    "evidence_class": _RECORD_TYPES["evidence_class"],
    "independent_verification": _opt(_bool),
    "region": _match(_REGION),
    "occurred_at": _ts,
}
assert set(_RECORD_TYPES) == set(RECORD_FIELDS) and set(_EVENT_TYPES_CHECK) == set(EVENT_FIELDS)


def _shape(doc: Mapping[str, Any], checks: dict) -> str | None:
    if set(doc) != set(checks):
        return f"fields {sorted(set(doc) ^ set(checks))} missing or extra"
    bad = [name for name, check in checks.items() if not check(doc[name])]
    return f"bad type or value: {bad}" if bad else None


def _split(docs: Docs, namespace_id: str, out: list[Violation]):
    """Well-shaped records by path, and their events by record path; the rest reported."""
    records: dict[str, Mapping[str, Any]] = {}
    events: dict[str, dict[int, Mapping[str, Any]]] = {}
    for path, doc in sorted(docs.items()):
        parts = path.split("/")
        if parts[0] != "gatewayNamespaces" or len(parts) not in (4, 6) or parts[2] != "journals":
            out.append(Violation("G-INV-1", path, "not a document of the gateway contract"))
            continue
        if parts[1] != namespace_id:
            out.append(Violation("G-INV-12", path, "outside the configured namespace"))
        if len(parts) == 4:
            problem = _shape(doc, _RECORD_TYPES)
            if problem is None:
                records[path] = doc
        elif parts[4] != "events" or not re.fullmatch(r"\d{10}", parts[5]):
            problem = "not a document of the gateway contract"
        else:
            problem = _shape(doc, _EVENT_TYPES_CHECK)
            if problem is None and doc["revision"] != int(parts[5]):
                problem = "revision differs from the document id"
            if problem is None:
                events.setdefault("/".join(parts[:4]), {})[doc["revision"]] = doc
        if problem is not None:
            out.append(Violation("G-INV-1", path, problem))
    return records, events


def _identity(path: str, r: Mapping[str, Any], out: list[Violation]) -> None:
    parts = path.split("/")
    key = identity.journal_key(r["namespace_id"], r["gateway_binding_id"], r["operation_id"])
    if not (r["journal_key"] == parts[3] == key) or r["namespace_id"] != parts[1]:
        out.append(Violation("G-INV-2", path, "journal_key or namespace_id differs from the path or the formula"))
    oid = r["operation_identity"]
    keys = (r["consume_idempotency_key"], r["provider_create_idempotency_key"], r["provider_confirm_idempotency_key"])
    derived = (
        identity.consume_idempotency_key(oid),
        identity.provider_create_idempotency_key(oid),
        identity.provider_confirm_idempotency_key(oid),
    )
    if keys != derived or len(set(keys)) != 3:
        out.append(Violation("G-INV-2", path, "idempotency keys are not the derivations of operation_identity"))


def invariant_violations(docs: Docs, *, namespace_id: str) -> tuple[Violation, ...]:
    """Every violation of G-INV-1..8 and 10..12 in one snapshot, sorted; () when they all hold."""
    out: list[Violation] = []
    records, events = _split(docs, namespace_id, out)
    for path, r in records.items():
        _identity(path, r, out)
        out.extend(Violation(inv, path, detail) for inv, detail in state_rule_violations(r))
        _audit_chain(path, r, events.get(path, {}), out)
    for path in sorted(events.keys() - records.keys()):
        out.append(Violation("G-INV-10", path, "events without their record"))
    by_operation = Counter((r["gateway_binding_id"], r["operation_id"]) for r in records.values())
    for (binding, operation_id), count in sorted(by_operation.items()):
        if count > 1:
            out.append(Violation("G-INV-12", f"{binding}/{operation_id}", f"{count} records for one operation"))
    return tuple(sorted(out))


def _audit_chain(path: str, r: Mapping[str, Any], chain: dict[int, Mapping[str, Any]], out: list[Violation]) -> None:
    revision = r["revision"]
    if sorted(chain) != list(range(1, revision + 1)):
        out.append(Violation("G-INV-10", path, f"events {sorted(chain)} for revision {revision}"))
        return
    previous = None
    for k in range(1, revision + 1):
        e = chain[k]
        edge = (e["from_state"], e["event_type"], e["to_state"])
        if e["journal_key"] != r["journal_key"] or edge not in EDGES:
            out.append(Violation("G-INV-10", path, f"event {k} {edge} is not an edge of the table"))
        elif previous is not None and e["from_state"] != previous["to_state"]:
            out.append(Violation("G-INV-10", path, f"event {k} does not start where event {k - 1} ended"))
        if e["event_type"] in (c.EV_CONSUME_RECOVERY, c.EV_RECONCILE_TAKEOVER) or (
            e["event_type"] == c.EV_RECONCILE and e["from_state"] == c.PROVIDER_INTENT
        ):
            if (
                previous is None
                or previous["lease_expires_at"] is None
                or e["occurred_at"] < previous["lease_expires_at"]
            ):
                out.append(Violation("G-INV-11", path, f"event {k} took a lease before the previous one expired"))
        previous = e
    counts = Counter(e["event_type"] for e in chain.values())
    if counts[c.EV_CONSUME_CLAIMED] > 1 or counts[c.EV_PROVIDER_INTENT] > 1:
        out.append(Violation("G-INV-11", path, "consume or provider ownership granted twice"))
    last = chain[revision]
    repeated = ("fence_epoch", "lease_kind", "lease_expires_at", "evidence_class", "independent_verification")
    if (
        last["to_state"] != r["state"]
        or last["occurred_at"] != r["updated_at"]
        or any(_typed(last[f]) != _typed(r[f]) for f in repeated)
    ):
        out.append(Violation("G-INV-10", path, "the last event does not repeat the record"))


def _typed(value: Any) -> tuple:
    return (type(value).__name__, value)


def typed_document(doc: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, _typed(v)) for k, v in doc.items()))


def history_violations(before: Docs, after: Docs) -> tuple[Violation, ...]:
    """G-INV-9 (and G-INV-2's immutability) across one step: `after` holds at most one more write per record."""
    out: list[Violation] = []
    for path, old in sorted(before.items()):
        new = after.get(path)
        if new is None:
            out.append(Violation("G-INV-9", path, "document deleted"))
            continue
        if len(path.split("/")) != 4:
            if typed_document(old) != typed_document(new):
                out.append(Violation("G-INV-10", path, "an event changed"))
            continue
        if typed_document(old) == typed_document(new):
            continue
        if any(_typed(old[f]) != _typed(new[f]) for f in IDENTITY_FIELDS):
            out.append(Violation("G-INV-2", path, "an identity field changed"))
        if old["state"] in c.FINAL_STATES:
            out.append(Violation("G-INV-9", path, f"a {old['state']} record changed"))
        if new["revision"] != old["revision"] + 1:
            out.append(Violation("G-INV-9", path, "a write did not raise the revision by exactly 1"))
            continue
        event = after.get(f"{path}/events/{new['revision']:010d}")
        granted = event is not None and event.get("event_type") in GRANT_EVENTS
        if new["fence_epoch"] != old["fence_epoch"] + granted:
            out.append(Violation("G-INV-9", path, "the fence moved other than +1 on a lease grant"))
        changed = [f for f in ONCE_FIELDS if old[f] is not None and _typed(old[f]) != _typed(new[f])]
        if changed:
            out.append(Violation("G-INV-9", path, f"write-once fields changed: {changed}"))
        if new["updated_at"] < old["updated_at"]:
            out.append(Violation("G-INV-9", path, "updated_at went back"))
    return tuple(sorted(out))
