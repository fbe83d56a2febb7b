"""An in-memory fake of the small `google.cloud.firestore.Client` surface the reference journal uses.

Enough for `google.cloud.firestore.transactional` to drive it exactly as it drives a real client:

- `FakeFirestore.document(path)` gives a reference with `.path`;
- `FakeFirestore.transaction(max_attempts=..., read_only=...)` gives a `FakeTransaction` with the private
  members `_transactional` touches (`_clean_up`, `_begin`, `_commit`, `_rollback`, `_id`, `in_progress`,
  `_read_only`, `_max_attempts`) and the public `get_all`, `create` and `set`.

Semantics, chosen to be at least as strict as Firestore:

- writes are buffered in the transaction and applied atomically at commit (all or nothing);
- `create` fails the whole commit with `AlreadyExists` when the document exists at commit time;
- a read after a write in the same transaction, a write outside a transaction, or use of a finished
  transaction raises `FakeFirestoreMisuse` (an `AssertionError`, so the runner never maps it to a journal
  answer and the test fails loudly);
- optimistic concurrency: a commit whose read documents changed since they were read raises `Aborted`
  (a test can make "another client" write in between with the `before_commit` hook);
- `to_dict()` returns a deep copy, and stored values are deep copies of what was written, so a caller
  can neither see nor cause aliasing;
- aware datetimes come back as UTC `DatetimeWithNanoseconds`, the type the real client returns.

Test hooks: `abort_commits=N` (the next N commits raise `Aborted`, nothing applied), `abort_reads=N`
(the next N `get_all` calls raise `Aborted`), `fail_commit_with=exc` (every commit raises it while set;
with `apply_before_failing=True` the writes are applied first: a lost commit response),
`fail_reads_with=exc`, `before_commit=callable(fake)`. Evidence: `calls` (every transaction, read,
write, commit and rollback, in order), `update_count(path)` (committed writes to a document: the
update-time equivalent), `buffered_writes` (every create/set with its transaction id and data, committed
or not), `dump()` and `seed(path, data)`.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.api_core.datetime_helpers import DatetimeWithNanoseconds


class FakeFirestoreMisuse(AssertionError):
    """The code under test used the fake in a way real Firestore forbids or that the contract forbids."""


def _to_firestore_value(value: Any) -> Any:
    """What a real client would hand back for a stored value (aware datetimes as UTC DatetimeWithNanoseconds)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        moment = value.astimezone(UTC)
        return DatetimeWithNanoseconds(
            moment.year,
            moment.month,
            moment.day,
            moment.hour,
            moment.minute,
            moment.second,
            moment.microsecond,
            tzinfo=UTC,
        )
    if type(value) is dict:
        return {key: _to_firestore_value(item) for key, item in value.items()}
    if type(value) is list:
        return [_to_firestore_value(item) for item in value]
    return copy.deepcopy(value)


def _make_error(error: BaseException | type[BaseException], default_message: str) -> BaseException:
    if isinstance(error, type):
        return error(default_message)
    return error


class FakeDocumentReference:
    __slots__ = ("_client", "path")

    def __init__(self, client: FakeFirestore, path: str) -> None:
        segments = path.split("/")
        if len(segments) % 2 or not all(segments):
            raise FakeFirestoreMisuse(f"not a document path: {path!r}")
        self._client = client
        self.path = path

    @property
    def id(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeDocumentReference) and other._client is self._client and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"FakeDocumentReference({self.path!r})"


class FakeSnapshot:
    __slots__ = ("reference", "exists", "_data", "update_count")

    def __init__(self, reference: FakeDocumentReference, data: dict[str, Any] | None, update_count: int) -> None:
        self.reference = reference
        self.exists = data is not None
        self._data = data
        self.update_count = update_count

    @property
    def id(self) -> str:
        return self.reference.id

    def to_dict(self) -> dict[str, Any] | None:
        return None if self._data is None else _to_firestore_value(self._data)


