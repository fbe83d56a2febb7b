"""The journal's one error type, with a fixed code and a fixed message per code.

Nothing caller-supplied or stored ever reaches a message, an attribute, the repr or a chained cause: the
error is built from its code alone, so it cannot leak ids, payloads, hashes, paths or Firestore details.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {
    "invalid_command_input": "The command input does not meet the documented input rules; correct it and retry.",
    "command_not_registered": "The command is not registered; register it before leasing or finishing it.",
    "command_conflict": (
        "This command identity is already registered with another command type, endpoint schema version "
        "or payload; use a new command id for a different command."
    ),
    "unrecognized_record": (
        "A stored journal record is not a valid record of this contract; it was left untouched for review."
    ),
    "lease_rejected": "The lease is not held by this worker at this fence epoch, or it has expired.",
    "terminal_conflict": "The command already reached a different terminal state or commitment.",
    "journal_unavailable": "The journal is unavailable; retry the whole call later with the same ids.",
}

ERROR_CODES = tuple(MESSAGES)
# What Python itself sets on any exception it raises, chains or reports (`add_note` included); nothing else may
# be set on an error once it exists.
_RUNTIME_ATTRIBUTES = frozenset({"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__"})


class CommandJournalError(RuntimeError):
    """Raised by every journal operation that does not return an output. Immutable: its code, message and
    arguments cannot be changed (or deleted) once it exists, so what a caller catches is what was raised."""

    def __init__(self, code: str) -> None:
        if code not in MESSAGES:
            raise ValueError("unknown journal error code")
        if "code" in vars(self):  # __init__ called again on an existing error
            raise AttributeError("CommandJournalError is immutable")
        super().__init__(MESSAGES[code])
        super().__setattr__("code", code)

    def __setattr__(self, name: str, value: object) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError("CommandJournalError is immutable")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError("CommandJournalError is immutable")
        super().__delattr__(name)

    def __repr__(self) -> str:
        return f"CommandJournalError({self.code!r})"

    def __reduce__(self):  # errors cross process boundaries (xdist workers) by code alone
        return (CommandJournalError, (self.code,))
