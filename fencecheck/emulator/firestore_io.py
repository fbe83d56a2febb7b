"""Direct Firestore access for the harness, for any system: read back stored documents, and a client whose
transaction commits fail on the server.

- `read_project(db)`: every document of the project (every collection at every depth, so an orphan
  document under a missing parent is found too), with update times, in one kindless query. The
  commit-failure sentinel is left out.
- `read_paths(db, paths)`: the documents stored at exactly these paths, in one batched get (the lockstep's
  read-back after each step).
- `all_documents(db)`, `stored_of(snapshots)`, `prefix_end(prefix)`: the pieces a plug-in's own range reads are
  built from (the journal's command-key scope: fencecheck/systems/journal/store.py).
- `typed(value)`: a comparison form that keeps `True` apart from `1` and timestamps apart from strings.
- `CommitFailureClient(db)`: a proxy whose transactions are rejected, atomically, at commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from google.api_core import exceptions as api_exceptions
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.collection import CollectionReference
from google.cloud.firestore_v1.query import Query
from google.cloud.firestore_v1.transaction import Transaction

SENTINEL_COLLECTION = "fencecheckSentinels"
SENTINEL_PATH = f"{SENTINEL_COLLECTION}/commit-failure"
_ZERO = timedelta(0)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Stored(NamedTuple):
    """One stored document: its data and its update time as (seconds, nanoseconds)."""

    data: dict[str, Any]
    update_time: tuple[int, int]


def update_time_of(snapshot: Any) -> tuple[int, int]:
    """(seconds, nanoseconds): queries give a protobuf Timestamp, document reads a DatetimeWithNanoseconds."""
    stamp = snapshot.update_time
    if hasattr(stamp, "seconds"):
        return (stamp.seconds, stamp.nanos)
    delta = stamp - EPOCH
    return (delta.days * 86_400 + delta.seconds, getattr(stamp, "nanosecond", 0) or delta.microseconds * 1000)


def typed(value: Any) -> Any:
    """A hashable comparison key that tells bool from int and never equates a timestamp with anything else.

    Timestamps compare by UTC instant and nanoseconds; a naive or non-UTC datetime is its own kind.
    """
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, datetime):
        if value.utcoffset() != _ZERO:
            return ("datetime-not-utc", repr(value))
        # DatetimeWithNanoseconds as decoded by the client reports nanosecond 0 for sub-second microseconds.
        nanos = getattr(value, "nanosecond", 0) or value.microsecond * 1000
        return ("timestamp", value.astimezone(UTC).replace(microsecond=0, tzinfo=UTC).isoformat(), nanos)
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((str(k), typed(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("array", tuple(typed(item) for item in value))
    if value is None or isinstance(value, int | float | str | bytes):
        return (type(value).__name__, value)
    return (type(value).__name__, repr(value))


def all_documents(db: Any) -> Query:
    """A kindless query over the whole database: every document of every collection, at any depth (what
    `CollectionReference.recursive()` builds before it narrows the range to one collection)."""
    return Query(CollectionReference("", client=db), all_descendants=True, recursive=True)


def stored_of(snapshots: Iterable[Any]) -> dict[str, Stored]:
    return {snapshot.reference.path: Stored(snapshot.to_dict(), update_time_of(snapshot)) for snapshot in snapshots}


def read_project(db: Any) -> dict[str, Stored]:
    """Every document of the project by path (descendants included), except the commit-failure sentinel."""
    found = stored_of(all_documents(db).stream())
    return {path: item for path, item in found.items() if not path.startswith(SENTINEL_COLLECTION + "/")}


def prefix_end(prefix: str) -> str:
    """The least string above every string that starts with `prefix` (the end of a name-range query)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def read_paths(db: Any, paths: Iterable[str]) -> dict[str, Stored]:
    """The documents stored at `paths` (one batched get; absent ones left out)."""
    return stored_of(snapshot for snapshot in db.get_all([db.document(path) for path in paths]) if snapshot.exists)


