"""The RPCs of ``google.firestore.v1.Firestore`` by name and cardinality: all the proxy knows of Firestore.

The proxy forwards messages as raw bytes, so a method's cardinality is the only thing it must know. A
method not listed here (a newer RPC, another service on the emulator's port) is forwarded as
stream-stream: on the wire a unary call is a stream of one message each way, so a bidirectional handler
carries any cardinality unchanged (only faults that need to know "the response" are refused for it).
"""

from __future__ import annotations

import enum

from fencecheck.errors import UsageError

SERVICE = "google.firestore.v1.Firestore"


class Cardinality(enum.Enum):
    UNARY_UNARY = "unary-unary"
    UNARY_STREAM = "unary-stream"
    STREAM_STREAM = "stream-stream"


_U, _S, _B = Cardinality.UNARY_UNARY, Cardinality.UNARY_STREAM, Cardinality.STREAM_STREAM
# As in google-cloud-firestore's own transport (firestore_v1/services/firestore/transports/grpc.py).
METHODS: dict[str, Cardinality] = {
    "GetDocument": _U, "ListDocuments": _U, "UpdateDocument": _U, "DeleteDocument": _U,
    "BatchGetDocuments": _S, "BeginTransaction": _U, "Commit": _U, "Rollback": _U, "RunQuery": _S,
    "ExecutePipeline": _S, "RunAggregationQuery": _S, "PartitionQuery": _U, "Write": _B, "Listen": _B,
    "ListCollectionIds": _U, "BatchWrite": _U, "CreateDocument": _U,
}


def full_name(method: str) -> str:
    """``/google.firestore.v1.Firestore/Commit`` for ``Commit`` or for the full name itself; a short name
    that is no Firestore RPC is a usage error (a typo in a fault plan would otherwise never fire)."""
    if method.startswith("/"):
        return method
    if method not in METHODS:
        raise UsageError(
            f"{method!r} is not an RPC of {SERVICE} (one of: {', '.join(sorted(METHODS))}); "
            "give a full '/package.Service/Method' name for any other method."
        )
    return f"/{SERVICE}/{method}"


def short_name(method: str) -> str:
    """``Commit`` for ``/google.firestore.v1.Firestore/Commit``; other services' methods keep their full name."""
    prefix = f"/{SERVICE}/"
    return method[len(prefix):] if method.startswith(prefix) else method


def cardinality(method: str) -> Cardinality:
    """The cardinality of a full method name; unknown methods are stream-stream (see the module docstring)."""
    return METHODS.get(short_name(method), _B) if method.startswith(f"/{SERVICE}/") else _B


def is_known(method: str) -> bool:
    return method.startswith(f"/{SERVICE}/") and short_name(method) in METHODS
