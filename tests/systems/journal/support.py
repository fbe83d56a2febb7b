"""Shared helpers for the command-journal emulator tests (seeds 000 and 001, SPEC.md).

Nothing here reads /work/shared or the wall clock. Identity digests are recomputed independently of
``reference/`` from SPEC.md's definition (length-framed, domain-separated SHA-256), so a test that asserts a
stored ``payloadFingerprint`` or ``leaseOwnerFingerprint`` does not trust the code under test to compute the
expected value; ``test_identity_helpers_match_golden_vectors`` pins these helpers to the golden vectors.

- ``Command``: valid inputs with a fresh uuid4 command id, the four operations bound to them, and the
  exact documents the seeds fix (root, revision-1 audit, lifecycle, transition audit).
- ``FixedClock``: a settable clock returning one aware UTC datetime.
- ``snapshot_documents``: {path: (to_dict(), update_time)} of every journal document of one command.
- ``race``: zero-arg callables run in threads released together by one ``threading.Barrier``.
- ``WriteRecordingClient``: a client proxy recording every commit that carries writes (read-only proof).
- ``CommitFailureClient``: a client whose transactions fail ON THE SERVER, atomically, at commit.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.field_path import FieldPath
from google.cloud.firestore_v1.transaction import Transaction

import reference
from reference import CommandJournalError

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LEASE = timedelta(seconds=60)
MICROSECOND = timedelta(microseconds=1)
UNAVAILABLE = "journal_unavailable"


def at(seconds: float = 0, microseconds: int = 0) -> datetime:
    """T0 plus an offset: every test time is explicit, nothing depends on the wall clock."""
    return T0 + timedelta(seconds=seconds, microseconds=microseconds)


# --- identity, recomputed from SPEC.md ------------------------------------------------------------


def _frame(text: str) -> bytes:
    data = text.encode("utf-8")
    return len(data).to_bytes(4, "big") + data


def digest(*fields: str) -> str:
    return hashlib.sha256(b"".join(_frame(value) for value in fields)).hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def command_key_hash(environment: str, kind: str, value: str, command_id: str) -> str:
    return digest("commerce-command-key", "1", environment, kind, value, command_id)


def payload_fingerprint(key_hash: str, payload: Mapping[str, Any]) -> str:
    return digest("commerce-command-payload", "1", key_hash, canonical_json(payload))


def lease_owner_fingerprint(key_hash: str, lease_id: str) -> str:
    return digest("commerce-command-lease-owner", "1", key_hash, lease_id)


def terminal_commitment_hash(key_hash: str, reference_fingerprint: str) -> str:
    return digest(
        "commerce-command-terminal-commitment", "1", key_hash, "business_record_digest", reference_fingerprint
    )


def root_path(key_hash: str) -> str:
    return f"checkoutRequests/{key_hash}"


def lifecycle_path(key_hash: str) -> str:
    return f"checkoutRequests/{key_hash}/lifecycle/current"


def audit_id_prefix(key_hash: str) -> str:
    return f"commerce_command_{key_hash}_"


def audit_path(key_hash: str, revision: int) -> str:
    return f"auditEvents/{audit_id_prefix(key_hash)}{revision:010d}"


def new_lease_id() -> str:
    return str(uuid.uuid4())


def reference_fingerprint(label: str) -> str:
    """A distinct, valid ``terminal_reference_fingerprint`` (lowercase SHA-256) per label."""
    return hashlib.sha256(f"synthetic-business-record:{label}".encode()).hexdigest()


# --- clock ------------------------------------------------------------------------------------------


class FixedClock:
    """A zero-argument clock returning one settable aware UTC datetime (microsecond precision)."""

    def __init__(self, moment: datetime = T0) -> None:
        self.set(moment)

    def set(self, moment: datetime) -> FixedClock:
        if not isinstance(moment, datetime) or moment.utcoffset() != timedelta(0):
            raise ValueError("FixedClock needs an aware UTC datetime")
        self._moment = moment
        return self

    def advance(self, delta: timedelta) -> FixedClock:
        return self.set(self._moment + delta)

    @property
    def now(self) -> datetime:
        return self._moment

    def __call__(self) -> datetime:
        return self._moment


def _clock(when: datetime | Callable[[], datetime]) -> Callable[[], datetime]:
    return when if callable(when) else FixedClock(when)


# --- commands -------------------------------------------------------------------------------------


def _default_payload() -> dict[str, Any]:
    return {"raceId": "spring-10k", "quantity": 2, "tier": "adult", "options": {"shirt": "m", "gift": False}}


@dataclass(frozen=True)
class Command:
    """Valid inputs for one command; the operations call the reference with explicit clocks."""

    command_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    environment: str = "test"
    caller_kind: str = "firebase_uid"
    caller_value: str = field(default_factory=lambda: f"uid-{uuid.uuid4().hex[:12]}")
    command_type: str = "create_checkout_session"
    endpoint_schema_version: int = 1
    payload: Mapping[str, Any] = field(default_factory=_default_payload)

    def but(self, **changes: Any) -> Command:
        """The same command key (unless changed) with other fields: a conflicting identity."""
        return replace(self, **changes)

    # identity
    @property
    def key_hash(self) -> str:
        return command_key_hash(self.environment, self.caller_kind, self.caller_value, self.command_id)

    @property
    def payload_fingerprint(self) -> str:
        return payload_fingerprint(self.key_hash, self.payload)

    def owner(self, lease_id: str) -> str:
        return lease_owner_fingerprint(self.key_hash, lease_id)

    def commitment(self, reference_fp: str) -> str:
        return terminal_commitment_hash(self.key_hash, reference_fp)

    @property
    def root_path(self) -> str:
        return root_path(self.key_hash)

    @property
    def lifecycle_path(self) -> str:
        return lifecycle_path(self.key_hash)

    def audit_path(self, revision: int) -> str:
        return audit_path(self.key_hash, revision)

    # inputs
    def inputs(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "caller_scope": {"kind": self.caller_kind, "value": self.caller_value},
            "command_id": self.command_id,
            "command_type": self.command_type,
            "endpoint_schema_version": self.endpoint_schema_version,
            "payload": json.loads(json.dumps(self.payload)),  # a fresh plain copy per call
        }

    # operations (return the output object; errors propagate)
    def register(self, db: Any, when: datetime | Callable[[], datetime]) -> Any:
        return reference.register_commerce_command(db=db, clock=_clock(when), **self.inputs())

    def acquire(self, db: Any, when: datetime | Callable[[], datetime], lease_id: str) -> Any:
        return reference.acquire_commerce_command_lease(db=db, clock=_clock(when), lease_id=lease_id, **self.inputs())

    def complete(
        self, db: Any, when: datetime | Callable[[], datetime], lease_id: str, fence: int, reference_fp: str
    ) -> Any:
        return reference.complete_commerce_command(
            db=db,
            clock=_clock(when),
            lease_id=lease_id,
            expected_fence_epoch=fence,
            terminal_reference_fingerprint=reference_fp,
            **self.inputs(),
        )

    def fail(self, db: Any, when: datetime | Callable[[], datetime], lease_id: str, fence: int) -> Any:
        return reference.fail_commerce_command(
            db=db, clock=_clock(when), lease_id=lease_id, expected_fence_epoch=fence, **self.inputs()
        )

    # exact stored documents (seed 001 root and audit, seed 000 lifecycle and transition audit)
    def expected_root(self, created: datetime) -> dict[str, Any]:
        return {
            "journalSchemaVersion": 1,
            "commandIdentityVersion": 1,
            "endpointSchemaVersion": self.endpoint_schema_version,
            "environment": self.environment,
            "callerScopeKind": self.caller_kind,
            "commandType": self.command_type,
            "payloadFingerprint": self.payload_fingerprint,
            "state": "registered",
            "revision": 1,
            "createdAt": created,
            "updatedAt": created,
        }

    def expected_registration_audit(self, created: datetime) -> dict[str, Any]:
        return {
            "auditSchemaVersion": 1,
            "aggregateType": "commerce_command",
            "commandKeyHash": self.key_hash,
            "commandRevision": 1,
            "eventType": "command_registered",
            "fromState": None,
            "toState": "registered",
            "environment": self.environment,
            "callerScopeKind": self.caller_kind,
            "commandType": self.command_type,
            "occurredAt": created,
        }

    def expected_lifecycle(
        self,
        *,
        state: str,
        revision: int,
        fence: int,
        lease_id: str,
        acquired: datetime,
        created: datetime,
        updated: datetime | None = None,
        reference_fp: str | None = None,
    ) -> dict[str, Any]:
        succeeded = state == "succeeded"
        return {
            "lifecycleSchemaVersion": 1,
            "commandKeyHash": self.key_hash,
            "state": state,
            "commandRevision": revision,
            "fenceEpoch": fence,
            "leaseOwnerFingerprint": self.owner(lease_id),
            "leaseAcquiredAt": acquired,
            "leaseExpiresAt": acquired + LEASE,
            "createdAt": created,
            "updatedAt": acquired if updated is None else updated,
            "terminalCommitmentKind": "business_record_digest" if succeeded else None,
            "terminalCommitmentHash": self.commitment(reference_fp) if succeeded and reference_fp else None,
        }

    def expected_transition_audit(
        self,
        *,
        revision: int,
        event_type: str,
        from_state: str,
        to_state: str,
        fence: int,
        expires: datetime,
        occurred: datetime,
    ) -> dict[str, Any]:
        return {
            "auditSchemaVersion": 2,
            "aggregateType": "commerce_command",
            "commandKeyHash": self.key_hash,
            "commandRevision": revision,
            "eventType": event_type,
            "fromState": from_state,
            "toState": to_state,
            "environment": self.environment,
            "callerScopeKind": self.caller_kind,
            "commandType": self.command_type,
            "fenceEpoch": fence,
            "leaseExpiresAt": expires,
            "occurredAt": occurred,
        }


def new_command(**overrides: Any) -> Command:
    """Valid inputs with a fresh uuid4 command id (and a fresh caller value) unless overridden."""
    return Command(**overrides)


def lease_json(fence: int, expires: datetime) -> dict[str, Any]:
    delta = expires - datetime(1970, 1, 1, tzinfo=UTC)
    return {
        "journalSchemaVersion": 1,
        "lifecycleSchemaVersion": 1,
        "outcome": "lease_acquired",
        "state": "leased",
        "fenceEpoch": fence,
        "leaseExpiresAt": {"seconds": delta.days * 86_400 + delta.seconds, "nanoseconds": delta.microseconds * 1000},
    }


def observation_json(outcome: str, state: str) -> dict[str, Any]:
    return {"journalSchemaVersion": 1, "lifecycleSchemaVersion": 1, "outcome": outcome, "state": state}


REGISTERED_NEW = {"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}
REGISTERED_EXISTING = {"journalSchemaVersion": 1, "outcome": "registered_existing", "state": "registered"}
LEASE_BUSY = observation_json("lease_busy", "leased")
TERMINAL_SUCCEEDED = observation_json("terminal_succeeded", "succeeded")
TERMINAL_FAILED_FINAL = observation_json("terminal_failed_final", "failed_final")


# --- outcomes -------------------------------------------------------------------------------------


def outcome(call: Callable[[], Any]) -> dict[str, Any] | str:
    """``.to_json()`` of the output, or the error code of a ``CommandJournalError``."""
    try:
        return call().to_json()
    except CommandJournalError as error:
        return error.code


def error_code(call: Callable[[], Any]) -> str:
    try:
        result = call()
    except CommandJournalError as error:
        return error.code
    raise AssertionError(f"expected a CommandJournalError, got {result.to_json()!r}")


def race(calls: Sequence[Callable[[], Any]], *, timeout: float = 120.0) -> list[dict[str, Any] | str]:
    """Run every call in its own thread, all released at once by one barrier; outcomes in call order.

    No sleeps: the barrier is the only synchronization. An exception other than ``CommandJournalError``
    is re-raised here (after every thread finished), so a harness bug never looks like an outcome.
    """
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    failures: list[BaseException | None] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=timeout)
            results[index] = outcome(call)
        except BaseException as error:  # reported below, in the test's thread
            failures[index] = error

    threads = [threading.Thread(target=run, args=(i, call), daemon=True) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if any(thread.is_alive() for thread in threads):
        raise AssertionError(f"race did not finish within {timeout} s")
    for error in failures:
        if error is not None:
            raise error
    return results


@dataclass
class Settled:
    """A race's raw outcomes and the outcomes after re-running each ``journal_unavailable`` call once.

    SPEC.md: under contention ``journal_unavailable`` is legal and the caller retries the whole call with
    the same ids; every operation is idempotent for an exact retry. ``settled`` holds what those retries
    answered (run one at a time, so without contention).
    """

    raw: list[dict[str, Any] | str]
    settled: list[dict[str, Any] | str]

    @property
    def unavailable(self) -> int:
        return sum(1 for item in self.raw if item == UNAVAILABLE)


def race_and_settle(calls: Sequence[Callable[[], Any]]) -> Settled:
    raw = race(calls)
    settled = [outcome(call) if item == UNAVAILABLE else item for call, item in zip(calls, raw, strict=True)]
    return Settled(raw, settled)


# --- stored documents -------------------------------------------------------------------------------

Snapshot = dict[str, tuple[dict[str, Any], datetime]]


def snapshot_documents(db: Any, key_hash: str) -> Snapshot:
    """{path: (to_dict(), update_time)} for the root, the lifecycle and every audit event of one command.

    Audits are found by a document-id range query on ``auditEvents`` (ids ``commerce_command_{h}_*``),
    so an unexpected extra revision shows up too.
    """
    found: Snapshot = {}
    for snapshot in db.get_all([db.document(root_path(key_hash)), db.document(lifecycle_path(key_hash))]):
        if snapshot.exists:
            found[snapshot.reference.path] = (snapshot.to_dict(), snapshot.update_time)
    audits = db.collection("auditEvents")
    prefix = audit_id_prefix(key_hash)
    query = audits.where(filter=FieldFilter(FieldPath.document_id(), ">=", audits.document(prefix))).where(
        filter=FieldFilter(FieldPath.document_id(), "<", audits.document(prefix[:-1] + chr(ord(prefix[-1]) + 1)))
    )
    for snapshot in query.stream():
        found[snapshot.reference.path] = (snapshot.to_dict(), snapshot.update_time)
    return found


def _typed(value: Any) -> Any:
    """A comparison key that tells bool from int and requires aware datetimes (dict == does neither)."""
    if isinstance(value, datetime):
        assert value.utcoffset() == timedelta(0), "stored timestamps must be aware UTC"
        return ("timestamp", value.astimezone(UTC).replace(tzinfo=UTC))
    if isinstance(value, Mapping):
        return ("map", {key: _typed(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return ("array", [_typed(item) for item in value])
    return (type(value).__name__, value)


def assert_document(actual: Mapping[str, Any] | None, expected: Mapping[str, Any]) -> None:
    """Field-by-field equality with exact types (int is never bool; timestamps aware UTC)."""
    assert actual is not None, "document is missing"
    extra, missing = set(actual) - set(expected), set(expected) - set(actual)
    assert not extra and not missing, f"fields differ: extra {extra}, missing {missing}"
    for name in expected:
        assert _typed(actual[name]) == _typed(expected[name]), f"field {name}: {actual[name]!r} != {expected[name]!r}"


def assert_unchanged(before: Snapshot, after: Snapshot) -> None:
    """The same documents with identical contents and identical update times: nothing was written."""
    appeared, vanished = set(after) - set(before), set(before) - set(after)
    assert not appeared and not vanished, f"documents appeared {appeared} / vanished {vanished}"
    for path, (data, update_time) in before.items():
        assert_document(after[path][0], data)
        assert after[path][1] == update_time, f"{path} was rewritten"


def write_documents(db: Any, docs: Mapping[str, Mapping[str, Any]]) -> None:
    """Seed synthetic records directly through the Admin path (one atomic batch)."""
    batch = db.batch()
    for path, data in docs.items():
        batch.set(db.document(path), dict(data))
    batch.commit()


# --- recording and failing commits ------------------------------------------------------------------

SENTINEL_PATH = "journalTestSentinels/commit-failure"


@dataclass(frozen=True)
class SentCommit:
    """One commit RPC that carried writes: the paths the reference wrote and the server's error, if any."""

    paths: tuple[str, ...]
    error: type[BaseException] | None

    @property
    def applied(self) -> bool:
        return self.error is None