# --- server-side commit failure --------------------------------------------------------------------


class CommitFailingTransaction(Transaction):
    """A real `Transaction` whose commit the server rejects as a whole.

    Before the commit RPC, a `create` of the (already existing) sentinel document joins the pending writes,
    also for a transaction without writes of its own (unless the proxy says read-only commits pass).
    Firestore applies a transaction's writes atomically, so the emulator answers `AlreadyExists` and
    applies none of them.
    """

    def __init__(self, client: Any, proxy: CommitFailureClient, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self._proxy = proxy

    def _commit(self) -> list:
        if not self._write_pbs and self._proxy.read_only_commits_pass:
            return super()._commit()
        prefix = self._client._database_string + "/documents/"
        pending = tuple(write.update.name.removeprefix(prefix) for write in self._write_pbs if write.update.name)
        sentinel = self._client.document(SENTINEL_PATH)._document_path
        self._write_pbs.extend(_helpers.pbs_for_create(sentinel, {"commitFailure": True}))
        try:
            result = super()._commit()
        except Exception as error:
            self._proxy.rejected.append((pending, type(error)))
            raise
        self._proxy.rejected.append((pending, None))
        return result


class CommitFailureClient:
    """A thin proxy around a real `Client`: every transaction fails at commit, on the server.

    `rejected` lists, per commit sent, the paths the caller meant to write and the error type (None when
    the commit unexpectedly succeeded). The model's `commit_fails=True` means every commit fails, read-only
    ones included (the default); `read_only_commits_pass=True` lets commits without writes through.
    """

    def __init__(self, client: Any, *, read_only_commits_pass: bool = False) -> None:
        self._client = client
        self.read_only_commits_pass = read_only_commits_pass
        self.rejected: list[tuple[tuple[str, ...], type[BaseException] | None]] = []
        ensure_sentinel(client)

    def transaction(self, **kwargs: Any) -> Transaction:
        return CommitFailingTransaction(self._client, self, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def assert_rejected_once(self, expected_paths: Iterable[str]) -> None:
        """Exactly one commit was sent, carrying `expected_paths` as the caller's writes, and the server
        rejected it with AlreadyExists."""
        assert len(self.rejected) == 1, self.rejected
        pending, error_type = self.rejected[0]
        assert sorted(pending) == sorted(expected_paths), (pending, expected_paths)
        assert error_type is not None and issubclass(error_type, api_exceptions.AlreadyExists), error_type


def ensure_sentinel(client: Any) -> None:
    sentinel = client.document(SENTINEL_PATH)
    if not sentinel.get().exists:
        sentinel.set({"commitFailure": True})


def replace_documents(db: Any, current: Mapping[str, Stored], docs: Mapping[str, Mapping[str, Any]]) -> None:
    """Make what `current` read exactly `docs`, in one batch: documents that changed or are new are set, the
    others of `current` deleted; nothing is committed when nothing differs (a plug-in's `write_partition`)."""
    batch = db.batch()
    changes = 0
    for path in current.keys() - docs.keys():
        batch.delete(db.document(path))
        changes += 1
    for path, doc in docs.items():
        if path not in current or typed(current[path].data) != typed(doc):
            batch.set(db.document(path), dict(doc))
            changes += 1
    if changes:
        batch.commit()


def write_partition(implementations: Any, db: Any, key: str, docs: Mapping[str, Mapping[str, Any]], *,
                    current: Mapping[str, Stored] | None = None) -> None:
    """Store exactly `docs` for one partition through a plug-in's Implementations record: its own
    `write_partition` when it has one, otherwise read what is there (`read_set`, or the whole project without
    one) unless `current` was read already, and replace it."""
    own = implementations.write_partition
    if own is not None:
        own(db, key, docs, current=current)
        return
    if current is None:
        read_set = implementations.read_set
        current = read_project(db) if read_set is None else read_paths(db, read_set(key, docs.keys()))
    replace_documents(db, current, docs)
