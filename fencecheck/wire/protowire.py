"""Just enough of the protobuf wire format to roll back the transaction of a Commit the proxy rejected.

A Commit the proxy rejects never reaches the emulator, so its transaction would stay open there, holding
its locks (the emulator locks pessimistically) until it times out: every later transaction on those
documents would wait and abort. A real server ends a transaction whose commit it refuses; so the proxy
sends the emulator a Rollback for it. That needs two fields of two messages, read and written here from
their field numbers (google/firestore/v1/firestore.proto): no Firestore protos.
"""

from __future__ import annotations

from fencecheck.errors import UsageError

# CommitRequest: string database = 1; repeated Write writes = 2; bytes transaction = 3;
# RollbackRequest: string database = 1; bytes transaction = 2;
_COMMIT_DATABASE, _COMMIT_TRANSACTION = 1, 3
_ROLLBACK_DATABASE, _ROLLBACK_TRANSACTION = 1, 2
_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise UsageError("not a protobuf message: a varint runs past its end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def length_delimited_fields(message: bytes) -> dict[int, bytes]:
    """The last value of each length-delimited field by number (as protobuf merges a repeated scalar);
    other wire types are skipped."""
    fields: dict[int, bytes] = {}
    at = 0
    while at < len(message):
        key, at = _varint(message, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            _, at = _varint(message, at)
        elif wire_type == _FIXED64:
            at += 8
        elif wire_type == _FIXED32:
            at += 4
        elif wire_type == _LENGTH_DELIMITED:
            length, at = _varint(message, at)
            fields[number] = message[at:at + length]
            at += length
        else:
            raise UsageError(f"not a protobuf message: wire type {wire_type} is not supported here")
        if at > len(message):
            raise UsageError("not a protobuf message: a field runs past its end")
    return fields


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: bytes) -> bytes:
    return _varint_bytes(number << 3 | _LENGTH_DELIMITED) + _varint_bytes(len(value)) + value


def rollback_for_commit(commit_request: bytes) -> bytes | None:
    """The RollbackRequest that ends the transaction of ``commit_request``; None for a commit outside a
    transaction (a batched write), which holds no lock."""
    fields = length_delimited_fields(commit_request)
    transaction = fields.get(_COMMIT_TRANSACTION)
    if not transaction:
        return None
    database = fields.get(_COMMIT_DATABASE, b"")
    return _field(_ROLLBACK_DATABASE, database) + _field(_ROLLBACK_TRANSACTION, transaction)
