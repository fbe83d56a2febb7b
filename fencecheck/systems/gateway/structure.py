"""What the gateway's stored documents must show after a contest, whatever order its calls took (the plug-in's
`contest_problems` hook): G-INV-1..12 on the whole project at the end, and G-INV-9/10 (and G-INV-2's
immutability) across the race, which may hold several writes per journal:

- nothing stored after the setup is deleted, and no event changes (events are written once);
- a journal's identity fields, `created_at` and every once-field keep their values; a
  `SUBMISSION_WINDOW_CLOSED`, `COMMIT` or `RELEASE` record never changes;
- the revision never goes back, `updated_at` never goes back, and the fence rises by exactly the number of
  lease grants among the events the race added;
- the record and its current event were written by one commit (equal update times), and every event of the
  chain by a later commit than the one before it;
- a journal damaged before the race (`CorruptRecord`) is left exactly as it was (every call on it must answer
  `unrecognized_record` without writing), and G-INV-1..12 are not asked of it.

The checker already compares each journal's final documents with the model's; these checks read the stored
documents alone (`model.gateway.invariant_violations` consults no `step`), so a finding here names the
invariant that broke, not only "the documents differ".
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fencecheck.emulator.firestore_io import Stored, typed
from model.gateway import CorruptRecord, GatewayState, invariant_violations
from model.gateway.constants import FINAL_STATES
from model.gateway.invariants import GRANT_EVENTS, IDENTITY_FIELDS
from model.gateway.state_rules import ONCE_FIELDS

ROOT = "gatewayNamespaces/"

__all__ = ["contest_problems", "race_problems"]


def contest_problems(
    initial_state: GatewayState, before: Mapping[str, Stored], after: Mapping[str, Stored], contest: Any
) -> list[str]:
    """G-INV-1..12 at the end and G-INV-2/9/10 across the race, for the contest's namespace (every call of a
    contest names one; a contest over several is judged per namespace)."""
    namespaces = sorted({op.journal.namespace_id for op in _ops(contest)})
    damaged = {f"{ROOT}{ns}/journals/{key}" for (ns, key), record in initial_state.records
               if isinstance(record, CorruptRecord)}
    problems = []
    for namespace in namespaces:
        scope = f"{ROOT}{namespace}/" if len(namespaces) > 1 else ROOT
        docs = {path: item.data for path, item in after.items()
                if path.startswith(scope) and not _under(path, damaged)}
        problems += [str(violation) for violation in invariant_violations(docs, namespace_id=namespace)]
    return problems + race_problems(before, after, damaged)


def _ops(contest: Any) -> list[Any]:
    return [*contest.setup, *(racer.op for racer in contest.callers)]


def _under(path: str, records: set[str]) -> bool:
    return any(path == record or path.startswith(record + "/") for record in records)


def _is_record(path: str) -> bool:
    return path.startswith(ROOT) and len(path.split("/")) == 4


def race_problems(
    before: Mapping[str, Stored], after: Mapping[str, Stored], damaged: set[str] | frozenset[str] = frozenset()
) -> list[str]:
    """G-INV-2/9/10 from the project after the setup (`before`) to the project at the end (`after`)."""
    problems = []
    for path, old in sorted(before.items()):
        new = after.get(path)
        if new is None:
            problems.append(f"G-INV-9 {path}: deleted during the race")
        elif (_under(path, damaged) or not _is_record(path)) and not _same_data(old.data, new.data):
            what = "a record damaged before the race" if _under(path, damaged) else "an event"
            problems.append(f"G-INV-10 {path}: {what} changed during the race")
        elif _is_record(path) and not _under(path, damaged):
            problems += _record_moves(path, old.data, new.data, after)
    for path, new in sorted(after.items()):
        if path in before and _under(path, damaged):
            continue
        if _under(path, damaged):
            problems.append(f"G-INV-10 {path}: written under a record damaged before the race")
        elif _is_record(path) and isinstance(new.data.get("revision"), int):
            problems += _commit_order(path, new, after)
    return problems


def _same_data(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return sorted(a) == sorted(b) and all(typed(a[k]) == typed(b[k]) for k in a)


def _record_moves(path: str, old: Mapping[str, Any], new: Mapping[str, Any], after: Mapping[str, Stored]
                  ) -> list[str]:
    """A record's change over the race: identity and once-fields kept, final records frozen, revision and
    `updated_at` monotone, the fence raised once per grant event the race added."""
    if _same_data(old, new):
        return []
    problems = []
    kept = [f for f in IDENTITY_FIELDS if typed(old.get(f)) != typed(new.get(f))]
    if kept:
        problems.append(f"G-INV-2 {path}: identity fields changed during the race: {kept}")
    if old.get("state") in FINAL_STATES:
        problems.append(f"G-INV-9 {path}: a {old['state']} record changed during the race")
    once = [f for f in ONCE_FIELDS if old.get(f) is not None and typed(old[f]) != typed(new.get(f))]
    if once:
        problems.append(f"G-INV-9 {path}: write-once fields changed during the race: {once}")
    old_revision, new_revision = old.get("revision"), new.get("revision")
    if not (type(old_revision) is int and type(new_revision) is int and new_revision > old_revision):
        problems.append(f"G-INV-9 {path}: a changed record's revision went from {old_revision!r} to "
                        f"{new_revision!r} (it must rise)")
        return problems
    old_at, new_at = old.get("updated_at"), new.get("updated_at")
    if not (isinstance(old_at, datetime) and isinstance(new_at, datetime)) or new_at < old_at:
        problems.append(f"G-INV-9 {path}: updated_at went back during the race")
    added = [after.get(f"{path}/events/{revision:010d}") for revision in range(old_revision + 1, new_revision + 1)]
    grants = sum(1 for event in added if event is not None and event.data.get("event_type") in GRANT_EVENTS)
    moved = new.get("fence_epoch"), old.get("fence_epoch")
    if not all(type(v) is int for v in moved) or moved[0] - moved[1] != grants:
        problems.append(f"G-INV-9 {path}: the fence went from {moved[1]!r} to {moved[0]!r} over {grants} lease "
                        "grant(s) added during the race")
    return problems


def _commit_order(path: str, record: Stored, after: Mapping[str, Stored]) -> list[str]:
    """The record and its current event share one commit; each event is a later commit than the one before."""
    problems = []
    revision = record.data["revision"]
    current = after.get(f"{path}/events/{revision:010d}")
    if current is not None and current.update_time != record.update_time:
        problems.append(f"G-INV-10 {path}: the record and its event {revision} were written by different commits")
    times = [after[p].update_time for r in range(1, revision + 1) if (p := f"{path}/events/{r:010d}") in after]
    if any(later <= earlier for earlier, later in zip(times, times[1:], strict=False)):
        problems.append(f"G-INV-10 {path}: an event was not written by a later commit than the one before it")
    return problems