class FakeTransaction:
    """Only what `firestore.transactional` and the reference use. Not thread-safe, like the fake itself."""

    def __init__(self, client: FakeFirestore, max_attempts: int, read_only: bool) -> None:
        self._client = client
        self._max_attempts = max_attempts
        self._read_only = read_only
        self._id: bytes | None = None
        self._writes: list[tuple[str, str, dict[str, Any]]] = []
        self._read_versions: dict[str, int] = {}

    # -- the private protocol of google.cloud.firestore_v1.transaction._Transactional --------------------
    @property
    def in_progress(self) -> bool:
        return self._id is not None

    @property
    def id(self) -> bytes | None:
        return self._id

    def _clean_up(self) -> None:
        self._writes = []
        self._read_versions = {}
        self._id = None

    def _begin(self, retry_id: bytes | None = None) -> None:
        if self.in_progress:
            raise ValueError("The transaction has already begun.")
        self._id = self._client._next_transaction_id()
        self._client._log("begin", self._id, retry_id)

    def _rollback(self) -> None:
        if not self.in_progress:
            raise ValueError("The transaction has no transaction ID, so it cannot be rolled back.")
        self._client._log("rollback", self._id)
        self._clean_up()

    def _commit(self) -> list[Any]:
        if not self.in_progress:
            raise ValueError("The transaction has no transaction ID, so it cannot be committed.")
        results = self._client._commit(self)  # raises before clean-up on failure, as the real client does
        self._clean_up()
        return results

    # -- public surface ---------------------------------------------------------------------------------------
    def get_all(self, references: Iterable[FakeDocumentReference], **_options: Any) -> Iterator[FakeSnapshot]:
        if not self.in_progress:
            raise FakeFirestoreMisuse("read outside a begun transaction")
        if self._writes:
            raise FakeFirestoreMisuse("read after a write in the same transaction")
        references = list(references)
        for reference in references:
            if not isinstance(reference, FakeDocumentReference) or reference._client is not self._client:
                raise FakeFirestoreMisuse(f"foreign reference {reference!r}")
        snapshots = self._client._read(self, references)
        return iter(snapshots)

    def get(self, reference: FakeDocumentReference, **options: Any) -> Iterator[FakeSnapshot]:
        return self.get_all([reference], **options)

    def create(self, reference: FakeDocumentReference, document_data: dict[str, Any]) -> None:
        self._write("create", reference, document_data)

    def set(self, reference: FakeDocumentReference, document_data: dict[str, Any], merge: bool = False) -> None:
        if merge:
            raise FakeFirestoreMisuse("merge writes are not part of this contract")
        self._write("set", reference, document_data)

    def update(self, reference: FakeDocumentReference, *_args: Any, **_kwargs: Any) -> None:
        raise FakeFirestoreMisuse(f"update of {reference.path!r}: the journal only creates and replaces")

    def delete(self, reference: FakeDocumentReference, *_args: Any, **_kwargs: Any) -> None:
        raise FakeFirestoreMisuse(f"delete of {reference.path!r}: nothing in the journal is ever deleted")

    def _write(self, kind: str, reference: FakeDocumentReference, document_data: dict[str, Any]) -> None:
        if not self.in_progress:
            raise FakeFirestoreMisuse("write outside a begun transaction")
        if self._read_only:
            raise ValueError("Cannot perform write operation in read-only transaction.")
        if type(document_data) is not dict:
            raise FakeFirestoreMisuse(f"document data must be a plain dict, got {type(document_data).__name__}")
        self._client._log(kind, reference.path)
        self._writes.append((kind, reference.path, copy.deepcopy(document_data)))
        self._client.buffered_writes.append((self._id, kind, reference.path, copy.deepcopy(document_data)))