class _ProxyTransaction(Transaction):
    """A real ``Transaction`` that reports each commit carrying writes to its ``WriteRecordingClient``
    and, for a ``CommitFailureClient``, makes that commit fail on the server as a whole: just before the
    real commit RPC one extra ``create`` of the (already existing) sentinel joins the pending writes.
    Firestore applies a transaction's writes atomically, so the emulator answers ``AlreadyExists`` and
    applies none of them."""

    def __init__(self, client: Any, recorder: WriteRecordingClient, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self._recorder = recorder

    def _commit(self) -> list:
        if not self._write_pbs:
            return super()._commit()  # a read-only decision: nothing to record or to make fail
        prefix = self._client._database_string + "/documents/"
        paths = tuple(write.update.name.removeprefix(prefix) for write in self._write_pbs)
        if self._recorder.fail_commits:
            sentinel = self._client.document(SENTINEL_PATH)._document_path
            self._write_pbs.extend(_helpers.pbs_for_create(sentinel, {"x": 1}))
        try:
            result = super()._commit()
        except Exception as error:
            self._recorder.commits.append(SentCommit(paths, type(error)))
            raise
        self._recorder.commits.append(SentCommit(paths, None))
        return result


class WriteRecordingClient:
    """A thin proxy around a real ``Client`` that records every transaction commit carrying writes.

    Why: the emulator (like Firestore) keeps ``update_time`` when a write leaves a document's contents
    unchanged, so "contents and update time identical" cannot tell a read-only call from one that
    rewrote the same bytes. Read-only paths must send no write at all: ``assert_no_writes``.
    """

    fail_commits = False

    def __init__(self, client: Any) -> None:
        self._client = client
        self.commits: list[SentCommit] = []

    def transaction(self, **kwargs: Any) -> Transaction:
        return _ProxyTransaction(self._client, self, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    @property
    def applied(self) -> list[SentCommit]:
        return [commit for commit in self.commits if commit.applied]

    def assert_no_writes(self) -> None:
        assert self.commits == [], f"a read-only call sent writes: {self.commits}"


class CommitFailureClient(WriteRecordingClient):
    """Every transaction with writes fails at commit, on the server, atomically (see ``_ProxyTransaction``)."""

    fail_commits = True

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        sentinel = client.document(SENTINEL_PATH)
        if not sentinel.get().exists:
            sentinel.set({"x": 0})

    def assert_rejected_once(self, expected_paths: Iterable[str]) -> None:
        """One commit was sent with exactly ``expected_paths`` as the reference's writes, and the server
        rejected it with AlreadyExists."""
        assert len(self.commits) == 1, self.commits
        (commit,) = self.commits
        assert sorted(commit.paths) == sorted(expected_paths)
        assert commit.error is not None and issubclass(commit.error, api_exceptions.AlreadyExists), commit.error


def golden_vectors(path: Any) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)["vectors"]
