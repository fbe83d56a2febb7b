"""Injected faults: a broken writer's damage to one journal's stored documents (harness-side, not a call).

`InjectFault(journal, kind)` rewrites the documents of a well-formed record so that they are no longer a
record of this contract; from then on every call on that key must answer `unrecognized_record` and write
nothing (precedence step 4, fail closed: never repaired). The model keeps the damaged documents exactly
(`CorruptRecord.docs`), so the lockstep writes them and then compares what is stored with them. Each kind
breaks one rule the reference's record parsing relies on:

- `fence_as_double`: `fence_epoch` stored as a double (a client that writes JSON numbers);
- `unknown_state`: a state outside the contract's nine;
- `extra_field`: one field more than the record's 40;
- `event_missing`: the record's current event deleted (the chain no longer ends at the record);
- `stray_next_event`: an event one revision past the record (a write that landed half);
- `lease_stretched`: a held lease's expiry an hour later than its contract length (a stale owner would act).

A fault that does not apply (no record, already damaged, `lease_stretched` on a record without a lease)
changes nothing: `fault.not_applicable`.
"""

from __future__ import annotations

from datetime import timedelta

import attrs

from .documents import record_documents
from .identity import event_path
from .ops import JournalRef
from .results import Result
from .state import CorruptRecord, GatewayState, Journal

FAULT_KINDS = ("fence_as_double", "unknown_state", "extra_field", "event_missing", "stray_next_event",
               "lease_stretched")
_APPLIED = Result("fault.injected", True)
_NOT_APPLICABLE = Result("fault.not_applicable", False)


@attrs.frozen(cache_hash=True, kw_only=True)
class InjectFault:
    journal: JournalRef
    kind: str = attrs.field(validator=attrs.validators.in_(FAULT_KINDS))


def fault_applies(state: GatewayState, op: InjectFault) -> bool:
    record = state.get((op.journal.namespace_id, op.journal.journal_key))
    if not isinstance(record, Journal):
        return False
    return op.kind != "lease_stretched" or record.lease_kind is not None


def _damaged(j: Journal, kind: str) -> dict[str, dict]:
    docs = {path: dict(doc) for path, doc in record_documents(j).items()}
    record_at = next(iter(docs))
    current = event_path(j.namespace_id, j.journal_key, j.revision)
    record = docs[record_at]
    if kind == "fence_as_double":
        record["fence_epoch"] = float(j.fence_epoch)
    elif kind == "unknown_state":
        record["state"] = "SETTLED"
    elif kind == "extra_field":
        record["repaired_by"] = "operator"
    elif kind == "event_missing":
        del docs[current]
    elif kind == "stray_next_event":
        docs[event_path(j.namespace_id, j.journal_key, j.revision + 1)] = {**docs[current], "revision": j.revision + 1}
    else:  # lease_stretched
        record["lease_expires_at"] = j.lease_expires_at + timedelta(hours=1)
    return docs


def apply_fault(state: GatewayState, op: InjectFault) -> tuple[GatewayState, Result]:
    if not fault_applies(state, op):
        return state, _NOT_APPLICABLE
    key = (op.journal.namespace_id, op.journal.journal_key)
    docs = _damaged(state.get(key), op.kind)
    frozen = tuple((path, tuple(doc.items())) for path, doc in docs.items())
    return state.with_record(key, CorruptRecord(op.kind, frozen)), _APPLIED
