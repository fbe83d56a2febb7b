"""`journal:exec:<command>`: the journal plug-in over the process protocol, against a fake implementation in Python.

No Node and no emulator: the fake records every request it gets (as JSON lines in a file) and answers from a
small script, so what the harness sends and how it classes each answer are pinned where CI runs. The Node
journal itself is checked through the same path in implementations/node-journal/test.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fencecheck.emulator.firestore_io import CommitFailureClient
from fencecheck.errors import UsageError
from fencecheck.plugin.registry import plugin
from fencecheck.plugin.specs import resolve_implementation, system_of_spec
from fencecheck.protocol import process as implementation_process
from fencecheck.protocol.process import ImplementationFailure, ImplementationPool, parse_command
from fencecheck.systems.journal.exec import (
    ExecContractError,
    ExecFaultUnsupported,
    exec_journal,
    is_exec_spec,
    pool_of,
)
from model.journal import Acquire, CommandRef, Register

NOW = datetime(2026, 1, 1, 0, 1, 0, 250, tzinfo=UTC)
COMMAND = CommandRef.from_inputs(
    environment="test",
    caller_scope={"kind": "firebase_uid", "value": "uid-1"},
    command_id="00000001-c0de-4000-8000-000000000000",
    command_type="create_checkout_session",
    endpoint_schema_version=1,
    payload={"raceId": "spring-10k"},
)

# Answers hello, then per request: an output echoing the op, or what the request's commandId asks for.
FAKE = """
import json, os, sys
log = open(sys.argv[1], "a")
def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    log.write(json.dumps({**request, "project": os.environ["FENCECHECK_PROJECT_ID"],
                          "host": os.environ["FIRESTORE_EMULATOR_HOST"]}) + "\\n"); log.flush()
    if request["op"] == "hello":
        answer({"id": request["id"], "output": {"protocol": "fencecheck-implementation", "version": 1,
                "system": "journal", "implementation": "fake", "projectId": os.environ["FENCECHECK_PROJECT_ID"]}})
    elif request["args"]["commandId"].startswith("busy"):
        answer({"id": request["id"], "error": {"code": "lease_busy"}})
    elif request["args"]["commandId"].startswith("bug"):
        answer({"id": request["id"], "implementationError": "TypeError"})
    else:
        answer({"id": request["id"], "output": {"op": request["op"], "fenceEpoch": 1}})
"""


class FakeClient:
    """What the adapter reads of a Firestore client: its emulator host and project."""

    def __init__(self, project: str, host: str = "127.0.0.1:8080") -> None:
        self.project = project
        self._emulator_host = host


class FixedClock:
    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> datetime:
        self.reads += 1
        return NOW


@pytest.fixture
def fake(tmp_path: Path):
    script = tmp_path / "fake.py"
    script.write_text(textwrap.dedent(FAKE))
    log = tmp_path / "requests.jsonl"
    spec = f"journal:exec:{shlex.join([sys.executable, str(script), str(log)])}"
    _forget()
    system = exec_journal(spec)
    yield spec, system, log
    for pool in list(implementation_process._OPEN_POOLS):
        pool.close()
    _forget()


def _forget() -> None:
    exec_journal.cache_clear()
    pool_of.cache_clear()


def requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_call_sends_the_seeds_arguments_and_the_one_clock_reading(fake):
    spec, system, log = fake
    clock = FixedClock()
    op = Acquire(COMMAND, "lease-1", NOW)
    answer = plugin("journal").answer(system, FakeClient("demo-a"), op, clock)
    assert answer == {"op": "acquireCommerceCommandLease", "fenceEpoch": 1}
    assert clock.reads == 1
    hello, sent = requests(log)
    assert hello["op"] == "hello" and hello["versions"] == [1, 2] and hello["system"] == "journal"
    assert sent["op"] == "acquireCommerceCommandLease"
    assert sent["now"] == "2026-01-01T00:01:00.000250+00:00"
    assert list(sent["args"]) == ["environment", "callerScope", "commandId", "commandType", "endpointSchemaVersion",
                                  "payload", "leaseId"]
    assert sent["args"]["callerScope"] == {"kind": "firebase_uid", "value": "uid-1"}
    assert sent["args"]["leaseId"] == "lease-1"
    assert (sent["project"], sent["host"]) == ("demo-a", "127.0.0.1:8080")
    assert system.module == spec  # a counterexample names the same implementation


def test_an_error_answer_is_the_contract_error_and_an_implementation_error_is_not(fake):
    _spec, system, _log = fake
    journal = plugin("journal")
    busy = Register(CommandRef.from_inputs(**{**COMMAND.kwargs(), "command_id": "busy-1"}), NOW)
    assert journal.answer(system, FakeClient("demo-a"), busy, FixedClock()) == "lease_busy"
    with pytest.raises(ExecContractError) as raised:
        journal.invoke(system, FakeClient("demo-a"), busy, FixedClock())
    with pytest.raises(AttributeError):
        raised.value.code = "other"  # immutable, like every contract error
    bug = Register(CommandRef.from_inputs(**{**COMMAND.kwargs(), "command_id": "bug-1"}), NOW)
    with pytest.raises(ImplementationFailure, match="implementationError TypeError") as failed:
        journal.answer(system, FakeClient("demo-a"), bug, FixedClock())
    assert journal.error_code(system, failed.value) is None  # never a contract verdict


def test_one_process_per_project_and_the_least_recently_used_is_ended(fake, monkeypatch):
    _spec, system, log = fake
    monkeypatch.setattr(implementation_process, "MAX_PROCESSES", 2)
    op = Register(COMMAND, NOW)
    for project in ("demo-a", "demo-a", "demo-b", "demo-c"):
        plugin("journal").invoke(system, FakeClient(project), op, FixedClock())
    hellos = [r["project"] for r in requests(log) if r["op"] == "hello"]
    assert hellos == ["demo-a", "demo-b", "demo-c"]  # demo-a's process served both of its calls
    (pool,) = list(implementation_process._OPEN_POOLS)
    assert pool.running() == 2  # demo-a's was ended when demo-c's started
    pool.close()
    assert pool.running() == 0


def test_a_client_wrapping_fault_is_refused_not_judged(fake, monkeypatch):
    _spec, system, _log = fake
    monkeypatch.setattr("fencecheck.emulator.firestore_io.ensure_sentinel", lambda _client: None)
    wrapped = CommitFailureClient(FakeClient("demo-a"))
    with pytest.raises(ExecFaultUnsupported, match="wire proxy") as refused:
        plugin("journal").invoke(system, wrapped, Register(COMMAND, NOW), FixedClock())
    assert plugin("journal").error_code(system, refused.value) is None


def test_specs_name_the_journal_and_resolve_once():
    spec = "journal:exec:node implementations/node-journal/main.js"
    assert is_exec_spec(spec) and is_exec_spec("exec:node main.js") and not is_exec_spec("reference")
    assert system_of_spec(spec) == "journal"
    _forget()
    try:
        assert resolve_implementation(spec) is resolve_implementation(spec)  # one pool of processes per spec
    finally:
        _forget()


def test_a_missing_command_is_a_usage_error_naming_it(tmp_path):
    with pytest.raises(UsageError, match="exec:"):
        parse_command("   ")
    pool = ImplementationPool([str(tmp_path / "no-such-implementation")], system="journal")
    try:
        with pytest.raises(UsageError, match="cannot start the implementation command"):
            pool.process_for("127.0.0.1:1", "demo-a")
    finally:
        pool.close()
