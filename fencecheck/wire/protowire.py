"""Just enough of the protobuf wire format to roll back the transaction of a Commit the proxy rejected, or
of a read whose answer it lost or cut after that read began a transaction.

A Commit the proxy rejects never reaches the emulator, so its transaction would stay open there, holding
its locks (the emulator locks pessimistically) until it times out: every later transaction on those
documents would wait and abort. A real server ends a transaction whose commit it refuses; so the proxy
sends the emulator a Rollback for it. That needs two fields of two messages, read and written here from
their field numbers (google/firestore/v1/firestore.proto): no Firestore protos.

A read that begins its transaction (the Node client's: its first BatchGetDocuments carries `new_transaction`,
no BeginTransaction) and whose answer the proxy loses or cuts leaves the same orphan: the client never
learned the transaction's id (or abandoned the attempt; the Node client sends no Rollback), and the emulator
held its locks until it timed out (measured: the next call on that document took 34 s, 10 aborted attempts).
A real server would expire it too, later; the proxy ends it so that a read fault costs the client its
call, not the emulator's lock timeout. The Python client begins with BeginTransaction, so its reads name an
existing transaction and nothing of theirs is rolled back.
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


# BatchGetDocumentsRequest: string database = 1; BatchGetDocumentsResponse: bytes transaction = 3.
# RunQueryRequest: string parent = 1 ("projects/P/databases/D/documents[/...]"); RunQueryResponse: bytes
# transaction = 2. A response carries the transaction only when its request began one (new_transaction).
_READS = {"BatchGetDocuments": 3, "RunQuery": 2}


def rollback_for_read(method: str, request: bytes, responses: list[bytes]) -> bytes | None:
    """The RollbackRequest that ends the transaction a faulted read began (``method`` a short name, the
    responses the emulator sent, relayed or not); None when the read began none (its request named an
    existing transaction, or none), so there is nothing the client could not end itself."""
    field = _READS.get(method)
    if field is None:
        return None
    transaction = next((t for r in responses if (t := length_delimited_fields(r).get(field))), None)
    if not transaction:
        return None
    database = length_delimited_fields(request).get(1, b"").split(b"/documents")[0]
    return _field(_ROLLBACK_DATABASE, database) + _field(_ROLLBACK_TRANSACTION, transaction)
