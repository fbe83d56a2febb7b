"""Readable explanations of linearizability verdicts (pure text; no clocks, no I/O).

For an illegal partition: the longest linearizable prefix with the model's answer for each call, the first
call that cannot be placed after it (or the stored documents, when every definite call was placed but no
final state predicts them) with what the model answers there, and a per-caller timeline of the partition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from fencecheck.checker.history import Call
from fencecheck.plugin.records import SystemPlugin

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


@attrs.frozen(eq=False)
class Explanation:
    """Why one partition (the journal's: a command key) is not linearizable.

    `unplaceable` is the first call that cannot be placed after `prefix`, with `model_result` the model's
    answer for it there; it is None when every definite call was placed but no reachable final state gives
    the stored documents (then `document_differences` lists them). `others` are the other calls that could
    have been placed at that point, each with the model's answer.
    """

    key_hash: str
    prefix: tuple[tuple[Call, Any], ...]
    prefix_state: Any
    unplaceable: Call | None
    model_result: Any
    others: tuple[tuple[Call, Any], ...]
    document_differences: tuple[str, ...]
    timeline: str
    epoch: datetime | None
    plugin: SystemPlugin

    @property
    def unplaceable_id(self) -> int | None:
        return None if self.unplaceable is None else self.unplaceable.id

    def text(self) -> str:
        epoch = self.epoch
        describe_op = self.plugin.describe_op
        lines = [f"{self.plugin.partition_noun} {self.key_hash[:8]} is not linearizable."]
        lines.append(f"Longest linearizable prefix ({len(self.prefix)} calls):")
        if not self.prefix:
            lines.append("  (none)")
        for position, (call, result) in enumerate(self.prefix, 1):
            applied = " [indefinite, applied here]" if not call.outcome.definite else ""
            lines.append(
                f"  {position:>3}. call {call.id} ({call.caller}) {describe_op(call.op, epoch=epoch)}"
                f" -> {render_result(result, epoch)}{applied}"
            )
        lines.append("Model state after the prefix:")
        lines.extend("  " + line for line in self.plugin.describe_state(self.prefix_state, epoch=epoch).splitlines())
        if self.unplaceable is not None:
            call = self.unplaceable
            lines.append(
                f"First call that cannot be placed: call {call.id} ({call.caller}) {describe_op(call.op, epoch=epoch)}"
            )
            lines.append(f"  observed: {render_outcome(call, epoch)}")
            lines.append(f"  model answers after the prefix: {render_result(self.model_result, epoch)}")
            if self.others:
                lines.append("  other calls that could have come next (model answer there; none fits):")
                for other, result in self.others:
                    lines.append(
                        f"    call {other.id} ({other.caller}) observed {render_outcome(other, epoch)};"
                        f" model {render_result(result, epoch)}"
                    )
        else:
            lines.append(
                "First call that cannot be placed: the final-documents read (every definite call is placed,"
                " but no final model state predicts the stored documents)"
            )
            lines.extend("  " + d for d in self.document_differences)
        lines.append("Timeline per caller (ms since the first invocation; #n = position in the prefix):")
        lines.append(self.timeline)
        return "\n".join(lines)


# --- rendering -------------------------------------------------------------------------------------


def _t(moment: datetime, epoch: datetime | None) -> str:
    if epoch is None:
        return moment.isoformat()
    micros = (moment - epoch) // _US
    sign = "-" if micros < 0 else "+"
    seconds, rest = divmod(abs(micros), 1_000_000)
    return f"T{sign}{seconds}.{rest:06d}s"


def render_answer(answer: Mapping[str, Any] | str | None, epoch: datetime | None) -> str:
    """An output JSON dict or error code in one short phrase."""
    if answer is None:
        return "(no answer)"
    if isinstance(answer, str):
        return answer
    text = str(answer.get("outcome", "?"))
    if "fenceEpoch" in answer:
        text += f" fence={answer['fenceEpoch']}"
    expires = answer.get("leaseExpiresAt")
    if isinstance(expires, Mapping) and isinstance(expires.get("seconds"), int):
        nanos = expires.get("nanoseconds", 0)
        micros = (nanos if isinstance(nanos, int) else 0) // 1000
        moment = _EPOCH + timedelta(seconds=expires["seconds"], microseconds=micros)
        text += f" expires={_t(moment, epoch)}"
    known = {"journalSchemaVersion", "lifecycleSchemaVersion", "outcome", "state", "fenceEpoch", "leaseExpiresAt"}
    extra = sorted(set(answer) - known)
    if extra:
        text += f" (+{','.join(extra)})"
    return text


def render_result(result: Any, epoch: datetime | None) -> str:
    if result is None:
        return "(none)"
    return render_answer(result.output if result.ok else result.code, epoch)


def render_outcome(call: Call, epoch: datetime | None) -> str:
    if call.outcome.definite:
        return render_answer(call.outcome.observed, epoch)
    return f"indefinite ({call.outcome.reason})"


def _ms(ns: int | None, origin: int) -> str:
    return "-" if ns is None else f"{(ns - origin) / 1e6:.3f}"


def timeline(
    calls: tuple[Call, ...],
    *,
    positions: Mapping[int, int],
    marks: Mapping[int, str],
    epoch: datetime | None,
    describe_op: Callable[..., str],
) -> str:
    """Calls grouped by caller (callers in order of first invocation), each caller's calls in order."""
    if not calls:
        return "  (no calls)"
    origin = min(c.invoked_at for c in calls)
    by_caller: dict[str, list[Call]] = {}
    for call in sorted(calls, key=lambda c: (c.invoked_at, c.id)):
        by_caller.setdefault(call.caller, []).append(call)
    width = max(len(_ms(c.completed_at, origin)) for c in calls)
    lines = []
    for caller, own in by_caller.items():
        lines.append(f"  {caller}")
        for call in own:
            span = f"[{_ms(call.invoked_at, origin):>{width}} .. {_ms(call.completed_at, origin):>{width}}]"
            where = f"#{positions[call.id]}" if call.id in positions else marks.get(call.id, "not placed")
            wire = f" [wire: {', '.join(fault.label for fault in call.wire_faults)}]" if call.wire_faults else ""
            lines.append(
                f"    {span} call {call.id} {describe_op(call.op, epoch=epoch)}"
                f" -> {render_outcome(call, epoch)}{wire}  {where}"
            )
    return "\n".join(lines)


def _short(path: str, key_hash: str) -> str:
    return path.replace(key_hash, key_hash[:8])


def _render_value(value: Any) -> str:
    if isinstance(value, datetime):
        return f"{type(value).__name__}({value.isoformat()})"
    return f"{type(value).__name__}({value!r})"


def document_differences(
    key_hash: str,
    model_docs: Mapping[str, Mapping[str, Any]],
    stored_docs: Mapping[str, Mapping[str, Any]],
    normalize: Callable[[Any], Any],
) -> tuple[str, ...]:
    """One line per difference between the model's documents and the stored ones."""
    out = []
    for path in sorted(set(model_docs) | set(stored_docs)):
        short = _short(path, key_hash)
        if path not in stored_docs:
            out.append(f"missing from the store: {short}")
            continue
        if path not in model_docs:
            fields = stored_docs[path]
            summary = ", ".join(f"{k}={fields[k]!r}" for k in ("eventType", "state", "fenceEpoch") if k in fields)
            out.append(f"stored but not predicted: {short}" + (f" ({summary})" if summary else ""))
            continue
        model_doc, stored_doc = model_docs[path], stored_docs[path]
        for field in sorted(set(model_doc) | set(stored_doc)):
            if field not in stored_doc:
                out.append(f"{short}: field {field} missing (model {_render_value(model_doc[field])})")
            elif field not in model_doc:
                out.append(f"{short}: unexpected field {field} = {_render_value(stored_doc[field])}")
            elif normalize(model_doc[field]) != normalize(stored_doc[field]):
                out.append(
                    f"{short}: {field} stored {_render_value(stored_doc[field])},"
                    f" model {_render_value(model_doc[field])}"
                )
    return tuple(out)


# --- building an explanation -----------------------------------------------------------------------


def explain_partition(
    key_hash: str,
    calls: tuple[Call, ...],
    start_state: Any,
    prefix_order: tuple[int, ...],
    prefix_state: Any,
    step: Callable[[Any, Any], tuple[Any, Any]],
    *,
    expected_documents: Mapping[str, Mapping[str, Any]] | None,
    documents_of: Callable[[Any], dict[str, dict[str, Any]]],
    normalize: Callable[[Any], Any],
    plugin: SystemPlugin,
) -> Explanation:
    """Explain an illegal partition from the longest prefix the search found (indexes into `calls`)."""
    epoch = min((now for c in calls if (now := plugin.clock_of(c.op)) is not None), default=None)
    # Replay the prefix for the model's answers (the search only kept the order).
    prefix = []
    placed = set(prefix_order)
    state = start_state
    for i in prefix_order:
        state, result = step(state, calls[i].op)
        prefix.append((calls[i], result))
    pending = [i for i in range(len(calls)) if i not in placed]
    pending_definite = [i for i in pending if calls[i].outcome.definite]
    unplaceable = None
    model_result = None
    others: list[tuple[Call, Any]] = []
    differences: tuple[str, ...] = ()
    marks: dict[int, str] = {}
    if pending_definite:
        first = min(pending_definite, key=lambda i: (calls[i].completed_at, calls[i].invoked_at, calls[i].id))
        deadline = calls[first].completed_at
        unplaceable = calls[first]
        model_result = step(prefix_state, unplaceable.op)[1]
        marks[unplaceable.id] = "<-- CANNOT BE PLACED"
        for i in pending:
            if i != first and calls[i].invoked_at <= deadline:
                others.append((calls[i], step(prefix_state, calls[i].op)[1]))
    else:
        differences = document_differences(
            key_hash, documents_of(prefix_state), expected_documents or {}, normalize
        ) or ("(no difference found: the documents function is not deterministic?)",)
    positions = {call.id: position for position, (call, _result) in enumerate(prefix, 1)}
    for i in pending:
        if not calls[i].outcome.definite:
            marks.setdefault(calls[i].id, "not placed (treated as not applied)")
    return Explanation(
        key_hash,
        tuple(prefix),
        prefix_state,
        unplaceable,
        model_result,
        tuple(others),
        differences,
        timeline(calls, positions=positions, marks=marks, epoch=epoch, describe_op=plugin.describe_op),
        epoch,
        plugin,
    )
