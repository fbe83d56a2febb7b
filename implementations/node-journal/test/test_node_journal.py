"""The Node journal (implementations/node-journal) against the Python reference, through the process protocol.

Each test starts ``node implementations/node-journal/main.js`` on the session's emulator with a project of its
own, and runs the Python reference on another fresh project with the same inputs and the same trusted clock
readings. Every answer must be the same exactly (JSON text: key order and types included), and so must every
stored document, read back from both projects with the Python client.

Collected by ``./run tests``, which installs Node and runs ``npm ci --prefix implementations/node-journal``
first. Without node or node_modules it fails, never skips.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import reference
from fencecheck.checker.history_codec import datetime_to_json
from fencecheck.emulator.lifecycle import close_client
from fencecheck.protocol.process import Answer, ImplementationFailure, ImplementationProcess, ProtocolErrorAnswer
from tests.systems.journal.support import (
    FixedClock,
    assert_document,
    at,
    command_key_hash,
    outcome,
    reference_fingerprint,
    snapshot_documents,
    write_documents,
)

NODE_JOURNAL = Path(__file__).resolve().parents[1]
INSTALL_HINT = "run `npm ci --prefix implementations/node-journal` (Node 20 and npm needed)"

_REFERENCE = {
    "registerCommerceCommand": reference.register_commerce_command,
    "acquireCommerceCommandLease": reference.acquire_commerce_command_lease,
    "completeCommerceCommand": reference.complete_commerce_command,
    "failCommerceCommand": reference.fail_commerce_command,
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


@pytest.fixture
def node_command() -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"node is not on PATH: install Node 20, then {INSTALL_HINT}", pytrace=False)
    if not (NODE_JOURNAL / "node_modules" / "firebase-admin").is_dir():
        pytest.fail(f"implementations/node-journal/node_modules is missing: {INSTALL_HINT}", pytrace=False)
    return [node, str(NODE_JOURNAL / "main.js")]


@pytest.fixture
def node_project(emulator: Any, project_id: str) -> Iterator[str]:
    """A second fresh project beside ``project_id`` (which the reference uses)."""
    project = f"{project_id}-node"
    yield project
    emulator.reset(project)


@pytest.fixture
def node(node_command: list[str], emulator: Any, node_project: str) -> Iterator[ImplementationProcess]:
    process = ImplementationProcess(node_command, emulator_host=emulator.host, project_id=node_project)
    try:
        described = process.hello(system="journal", accepted=(1, 2))
        assert described == {
            "protocol": "fencecheck-implementation",
            "version": 1,
            "system": "journal",
            "implementation": "node-journal",
            "projectId": node_project,
        }
        yield process
    finally:
        process.close()


class Pair:
    """The same call, with the same clock reading, on the reference and on the Node implementation."""

    def __init__(self, reference_db: Any, node: ImplementationProcess) -> None:
        self.reference_db = reference_db
        self.node = node

    def reference(self, op: str, args: dict[str, Any], now: datetime) -> dict[str, Any] | str:
        kwargs = {_snake(name): json.loads(json.dumps(value)) for name, value in args.items()}
        return outcome(lambda: _REFERENCE[op](db=self.reference_db, clock=FixedClock(now), **kwargs))

    def both(self, op: str, args: dict[str, Any], now: datetime) -> dict[str, Any] | str:
        """Run on both; the answers must be equal as JSON text. Returns the answer."""
        node_answer = self.node.call(op, args, datetime_to_json(now)).outcome
        reference_answer = self.reference(op, args, now)
        assert json.dumps(node_answer) == json.dumps(reference_answer), (op, node_answer, reference_answer)
        return reference_answer

    def concurrently(self, calls: list[tuple[str, dict[str, Any], datetime]]) -> list[dict[str, Any] | str]:
        """All Node requests in flight at once (answers in any order), then the reference, one by one."""
        futures = [self.node.send({"op": op, "args": args, "now": datetime_to_json(now)}) for op, args, now in calls]
        node_answers = [self.node.result(future, 120.0).outcome for future in futures]
        reference_answers = [self.reference(*call) for call in calls]
        assert [json.dumps(a) for a in node_answers] == [json.dumps(a) for a in reference_answers]
        return reference_answers


def command(**changes: Any) -> dict[str, Any]:
    args = {
        "environment": "test",
        "callerScope": {"kind": "firebase_uid", "value": f"uid-{uuid.uuid4().hex[:12]}"},
        "commandId": str(uuid.uuid4()),
        "commandType": "create_checkout_session",
        "endpointSchemaVersion": 1,
        "payload": {"raceId": "spring-10k", "quantity": 2, "tier": "adult", "options": {"shirt": "m", "gift": False}},
    }
    return {**args, **changes}


def key_of(args: dict[str, Any]) -> str:
    scope = args["callerScope"]
    return command_key_hash(args["environment"], scope["kind"], scope["value"], args["commandId"])


def lease(args: dict[str, Any], lease_id: str, fence: int | None = None, fingerprint: str | None = None) -> dict:
    out = {**args, "leaseId": lease_id}
    if fence is not None:
        out["expectedFenceEpoch"] = fence
    if fingerprint is not None:
        out["terminalReferenceFingerprint"] = fingerprint
    return out


def assert_same_documents(reference_db: Any, node_db: Any, key: str) -> None:
    """Both projects hold the same documents for this command, field for field with exact types."""
    expected = snapshot_documents(reference_db, key)
    actual = snapshot_documents(node_db, key)
    assert sorted(actual) == sorted(expected)
    for path, (data, _update_time) in expected.items():
        assert_document(actual[path][0], data)  # fields are a protobuf map: no order to compare


@pytest.fixture
def node_db(emulator: Any, node_project: str) -> Iterator[Any]:
    client = emulator.client(node_project)
    yield client
    close_client(client)


def test_worked_sequence_matches_the_reference(firestore_db: Any, node_db: Any, node: ImplementationProcess) -> None:
    pair = Pair(firestore_db, node)
    c, d, e, f = command(), command(), command(), command()
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    fp, other_fp = reference_fingerprint("order-1"), reference_fingerprint("order-2")

    # four registrations in flight at once, answered in any order
    assert pair.concurrently([("registerCommerceCommand", x, at(0)) for x in (c, d, f)] + [
        ("acquireCommerceCommandLease", lease(e, a), at(0))
    ]) == [*[{"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}] * 3,
           "command_not_registered"]
    assert pair.both("registerCommerceCommand", c, at(1))["outcome"] == "registered_existing"
    assert pair.both("registerCommerceCommand", {**c, "payload": {"raceId": "other"}}, at(1)) == "command_conflict"
    assert pair.both("registerCommerceCommand", {**c, "endpointSchemaVersion": 2}, at(1)) == "command_conflict"

    # acquire, busy, same-holder retry, expiry equality, takeover with fence increment
    first = pair.both("acquireCommerceCommandLease", lease(c, a), at(1, 250))
    assert first["fenceEpoch"] == 1 and first["leaseExpiresAt"]["nanoseconds"] == 250_000
    assert pair.both("acquireCommerceCommandLease", lease(c, b), at(2))["outcome"] == "lease_busy"
    assert pair.both("acquireCommerceCommandLease", lease(c, a), at(3)) == first
    assert pair.both("completeCommerceCommand", lease(c, a, 1, fp), at(61, 250)) == "lease_rejected"
    taken = pair.both("acquireCommerceCommandLease", lease(c, b), at(61, 250))
    assert taken["fenceEpoch"] == 2
    assert pair.both("completeCommerceCommand", lease(c, a, 1, fp), at(62)) == "lease_rejected"  # stale fence
    assert pair.both("failCommerceCommand", lease(c, b, 1), at(62)) == "lease_rejected"  # stale fence, holder
    # an earlier clock than the lifecycle's update may observe, never decide
    assert pair.both("completeCommerceCommand", lease(c, b, 2, fp), at(61)) == "journal_unavailable"

    # complete, exact terminal retry (after expiry too), conflicts, terminal observation
    assert pair.both("completeCommerceCommand", lease(c, b, 2, fp), at(63))["outcome"] == "terminal_succeeded"
    assert pair.both("completeCommerceCommand", lease(c, b, 2, fp), at(500))["outcome"] == "terminal_succeeded"
    assert pair.both("completeCommerceCommand", lease(c, b, 2, other_fp), at(501)) == "terminal_conflict"
    assert pair.both("failCommerceCommand", lease(c, b, 2), at(502)) == "terminal_conflict"
    assert pair.both("acquireCommerceCommandLease", lease(c, a), at(503))["outcome"] == "terminal_succeeded"

    # fail, its terminal retry, and the read-only acquire before registration time
    assert pair.both("acquireCommerceCommandLease", lease(d, a), at(10))["fenceEpoch"] == 1
    assert pair.both("failCommerceCommand", lease(d, a, 1), at(11))["outcome"] == "terminal_failed_final"
    assert pair.both("failCommerceCommand", lease(d, a, 1), at(12))["outcome"] == "terminal_failed_final"
    assert pair.both("completeCommerceCommand", lease(d, a, 1, fp), at(13)) == "terminal_conflict"
    assert pair.both("acquireCommerceCommandLease", lease(f, a), at(-1)) == "journal_unavailable"
    assert pair.both("completeCommerceCommand", lease(f, a, 1, fp), at(5)) == "lease_rejected"

    for x in (c, d, e, f):
        assert_same_documents(firestore_db, node_db, key_of(x))


@pytest.mark.parametrize(
    "changes",
    [
        {"environment": "prod"},
        {"callerScope": {"kind": "firebase_uid"}},
        {"callerScope": {"kind": "firebase_uid", "value": "é" * 128}},  # 128 characters, 256 bytes: valid
        {"callerScope": {"kind": "firebase_uid", "value": "😀" * 129}},  # 129 code points, 258 UTF-16 units
        {"commandId": "0F8FAD5B-D9CB-469F-A165-70867728950E"},
        {"endpointSchemaVersion": True},
        {"endpointSchemaVersion": 1.0},
        {"payload": {"price": 1.5}},
        {"payload": {"count": 2**53}},
        {"payload": {"\ue000": 1, "\U0001f600": 2}},  # code-point key order differs from UTF-16 order
        {"payload": {"n": -(2**53 - 1), "s": "line\nbreak\u2028\x7f\"\\"}},
    ],
)
def test_inputs_are_judged_as_the_reference_judges_them(
    firestore_db: Any, node_db: Any, node: ImplementationProcess, changes: dict[str, Any]
) -> None:
    pair = Pair(firestore_db, node)
    args = command(**changes)
    answer = pair.both("registerCommerceCommand", args, at(0))
    if isinstance(answer, dict):
        assert_same_documents(firestore_db, node_db, key_of(args))
    assert pair.both("failCommerceCommand", lease(command(), str(uuid.uuid4()), True), at(1)) == (
        "invalid_command_input"
    )


MALFORMED = {
    "revision stored as a double": lambda key: {f"checkoutRequests/{key}": {"revision": 1.0}},
    "extra root field": lambda key: {f"checkoutRequests/{key}": {"note": "x"}},
    "root without its audit": lambda key: {f"auditEvents/commerce_command_{key}_0000000001": None},
    "preseeded next audit": lambda key: {f"auditEvents/commerce_command_{key}_0000000002": {"x": 1}},
}


@pytest.mark.parametrize("damage", sorted(MALFORMED))
def test_a_malformed_record_fails_closed_on_both(
    firestore_db: Any, node_db: Any, node: ImplementationProcess, damage: str
) -> None:
    pair = Pair(firestore_db, node)
    args = command()
    pair.both("registerCommerceCommand", args, at(0))
    key = key_of(args)
    for db in (firestore_db, node_db):
        for path, change in MALFORMED[damage](key).items():
            if change is None:
                db.document(path).delete()
                continue
            current = db.document(path).get()
            write_documents(db, {path: {**(current.to_dict() or {}), **change}})
    before = snapshot_documents(node_db, key)
    a = str(uuid.uuid4())
    assert pair.both("acquireCommerceCommandLease", lease(args, a), at(1)) == "unrecognized_record"
    assert pair.both("registerCommerceCommand", args, at(2)) == "unrecognized_record"
    assert pair.both("completeCommerceCommand", lease(args, a, 1, "a" * 64), at(3)) == "unrecognized_record"
    assert_same_documents(firestore_db, node_db, key)
    after = snapshot_documents(node_db, key)
    assert {p: u for p, (_, u) in after.items()} == {p: u for p, (_, u) in before.items()}, "nothing is repaired"


def test_malformed_requests_get_protocol_errors(node: ImplementationProcess) -> None:
    with pytest.raises(ProtocolErrorAnswer, match="exactly"):
        node.call("registerCommerceCommand", {"environment": "test"}, datetime_to_json(at(0)))
    with pytest.raises(ProtocolErrorAnswer, match="ISO 8601"):
        node.call("registerCommerceCommand", command(), "2026-01-01T00:00:00Z")
    with pytest.raises(ProtocolErrorAnswer, match="unknown op"):
        node.call("deleteEverything", {}, datetime_to_json(at(0)))
    # still serving afterwards
    assert node.call("registerCommerceCommand", command(), datetime_to_json(at(0))) == Answer(
        output={"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}
    )


def test_a_crash_is_reported_with_the_stderr_tail(node_command: list[str], emulator: Any, node_project: str) -> None:
    process = ImplementationProcess(node_command, emulator_host=emulator.host, project_id=node_project)
    try:
        process.hello(system="journal", accepted=(1, 2))
        # a request the process never answers: it is stopped, then killed
        os.kill(process.pid, signal.SIGSTOP)
        stuck = process.send({"op": "registerCommerceCommand", "args": command(), "now": datetime_to_json(at(0))})
        with pytest.raises(ImplementationFailure, match="hang"):
            process.result(stuck, timeout=1.0)  # a stopped process cannot answer: this wait always ends so
        os.kill(process.pid, signal.SIGKILL)
        with pytest.raises(ImplementationFailure, match=r"exited \(code -9\)"):
            process.result(stuck, timeout=60.0)
    finally:
        process.close()


def test_a_start_without_a_project_is_a_failure_not_a_verdict(node_command: list[str], emulator: Any) -> None:
    process = ImplementationProcess(node_command, emulator_host=emulator.host, project_id="")
    try:
        with pytest.raises(ImplementationFailure, match="FENCECHECK_PROJECT_ID") as caught:
            process.hello(system="journal", accepted=(1, 2))
        assert "exited (code 2)" in caught.value.what
    finally:
        process.close()


_VECTORS_SCRIPT = r"""
const identity = require('./identity');
const vectors = JSON.parse(require('node:fs').readFileSync(0, 'utf8')).vectors;
process.stdout.write(JSON.stringify(vectors.map(({ input }) => {
  const { kind, value } = input.callerScope;
  const key = identity.commandKeyHash(input.environment, kind, value, input.commandId);
  const canonical = identity.canonicalJson(input.payload);
  return {
    canonicalPayloadJson: canonical,
    commandKeyHash: key,
    payloadFingerprint: identity.payloadFingerprint(key, canonical),
    leaseOwnerFingerprint: identity.leaseOwnerFingerprint(key, input.leaseId),
    terminalCommitmentHash: identity.terminalCommitmentHash(key, input.terminalReferenceFingerprint),
    rootPath: identity.rootPath(key),
    lifecyclePath: identity.lifecyclePath(key),
    registrationAuditPath: identity.auditPath(key, 1),
    firstLeaseAuditPath: identity.auditPath(key, 2),
  };
})));
"""


def test_identity_reproduces_the_golden_vectors(node_command: list[str]) -> None:
    golden = json.loads((NODE_JOURNAL.parents[1] / "tests" / "vectors" / "identity-golden.json").read_text())
    computed = subprocess.run(
        [node_command[0], "-e", _VECTORS_SCRIPT],
        input=json.dumps(golden),
        capture_output=True,
        text=True,
        cwd=NODE_JOURNAL,
        check=True,
    )
    expected = [{name: value for name, value in vector.items() if name != "input"} for vector in golden["vectors"]]
    assert json.loads(computed.stdout) == expected


_FROZEN_SCRIPT = r"""
'use strict';
const { decide } = require('./decide');
const { CommerceCommandJournalError } = require('./errors');
const command = { commandKeyHash: 'a'.repeat(64), commandType: 't', endpointSchemaVersion: 1,
                  payloadFingerprint: 'b'.repeat(64), environment: 'test', callerScopeKind: 'firebase_uid' };
