"""The lantern layer's one error type, with a fixed code and a fixed message per code.

As in the journal: nothing caller-supplied or stored reaches a message, an attribute, the repr or a chained
cause; the error is built from its code alone. The HTTP status a service would map each code to is noted.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {
    "invalid_lantern_input": "The input does not meet the documented input rules; correct it and retry.",  # 400
    "schedule_not_due": "The scheduled lantern is not due yet.",  # 409
    "venue_not_found": "The venue does not exist.",  # 404
    "outside_geofence": "The caller is not within the venue's radius.",  # 403
    "lantern_id_taken": "This lantern id is already used by another lantern.",  # 409
    "lantern_already_active": "The user already has an active lantern.",  # 409
    "lantern_not_found": "The lantern does not exist.",  # 404
    "not_lantern_owner": "The lantern belongs to another user.",  # 403
    "lantern_not_active": "The lantern is no longer active.",  # 409
    "venue_exists": "A venue with this id already exists.",  # 409
    "unrecognized_record": "A stored lantern document is not of this contract; it was left untouched.",  # 500
    "lantern_unavailable": "The lantern service is unavailable; retry the whole call later with the same ids.",  # 503
}

ERROR_CODES = tuple(MESSAGES)
# What Python itself sets on any exception it raises, chains or reports (`add_note` included); nothing else may
# be set on an error once it exists.
_RUNTIME_ATTRIBUTES = frozenset({"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__"})


class LanternError(RuntimeError):
    """Raised by every lantern operation that does not return an output. Immutable: its code, message and
    arguments cannot be changed (or deleted) once it exists, so what a caller catches is what was raised."""

    def __init__(self, code: str) -> None:
        if code not in MESSAGES:
            raise ValueError("unknown lantern error code")
        if "code" in vars(self):  # __init__ called again on an existing error
            raise AttributeError("LanternError is immutable")
        super().__init__(MESSAGES[code])
        super().__setattr__("code", code)

    def __setattr__(self, name: str, value: object) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError("LanternError is immutable")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError("LanternError is immutable")
        super().__delattr__(name)

    def __repr__(self) -> str:
        return f"LanternError({self.code!r})"

    def __reduce__(self):  # errors cross process boundaries (xdist workers) by code alone
        return (LanternError, (self.code,))
