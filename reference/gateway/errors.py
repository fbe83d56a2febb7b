"""The gateway journal's one error type, with a fixed code and a fixed message per code
(docs/gateway-contract.md, "Codes").

Built from its code alone, as the command journal's: nothing caller-supplied, stored or hosted reaches a
message, an attribute, the repr or a chained cause. Immutable once it exists.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {
    "invalid_gateway_input": "The gateway input does not meet the documented input rules; correct it and retry.",
    "journal_not_begun": "The gateway journal is not begun; begin it before any other operation.",
    "binding_conflict": (
        "This operation id is already bound to another provider, request or provider input; "
        "use a new operation id for a different operation."
    ),
    "lease_rejected": "The lease is not held by this worker at this fence epoch, or it has expired.",
    "report_conflict": "Another provider submission was already reported for this lease.",
    "submission_not_reported": "Report the provider submission before applying the provider owner's evidence.",
    "consume_response_mismatch": (
        "The hosted consume answer is not bound to this journal's idempotency key, identity or claim window."
    ),
    "evidence_mismatch": "The settlement evidence is not bound to this journal, its provider or its payment.",
    "release_refused": "A release needs the settlement deadline not elapsed and the submission fenced.",
    "terminal_conflict": "The journal already reached a different final state.",
    "not_applicable": "No provider attempt exists yet, so this operation does not apply.",
    "namespace_not_linearizable": (
        "The namespace is not declared GLOBAL_SHARED_LINEARIZABLE; the gateway journal runs only on one."
    ),
    "unrecognized_record": (
        "A stored gateway record is not a valid record of this contract; it was left untouched for review."
    ),
    "gateway_unavailable": "The gateway journal is unavailable; retry the whole call later with the same ids.",
}

ERROR_CODES = tuple(MESSAGES)
# What Python itself sets on any exception it raises, chains or reports; nothing else may be set once it exists.
_RUNTIME_ATTRIBUTES = frozenset({"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__"})


class GatewayError(RuntimeError):
    """Raised by every gateway operation that does not return an output. Immutable: its code, message and
    arguments cannot be changed (or deleted) once it exists."""

    def __init__(self, code: str) -> None:
        if code not in MESSAGES:
            raise ValueError("unknown gateway error code")
        if "code" in vars(self):  # __init__ called again on an existing error
            raise AttributeError("GatewayError is immutable")
        super().__init__(MESSAGES[code])
        super().__setattr__("code", code)

    def __setattr__(self, name: str, value: object) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError("GatewayError is immutable")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError("GatewayError is immutable")
        super().__delattr__(name)

    def __repr__(self) -> str:
        return f"GatewayError({self.code!r})"

    def __reduce__(self):  # errors cross process boundaries (xdist workers) by code alone
        return (GatewayError, (self.code,))