const registration = { commandType: 't', endpointSchemaVersion: 1, payloadFingerprint: 'b'.repeat(64), createdAt: 0 };
const deepFrozen = (v) =>
  v === null || typeof v !== 'object' || (Object.isFrozen(v) && Object.values(v).every(deepFrozen));
const lease = decide({ operation: 'acquire', command, now: 5, ownerFingerprint: 'c'.repeat(64) }, registration, null);
const error = new CommerceCommandJournalError('lease_rejected');
let refused = false;
try { error.code = 'x'; } catch { refused = true; }
process.stdout.write(JSON.stringify({
  output: deepFrozen(lease.output), outputKeys: Object.keys(lease.output), error: Object.isFrozen(error) && refused,
  errorKeys: Object.keys(error), message: error.message, hasCause: 'cause' in error,
}));
"""


def test_outputs_and_errors_are_frozen_and_fixed_shape(node_command: list[str]) -> None:
    ran = subprocess.run(
        [node_command[0], "-e", _FROZEN_SCRIPT], capture_output=True, text=True, cwd=NODE_JOURNAL, check=True
    )
    assert json.loads(ran.stdout) == {
        "output": True,
        "outputKeys": [
            "journalSchemaVersion",
            "lifecycleSchemaVersion",
            "outcome",
            "state",
            "fenceEpoch",
            "leaseExpiresAt",
        ],
        "error": True,
        "errorKeys": ["code"],
        "message": reference.CommandJournalError("lease_rejected").args[0],
        "hasCause": False,
    }


def test_an_eight_way_acquire_race_in_one_process_has_one_winner(
    firestore_db: Any, node_db: Any, node: ImplementationProcess
) -> None:
    """Eight requests in flight in one process contend on one lifecycle (the runner's rounds and looks): one
    lease at fence 1; every other caller is busy or, under contention, unavailable; and the stored documents
    are exactly those the reference writes for the winner alone."""
    pair = Pair(firestore_db, node)
    args = command()
    pair.both("registerCommerceCommand", args, at(0))
    leases = [str(uuid.uuid4()) for _ in range(8)]
    futures = [
        node.send({"op": "acquireCommerceCommandLease", "args": lease(args, x), "now": datetime_to_json(at(1))})
        for x in leases
    ]
    answers = [node.result(future, 300.0).outcome for future in futures]
    winners = [x for x, answer in zip(leases, answers, strict=True) if isinstance(answer, dict)
               and answer["outcome"] == "lease_acquired"]
    assert len(winners) == 1, answers
    others = [answer for answer in answers if not (isinstance(answer, dict) and answer["outcome"] == "lease_acquired")]
    assert all(a == "journal_unavailable" or a["outcome"] == "lease_busy" for a in others), others
    assert pair.reference("acquireCommerceCommandLease", lease(args, winners[0]), at(1))["fenceEpoch"] == 1
    assert_same_documents(firestore_db, node_db, key_of(args))


# The runner on a stand-in db whose transactions only say whether they are read-only: a read-write attempt that
# found unrecognized_record (its two batches served from two states: docs/journal-decisions.md, "Two-batch
# reads") is rolled back as contention, and the look at once, one snapshot, answers; a look that finds the same
# confirms it. The same rule as the Python runner (tests/systems/journal/test_journal_two_batch_reads.py).
_TWO_BATCH_SCRIPT = r"""
'use strict';
const { runTransaction } = require('./runner');
const { journalError } = require('./errors');
const kinds = [];
const db = { runTransaction: async (body, options) => {
  kinds.push(options && options.readOnly ? 'look' : 'read-write');
  return body(options);
} };
const unrecognized = async () => { throw journalError('unrecognized_record'); };
const outcome = async (look) => {
  kinds.length = 0;
  const log = { attempts: 0, aborts: 0, looks: 0 };
  let answer;
  try { answer = await runTransaction(db, unrecognized, look, log); } catch (error) { answer = error.code; }
  return { answer, log, kinds: [...kinds] };
};
(async () => {
  process.stdout.write(JSON.stringify({
    contention: await outcome(async () => 'lease_busy'),
    confirmed: await outcome(unrecognized),
  }));
})();
"""


def test_a_read_write_unrecognized_record_is_answered_only_when_a_look_confirms_it(node_command: list[str]) -> None:
    ran = subprocess.run(
        [node_command[0], "-e", _TWO_BATCH_SCRIPT], capture_output=True, text=True, cwd=NODE_JOURNAL, check=True,
        timeout=60,
    )
    one_look = {"attempts": 1, "aborts": 1, "looks": 1}
    assert json.loads(ran.stdout) == {
        "contention": {"answer": "lease_busy", "log": one_look, "kinds": ["read-write", "look"]},
        "confirmed": {"answer": "unrecognized_record", "log": one_look, "kinds": ["read-write", "look"]},
    }


def test_a_counterexample_with_a_commit_failure_replays_against_node_on_the_wire(firestore_db: Any,
                                                                                 node_command: list[str]) -> None:
    """Node refuses the client-side CommitFailureClient; a replay rejects the step's commits on a proxy of its
    own, as the machine did (a known-bad catch once failed its reproduction check for want of it)."""
    from fencecheck.plugin.registry import plugin
    from fencecheck.runners.lockstep import replay
    from model.journal import CommandRef, Register

    command = CommandRef("test", "firebase_uid", "uid-alice", str(uuid.UUID(int=7, version=4)),
                         "create_checkout_session", 1, "{}")
    node = plugin("journal").resolve("journal:exec:node implementations/node-journal/main.js")
    lockstep = replay(firestore_db, [Register(command, at(0), commit_fails=True), Register(command, at(1))],
                      system=node)
    assert [event.method for event in lockstep.wire.proxy.log.events()] == ["Commit"]
    assert lockstep.transitions["register.absent.new"] == 1