class FakeFirestore:
    """In-memory documents plus the hooks and evidence described in the module docstring."""

    def __init__(
        self,
        *,
        abort_commits: int = 0,
        abort_reads: int = 0,
        fail_commit_with: BaseException | type[BaseException] | None = None,
        fail_reads_with: BaseException | type[BaseException] | None = None,
        apply_before_failing: bool = False,
        before_commit: Callable[[FakeFirestore], None] | None = None,
    ) -> None:
        self.abort_commits = abort_commits
        self.abort_reads = abort_reads
        self.fail_commit_with = fail_commit_with
        self.fail_reads_with = fail_reads_with
        self.apply_before_failing = apply_before_failing
        self.before_commit = before_commit
        self.calls: list[tuple[Any, ...]] = []
        self.buffered_writes: list[
            tuple[bytes | None, str, str, dict[str, Any]]
        ] = []  # (transaction, kind, path, data)
        self._documents: dict[str, dict[str, Any]] = {}
        self._versions: dict[str, int] = {}  # bumped by every change, seeds included (for conflict detection)
        self._update_counts: dict[str, int] = {}  # committed writes only
        self._transaction_ids = itertools.count(1)

    # -- client surface -----------------------------------------------------------------------------------
    def document(self, *path: str) -> FakeDocumentReference:
        return FakeDocumentReference(self, "/".join(path))

    def transaction(self, max_attempts: int = 5, read_only: bool = False) -> FakeTransaction:
        self._log("transaction", max_attempts, read_only)
        return FakeTransaction(self, max_attempts, read_only)

    # -- test helpers -------------------------------------------------------------------------------------
    def seed(self, path: str, data: dict[str, Any]) -> None:
        """Store a document directly (not logged, not counted as an update): the test's own fixture."""
        FakeDocumentReference(self, path)  # path check
        self._documents[path] = copy.deepcopy(data)
        self._versions[path] = self._versions.get(path, 0) + 1

    def remove(self, path: str) -> None:
        self._documents.pop(path, None)
        self._versions[path] = self._versions.get(path, 0) + 1

    def dump(self) -> dict[str, dict[str, Any]]:
        """Deep copy of every stored document, as stored."""
        return copy.deepcopy(self._documents)

    def get(self, path: str) -> dict[str, Any] | None:
        data = self._documents.get(path)
        return None if data is None else copy.deepcopy(data)

    def update_count(self, path: str) -> int:
        return self._update_counts.get(path, 0)

    def update_counts(self) -> dict[str, int]:
        return dict(self._update_counts)

    def calls_named(self, *names: str) -> list[tuple[Any, ...]]:
        return [call for call in self.calls if call[0] in names]

    @property
    def write_calls(self) -> list[tuple[Any, ...]]:
        """Every buffered create/set, whether or not its commit succeeded."""
        return self.calls_named("create", "set")

    @property
    def applied_writes(self) -> list[tuple[Any, ...]]:
        return self.calls_named("applied")

    # -- internals ----------------------------------------------------------------------------------------
    def _log(self, *call: Any) -> None:
        self.calls.append(call)

    def _next_transaction_id(self) -> bytes:
        return f"fake-transaction-{next(self._transaction_ids)}".encode()

    def _read(self, transaction: FakeTransaction, references: list[FakeDocumentReference]) -> list[FakeSnapshot]:
        self._log("get_all", tuple(reference.path for reference in references))
        if self.fail_reads_with is not None:
            raise _make_error(self.fail_reads_with, "fake read failure")
        if self.abort_reads > 0:
            self.abort_reads -= 1
            raise api_exceptions.Aborted("fake read aborted: lock timeout")
        snapshots = []
        for reference in references:
            transaction._read_versions.setdefault(reference.path, self._versions.get(reference.path, 0))
            data = self._documents.get(reference.path)
            snapshots.append(FakeSnapshot(reference, data, self._update_counts.get(reference.path, 0)))
        # Real batched reads answer in no promised order: answer in reverse so order dependence shows.
        return list(reversed(snapshots))

    def _commit(self, transaction: FakeTransaction) -> list[Any]:
        writes = transaction._writes
        self._log("commit", transaction._id, tuple((kind, path) for kind, path, _ in writes))
        if self.before_commit is not None:
            hook, self.before_commit = self.before_commit, None  # one-shot: it may itself commit
            hook(self)
        if self.abort_commits > 0 and not transaction._read_only:  # a read-only one holds no locks to lose
            self.abort_commits -= 1
            raise api_exceptions.Aborted("fake commit aborted: contention")
        changed = [
            path for path, version in transaction._read_versions.items() if self._versions.get(path, 0) != version
        ]
        if changed:
            raise api_exceptions.Aborted("fake commit aborted: a read document changed")
        if self.fail_commit_with is not None and not self.apply_before_failing:
            raise _make_error(self.fail_commit_with, "fake commit failure")
        for kind, path, _ in writes:
            if kind == "create" and path in self._documents:
                raise api_exceptions.AlreadyExists(f"Document already exists: {path}")
        for kind, path, data in writes:
            self._documents[path] = copy.deepcopy(data)
            self._versions[path] = self._versions.get(path, 0) + 1
            self._update_counts[path] = self._update_counts.get(path, 0) + 1
            self._log("applied", kind, path)
        if self.fail_commit_with is not None:
            raise _make_error(self.fail_commit_with, "fake commit failure after apply")
        return [path for _, path, _ in writes]
