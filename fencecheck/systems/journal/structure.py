"""What the journal's stored documents must show after a contest, whatever order its calls took (the plug-in's
`contest_problems` hook, and `fencecheck.parallel.execute`'s per-key check):

one lifecycle document under the root and nothing else there; audits contiguous 1..R with R the lifecycle
revision, each event starting where the previous one ended, fences stepping only on a takeover, each a later
commit than the one before; root and revision-1 audit written by one commit, and so are the lifecycle and its
audit partner; at most one terminal event, the last, and exactly as many as the contest expects
(`Contest.facts["terminalEvents"]`, absent: not counted; fewer than that is `contest_expectations`, a
finding only where the answers imply the terminal commit); nothing that existed before the race deleted, or
rewritten unless its content changed (only the lifecycle may change); a record that was not valid before the
race not changed at all.

`project_problems` is the whole-project read-back of a parallel run (a contest's is the checker's: every
partition of the setup's state is judged against the model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fencecheck.emulator.firestore_io import Stored, typed
from fencecheck.systems.journal.store import key_of
from model.journal import JournalState, documents_for
from reference.journal.identity import audit_path, lifecycle_path, root_path

TERMINAL_EVENTS = ("command_succeeded", "command_failed_final")
_EVENT_STATES = {
    "command_registered": (None, "registered"),
    "command_lease_acquired": ("registered", "leased"),
    "command_lease_taken_over": ("leased", "leased"),
    "command_succeeded": ("leased", "succeeded"),
    "command_failed_final": ("leased", "failed_final"),
}

__all__ = ["contest_expectations", "contest_problems", "project_problems", "structural_problems"]


def contest_problems(
    initial_state: JournalState, before: Mapping[str, Stored], after: Mapping[str, Stored], contest: Any
) -> list[str]:
    """`structural_problems` for every command key the contest calls, from the whole project read back after
    the setup (`before`) and at the end (`after`)."""
    problems = []
    expected = _expected_terminal_events(contest)
    for h in _keys(contest):
        record = initial_state.get(h)
        stored = _terminal_events(after, h)
        if expected is not None and stored > expected:  # no answer can explain a terminal event nobody asked for
            problems.append(f"{h[:8]}: {stored} terminal events stored, at most {expected} expected")
        problems += structural_problems(
            h,
            _key_documents(before, h),
            _key_documents(after, h),
            nested_paths=[path for path in after if path.startswith(root_path(h) + "/")],
            corrupt=record is not None and record.corrupt,
        )
    return problems


def contest_expectations(
    _initial_state: JournalState, _before: Mapping[str, Stored], after: Mapping[str, Stored], contest: Any
) -> list[str]:
    """Fewer terminal events than the contest expects (`Contest.facts["terminalEvents"]`) per command key it
    calls: only the answers can imply that a terminal commit happened (a race nobody answered may have
    committed nothing). More than expected is a structural problem whatever the answers (`contest_problems`)."""
    expected = _expected_terminal_events(contest)
    problems = []
    for h in _keys(contest) if expected is not None else ():
        stored = _terminal_events(after, h)
        if stored < expected:
            problems.append(f"{h[:8]}: {stored} terminal events stored, {expected} expected")
    return problems


def _keys(contest: Any) -> list[str]:
    return sorted({racer.op.command.key_hash for racer in contest.callers})


def _expected_terminal_events(contest: Any) -> int | None:
    expected = contest.facts.get("terminalEvents")
    return expected if isinstance(expected, int) and not isinstance(expected, bool) else None


def _terminal_events(stored: Mapping[str, Stored], key_hash: str) -> int:
    return sum(1 for path, item in _key_documents(stored, key_hash).items()
               if _audit_revision(path, key_hash) is not None and item.data.get("eventType") in TERMINAL_EVENTS)


def _key_documents(stored: Mapping[str, Stored], key_hash: str) -> dict[str, Stored]:
    """The root, the lifecycle and every `auditEvents/commerce_command_{h}_*` document of one key."""
    audits = f"auditEvents/commerce_command_{key_hash}_"
    wanted = (root_path(key_hash), lifecycle_path(key_hash))
    return {path: item for path, item in stored.items()
            if path in wanted or (path.startswith(audits) and "/" not in path[len(audits):])}


def _audit_revision(path: str, key_hash: str) -> int | None:
    prefix = f"auditEvents/commerce_command_{key_hash}_"
    if path.startswith(prefix) and path[len(prefix) :].isdigit():
        return int(path[len(prefix) :])
    return None


def structural_problems(
    key_hash: str,
    before: Mapping[str, Stored],
    after: Mapping[str, Stored],
    *,
    nested_paths: Iterable[str] = (),
    corrupt: bool = False,
    terminal_events: int | None = None,
) -> list[str]:
    """Invariants of the stored documents of one key that hold whatever order the race took (see module doc).

    `corrupt`: the setup left a record that is not valid; then nothing may change at all.
    """
    short = key_hash[:8]
    problems: list[str] = []
    root, lifecycle, first = root_path(key_hash), lifecycle_path(key_hash), audit_path(key_hash, 1)

    extra_nested = sorted(set(nested_paths) - {lifecycle})
    if extra_nested:
        problems.append(f"{short}: documents under the root besides lifecycle/current: {extra_nested}")

    # Nothing that existed before the race is deleted; unchanged content keeps its update time.
    for path, old in before.items():
        name = path.replace(key_hash, short)
        new = after.get(path)
        if new is None:
            problems.append(f"{name}: deleted by the race")
        elif typed(new.data) == typed(old.data):
            if new.update_time != old.update_time:
                problems.append(f"{name}: rewritten with the same content (update time moved)")
        elif path != lifecycle or corrupt:
            problems.append(f"{name}: content changed by the race (only the lifecycle may change)")
    if corrupt:
        for path in sorted(after.keys() - before.keys()):
            problems.append(f"{path.replace(key_hash, short)}: created although the stored record is not valid")
        return problems

    # The root pair: both or neither, written by one commit.
    if (root in after) != (first in after):
        problems.append(f"{short}: only one half of the root pair is stored")
    elif root in after and after[root].update_time != after[first].update_time:
        problems.append(f"{short}: root and revision-1 audit were not written by one commit")

    # Audits: contiguous 1..R, chained, each a later commit than the previous one.
    audits = {}
    for path, item in after.items():
        revision = _audit_revision(path, key_hash)
        if revision is not None:
            audits[revision] = item
    lc = after.get(lifecycle)
    top = 1 if lc is None else lc.data.get("commandRevision")
    if not audits and root not in after:
        if lc is not None:
            problems.append(f"{short}: a lifecycle without its root pair")
        return problems
    if not isinstance(top, int) or sorted(audits) != list(range(1, top + 1)):
        problems.append(f"{short}: audit revisions {sorted(audits)} are not 1..{top} (lifecycle revision)")
        return problems
    previous = None
    terminal = 0
    for revision in range(1, top + 1):
        data, stamp = audits[revision].data, audits[revision].update_time
        event = data.get("eventType")
        if data.get("commandRevision") != revision:
            problems.append(f"{short}: audit {revision} carries commandRevision {data.get('commandRevision')!r}")
        states = _EVENT_STATES.get(event)
        if states is None or (revision == 1) != (event == "command_registered"):
            problems.append(f"{short}: audit {revision} has event type {event!r}")
        elif (data.get("fromState"), data.get("toState")) != states:
            problems.append(f"{short}: audit {revision} ({event}) goes {data.get('fromState')}->{data.get('toState')}")
        if previous is not None:
            pdata, pstamp = previous
            if data.get("fromState") != pdata.get("toState"):
                problems.append(f"{short}: audit {revision} starts in {data.get('fromState')!r}, "
                                f"audit {revision - 1} ended in {pdata.get('toState')!r}")
            if stamp <= pstamp:
                problems.append(f"{short}: audit {revision} was not committed after audit {revision - 1}")
            fence, pfence = data.get("fenceEpoch"), pdata.get("fenceEpoch")
            if revision == 2 and fence != 1:
                problems.append(f"{short}: the first lease event has fence {fence!r}, not 1")
            if revision > 2 and isinstance(fence, int) and isinstance(pfence, int):
                step_ = 1 if event == "command_lease_taken_over" else 0
                if fence != pfence + step_:
                    problems.append(f"{short}: audit {revision} ({event}) has fence {fence} after fence {pfence}")
        if event in TERMINAL_EVENTS:
            terminal += 1
            if revision != top:
                problems.append(f"{short}: terminal event at revision {revision} is not the last")
        previous = (data, stamp)
    if terminal > 1:
        problems.append(f"{short}: {terminal} terminal events (at most one may ever exist)")
    if terminal_events is not None and terminal != terminal_events:
        problems.append(f"{short}: {terminal} terminal events stored, {terminal_events} expected")
    if lc is not None:
        partner = audits[top]
        if lc.update_time != partner.update_time:
            problems.append(f"{short}: lifecycle and its revision-{top} audit were not written by one commit")
        if lc.data.get("fenceEpoch") != partner.data.get("fenceEpoch") or lc.data.get("state") != partner.data.get(
            "toState"
        ):
            problems.append(f"{short}: lifecycle does not match its revision-{top} audit")
    return problems


def _short(path: str) -> str:
    """A path with every command key hash in it cut to 8 digits (messages name no raw ids)."""
    key = key_of(path)
    return path if key is None else path.replace(key, key[:8])


def project_problems(
    project: Mapping[str, Stored], judged: Mapping[str, Iterable[str]], state: JournalState
) -> list[str]:
    """The whole-project read-back of a race or parallel run: every stored document must be one the run read
    back and judged for a key it called (`judged`: key hash -> those paths), or belong to a key it did not
    call and be exactly the model's document there (`state`: the model state the race started from).
    Anything else is a write outside the contested keys: a stray (no command key at all), a document of an
    uncalled key the model does not predict, or one in a called key's scope that is none of its documents."""
    problems = []
    seen: dict[str, dict[str, Any]] = {}
    judged_paths = {key: set(paths) for key, paths in judged.items()}
    for path, item in sorted(project.items()):
        key = key_of(path)
        if key is None:
            problems.append(f"{path}: stored outside every command key (a stray write; the run only calls "
                            f"{', '.join(sorted(k[:8] for k in judged_paths))})")
        elif key in judged_paths:
            if path not in judged_paths[key]:
                problems.append(f"{_short(path)}: stored in a contested key's scope but none of its documents")
        else:
            seen.setdefault(key, {})[path] = item.data
    for key in sorted(set(seen) | (set(state.keys()) - set(judged_paths))):
        stored, predicted = seen.get(key, {}), documents_for(state, key)
        for path in sorted(stored.keys() | predicted.keys()):
            if path not in predicted:
                problems.append(f"{_short(path)}: stored under a key no caller of the run called, and not the "
                                f"model's there")
            elif path not in stored:
                problems.append(f"{_short(path)}: the model's document of an uncalled key is missing")
            elif typed(dict(stored[path])) != typed(dict(predicted[path])):
                problems.append(f"{_short(path)}: an uncalled key's document changed")
    return problems

