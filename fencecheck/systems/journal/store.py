"""The journal's stored documents, by command key: which key's scope a path is in, reading and writing one
key's documents (the lockstep's fault injection, the read-backs of the journal's parallel programs).

- `key_of(path)`: the command key hash whose scope holds `path`, or None;
- `read_key_scope(db, key_hash)`: every document in one command key's scope (`key_of`): the root, every
  document below it (the lifecycle, and any other), every `auditEvents/commerce_command_{h}_*` document
  (and any below one), in one query: what a step on that key may have written, unexpected extras included;
- `read_key(db, key_hash)`: the root, the lifecycle and every audit event of one command key;
- `write_key(db, key_hash, docs)`: make the stored documents of one key's scope exactly `docs` in one batch
  (documents whose content is already right are not rewritten; every other document of the scope is deleted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.cloud.firestore_v1.base_query import And, FieldFilter, Or
from google.cloud.firestore_v1.field_path import FieldPath

from fencecheck.emulator.firestore_io import (
    Stored,
    all_documents,
    prefix_end,
    replace_documents,
    stored_of,
    update_time_of,
)
from reference.journal.identity import lifecycle_path, root_path

__all__ = ["key_of", "read_key", "read_key_scope", "write_key"]


def _audit_prefix(key_hash: str) -> str:
    return f"commerce_command_{key_hash}_"


def key_of(path: str) -> str | None:
    """The command key hash whose scope holds `path`: `checkoutRequests/{h}` and every path below it,
    `auditEvents/commerce_command_{h}_*` and every path below one (h: 64 lowercase hex digits); else None."""
    parts = path.split("/")
    if len(parts) >= 2:
        if parts[0] == "checkoutRequests" and _is_hash(parts[1]):
            return parts[1]
        if parts[0] == "auditEvents" and parts[1].startswith("commerce_command_"):
            h = parts[1][len("commerce_command_"):][:64]
            if _is_hash(h) and parts[1].startswith(_audit_prefix(h)):
                return h
    return None


def _is_hash(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def read_key_scope(db: Any, key_hash: str) -> dict[str, Stored]:
    """Every document in the scope of one key (see `key_of`), in one kindless query: the document-name range
    of the root and everything below it (`\\0` ends a document id: `{h}` < `{h}/...` < `{h}\\0`), or the range of
    audit ids with the key's prefix."""
    name = FieldPath.document_id()
    root = root_path(key_hash)
    audits = f"auditEvents/{_audit_prefix(key_hash)}"

    def within(low: str, high: str) -> And:
        return And([FieldFilter(name, ">=", db.document(low)), FieldFilter(name, "<", db.document(high))])

    query = all_documents(db).where(filter=Or([within(root, root + "\0"), within(audits, prefix_end(audits))]))
    return stored_of(query.stream())


def read_key(db: Any, key_hash: str) -> dict[str, Stored]:
    """The root, the lifecycle and every `auditEvents/commerce_command_{h}_*` document of one key."""
    found: dict[str, Stored] = {}
    for snapshot in db.get_all([db.document(root_path(key_hash)), db.document(lifecycle_path(key_hash))]):
        if snapshot.exists:
            found[snapshot.reference.path] = Stored(snapshot.to_dict(), update_time_of(snapshot))
    audits = db.collection("auditEvents")
    prefix = _audit_prefix(key_hash)
    after_prefix = prefix_end(prefix)
    query = audits.where(filter=FieldFilter(FieldPath.document_id(), ">=", audits.document(prefix))).where(
        filter=FieldFilter(FieldPath.document_id(), "<", audits.document(after_prefix))
    )
    for snapshot in query.stream():
        found[snapshot.reference.path] = Stored(snapshot.to_dict(), update_time_of(snapshot))
    return found


def write_key(
    db: Any, key_hash: str, docs: Mapping[str, Mapping[str, Any]], *, current: Mapping[str, Stored] | None = None
) -> None:
    """Store exactly `docs` for one key's scope, atomically: changed or new documents are set, others deleted.
    `current`: what the caller just read of the key (then only its documents are candidates for deletion)."""
    current = read_key_scope(db, key_hash) if current is None else current
    replace_documents(db, current, docs)


def nested_paths(db: Any, key_hash: str) -> tuple[str, ...]:
    """Every document nested under the key's root document, at the first level of its subcollections
    (a write the read set of the key does not name)."""
    root = db.document(root_path(key_hash))
    return tuple(sorted(snap.reference.path for coll in root.collections() for snap in coll.stream()))
