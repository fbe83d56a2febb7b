"""The gateway reference beside its model (docs/gateway-contract.md): how a model operation is called on the
reference, and how answers and stored documents are compared exactly (types included, key order of outputs).

`reference_call(op)` names the reference function and its keyword arguments for a model operation (request
and provider input as the parsed JSON, simulated answers as plain dicts). `plain_docs` normalizes what the
Firestore client returns (its datetime subclass) to plain values, so documents compare by type too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fencecheck.systems.gateway.plugin import call_arguments
from model.gateway import (
    ApplyEvidence,
    Begin,
    ClaimConsume,
    CloseWindow,
    Get,
    ManualTerminal,
    RecordConsume,
    ReportSubmission,
    TakeProviderIntent,
    TakeReconcileLease,
)
from model.gateway.invariants import typed_document

# the decide operation each model operation stands for (the public function's name is the plug-in's)
DECIDE_NAMES = {
    Begin: "begin",
    Get: "get",
    ClaimConsume: "claim",
    RecordConsume: "record_consume",
    TakeProviderIntent: "take_provider_intent",
    ReportSubmission: "report",
    TakeReconcileLease: "take_reconcile_lease",
    ApplyEvidence: "apply_evidence",
    ManualTerminal: "manual_terminal",
    CloseWindow: "close_window",
}


def reference_call(op: Any) -> tuple[str, str, dict[str, Any]]:
    """(public function name, decide operation name, keyword arguments without db and clock): the plug-in's
    call (fencecheck.systems.gateway.plugin.call_arguments) plus the name of the decision it makes."""
    public, kwargs = call_arguments(op)
    return public, DECIDE_NAMES[type(op)], kwargs


def plain(value: Any) -> Any:
    if isinstance(value, datetime):  # the client's DatetimeWithNanoseconds: compare as a plain datetime
        assert getattr(value, "nanosecond", 0) % 1000 == 0
        return datetime(*value.timetuple()[:6], value.microsecond, tzinfo=UTC)
    return value


def plain_docs(docs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {path: {k: plain(v) for k, v in doc.items()} for path, doc in docs.items()}


def typed_docs(docs: dict[str, dict[str, Any]]) -> dict[str, tuple]:
    return {path: typed_document(doc) for path, doc in plain_docs(docs).items()}


def typed_json(value: Any) -> Any:
    """Exact form of an output: key order and value types (True is not 1)."""
    if isinstance(value, dict):
        return ("dict", tuple((k, typed_json(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def answer_of(output_or_code: Any) -> Any:
    """What a caller observed from the reference: an output's exact JSON, or an error code."""
    if isinstance(output_or_code, str):
        return ("error", output_or_code)
    return ("output", typed_json(output_or_code.to_json()))


def model_answer(result: Any) -> Any:
    return ("error", result.code) if result.outcome is None else ("output", typed_json(result.output))
