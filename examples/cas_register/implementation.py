"""A compare-and-set register on Firestore: each key is one document, `casRegisters/{key}` = `{"value": v}`.

The implementation the plug-in resolves by default (`cas_register:examples.cas_register.implementation` names it
explicitly). Each call is one Firestore transaction, so a compare-and-set reads and writes atomically; every
function takes keyword arguments only (`db=` a Firestore client, `attempt_log=` ignored: this example keeps no
per-attempt log) and answers the JSON the model predicts (`model.step`).
"""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

COLLECTION = "casRegisters"


def _ref(db: Any, key: str) -> Any:
    return db.collection(COLLECTION).document(key)


def _value(snapshot: Any) -> int | None:
    return snapshot.to_dict()["value"] if snapshot.exists else None


def read_register(*, db: Any, key: str, attempt_log: Any = None) -> dict[str, Any]:
    return {"outcome": "read", "value": _value(_ref(db, key).get())}


def write_register(*, db: Any, key: str, value: int, attempt_log: Any = None) -> dict[str, Any]:
    _ref(db, key).set({"value": value})
    return {"outcome": "written", "value": value}


def compare_and_set(*, db: Any, key: str, expected: int | None, new: int, attempt_log: Any = None) -> dict[str, Any]:
    ref = _ref(db, key)

    @firestore.transactional
    def attempt(transaction: Any) -> dict[str, Any]:
        current = _value(ref.get(transaction=transaction))
        if current != expected:
            return {"outcome": "mismatch", "value": current}
        transaction.set(ref, {"value": new})
        return {"outcome": "swapped", "value": new}

    return attempt(db.transaction())
