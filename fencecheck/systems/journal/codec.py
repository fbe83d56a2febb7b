"""The journal's operations as JSON (its plug-in's `ops_to_json` / `ops_from_json`), so histories can be
saved as fixtures.

Operations (`Register`, `Acquire`, `Complete`, `Fail`) use the contract's camelCase names::

    {"type": "acquire", "command": {...} | "c1", "leaseId": "...", "now": "2026-03-01T12:00:00.000000+00:00"}

`command` is either an inline command object (`environment`, `callerScope`, `commandId`, `commandType`,
`endpointSchemaVersion`, `payload` as a JSON value) or the name of one in a table the caller supplies (a
history stores each command once). Datetimes are `fencecheck.checker.history_codec`'s. `commitFails` appears only
when true. Parsing is strict: unknown or missing keys and wrong types raise `ValueError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fencecheck.checker.history_codec import datetime_from_json, datetime_to_json
from model.journal import Acquire, CommandRef, Complete, Fail, Register

OpJSON = dict[str, Any]
JournalOp = Register | Acquire | Complete | Fail
_OP_TYPES = {Register: "register", Acquire: "acquire", Complete: "complete", Fail: "fail"}
_OP_FIELDS = {
    "register": (),
    "acquire": ("leaseId",),
    "complete": ("leaseId", "expectedFenceEpoch", "terminalReferenceFingerprint"),
    "fail": ("leaseId", "expectedFenceEpoch"),
}
_COMMAND_FIELDS = ("environment", "callerScope", "commandId", "commandType", "endpointSchemaVersion", "payload")


# --- commands and operations -----------------------------------------------------------------------


def command_to_json(ref: CommandRef) -> dict[str, Any]:
    return {
        "environment": ref.environment,
        "callerScope": {"kind": ref.caller_scope_kind, "value": ref.caller_scope_value},
        "commandId": ref.command_id,
        "commandType": ref.command_type,
        "endpointSchemaVersion": ref.endpoint_schema_version,
        "payload": json.loads(ref.payload),
    }


def _require_keys(data: object, required: tuple[str, ...], optional: tuple[str, ...], what: str) -> dict:
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a JSON object")
    missing = [k for k in required if k not in data]
    extra = sorted(k for k in data if k not in required and k not in optional)
    if missing or extra:
        raise ValueError(f"{what}: missing keys {missing}, unknown keys {extra}")
    return data


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    return value


def _int(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{what} must be an integer")
    return value


def command_from_json(data: object) -> CommandRef:
    data = _require_keys(data, _COMMAND_FIELDS, (), "command")
    scope = _require_keys(data["callerScope"], ("kind", "value"), (), "callerScope")
    if not isinstance(data["payload"], dict):
        raise ValueError("payload must be a JSON object")
    return CommandRef.from_inputs(
        environment=_str(data["environment"], "environment"),
        caller_scope={
            "kind": _str(scope["kind"], "callerScope.kind"),
            "value": _str(scope["value"], "callerScope.value"),
        },
        command_id=_str(data["commandId"], "commandId"),
        command_type=_str(data["commandType"], "commandType"),
        endpoint_schema_version=_int(data["endpointSchemaVersion"], "endpointSchemaVersion"),
        payload=data["payload"],
    )


def op_to_json(op: JournalOp, *, command_names: Mapping[CommandRef, str] | None = None) -> OpJSON:
    """JSON form of a journal operation; with `command_names`, the command is written as its name."""
    kind = _OP_TYPES.get(type(op))
    if kind is None:
        raise TypeError(f"not a journal operation: {type(op).__name__}")
    out: OpJSON = {"type": kind}
    out["command"] = command_to_json(op.command) if command_names is None else command_names[op.command]
    if kind != "register":
        out["leaseId"] = op.lease_id
    if kind in ("complete", "fail"):
        out["expectedFenceEpoch"] = op.expected_fence_epoch
    if kind == "complete":
        out["terminalReferenceFingerprint"] = op.terminal_reference_fingerprint
    out["now"] = datetime_to_json(op.now)
    if op.commit_fails:
        out["commitFails"] = True
    if op.response_lost:
        out["responseLost"] = True
    return out


def op_from_json(data: object, *, commands: Mapping[str, CommandRef] | None = None) -> JournalOp:
    """Inverse of `op_to_json`; a command given by name is looked up in `commands`."""
    if not isinstance(data, dict):
        raise ValueError("an operation must be a JSON object")
    kind = data.get("type")
    if kind not in _OP_FIELDS:
        raise ValueError(f"unknown operation type {kind!r}")
    data = _require_keys(data, ("type", "command", *_OP_FIELDS[kind], "now"), ("commitFails", "responseLost"),
                         f"{kind} operation")
    raw_command = data["command"]
    if isinstance(raw_command, str):
        if commands is None or raw_command not in commands:
            raise ValueError(f"unknown command name {raw_command!r}")
        command = commands[raw_command]
    else:
        command = command_from_json(raw_command)
    now = datetime_from_json(data["now"])
    commit_fails = data.get("commitFails", False)
    lost = data.get("responseLost", False)
    if not isinstance(commit_fails, bool) or not isinstance(lost, bool):
        raise ValueError("commitFails and responseLost must be booleans")
    if kind == "register":
        return Register(command, now, commit_fails, lost)
    lease_id = _str(data["leaseId"], "leaseId")
    if kind == "acquire":
        return Acquire(command, lease_id, now, commit_fails, lost)
    fence = _int(data["expectedFenceEpoch"], "expectedFenceEpoch")
    if kind == "complete":
        fingerprint = _str(data["terminalReferenceFingerprint"], "terminalReferenceFingerprint")
        return Complete(command, lease_id, fence, fingerprint, now, commit_fails, lost)
    return Fail(command, lease_id, fence, now, commit_fails, lost)
