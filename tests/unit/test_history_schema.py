"""The history format's JSON Schema (fencecheck/schemas/history.schema.json, docs/history-format.md) against what
the harness writes: every checker fixture, `History.to_json` of every system's race scenarios and of a history
holding each of its operations, and broken histories that must fail naming the key. Each broken history is
refused by the reader too (`History.from_json`), so the schema says no more and no less than the reader there.

The schema defines the built-in systems' operations and header keys (`REGISTRY`, the systems of this package), so
the tests of those definitions are over the built-in systems; a system from outside keeps its operations to its own
codec, and every registered system's histories are validated against the schema in test_plugin_conformance.py."""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fencecheck.checker.history import NO_RETURN, Call, Definite, History, Indefinite, WireFault
from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin.records import NAME_PATTERN
from fencecheck.plugin.registry import REGISTRY, plugin
from fencecheck.runners.contest import Ids
from fencecheck.runners.contest_simulation import simulate_in_turn
from fencecheck.schemas import HISTORY_SCHEMA, history_problems, history_schema
from model import gateway as gw
from model import journal as jn
from model import lantern as ln
from tests.systems.gateway import builders as gb
from tests.systems.gateway import races as gateway_scenarios
from tests.systems.journal import races as scenarios
from tests.systems.lantern import races as lantern_scenarios

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "histories").glob("*.json"))
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)
COMMAND = jn.CommandRef.from_inputs(
    environment="test",
    caller_scope={"kind": "firebase_uid", "value": "uid-alice"},
    command_id="0f8fad5b-d9cb-469f-a165-70867728950e",
    command_type="create_checkout_session",
    endpoint_schema_version=1,
    payload={"raceId": "spring-10k", "quantity": 2},
)
LEASE = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def test_the_schema_is_a_valid_draft_2020_12_schema():
    schema = history_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)  # raises SchemaError naming the broken keyword


def test_the_schema_ships_as_package_data():
    """`pip install` (not only this checkout) must carry the schema: pyproject's package-data names it."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["fencecheck.schemas"]
    assert any(fnmatch(HISTORY_SCHEMA, pattern) for pattern in patterns), (
        f"pyproject.toml [tool.setuptools.package-data] \"fencecheck.schemas\" = {patterns} does not ship "
        f"{HISTORY_SCHEMA}: add a pattern that matches it")
    assert (ROOT / "fencecheck" / "schemas" / "__init__.py").is_file()  # a package, so find-packages takes it


BUILT_IN = tuple(REGISTRY)  # the systems whose operations the schema defines


def test_the_schema_defines_each_built_in_system_and_takes_any_registered_name():
    schema = history_schema()
    assert schema["properties"]["system"]["pattern"] == f"^{NAME_PATTERN.pattern}$", (
        "the schema's `system` must take every name a plug-in may have (fencecheck.plugin.records.NAME_PATTERN)")
    outside = [entry for entry in schema["allOf"] if entry.get("then") == {"additionalProperties": True}]
    assert len(outside) == 1 and outside[0]["if"]["properties"]["system"]["not"]["enum"] == list(BUILT_IN), (
        "the schema's rule for a system from outside must name exactly the built-in systems "
        "(fencecheck.plugin.registry.REGISTRY): add the new system's $defs/<system> (its op, partition and header) "
        "to fencecheck/schemas/history.schema.json and its name to that rule")
    for name in BUILT_IN:
        assert {"op", "partition"} <= set(schema["$defs"][name]["$defs"]), name


def test_a_system_from_outside_keeps_its_operations_and_header_keys_to_its_own_codec():
    data = {"format": "fencecheck.history/1", "system": "cas_register", "registers": {"r1": {"key": "x"}},
            "calls": [{"id": 1, "caller": "alice", "invokedAt": 0, "completedAt": 5,
                       "op": {"type": "write", "register": "r1", "value": 0},
                       "outcome": {"definite": {"outcome": "written"}}}],
            "finalDocuments": {"x": {}}}
    assert history_problems(data) == []
    assert history_problems({**data, "calls": [{**data["calls"][0], "note": "x"}]}) == [
        "$.calls[0]: Additional properties are not allowed ('note' was unexpected)"]  # the core keys stay checked


# --- what the harness writes validates ---------------------------------------------------------------------


def test_the_fixtures_are_found():
    assert len(FIXTURES) >= 10, f"expected the checker fixtures under tests/fixtures/histories, found {FIXTURES}"


@pytest.mark.parametrize("path", FIXTURES, ids=[path.stem for path in FIXTURES])
def test_every_history_fixture_validates(path):
    fixture = json.loads(path.read_text(encoding="utf-8"))
    assert history_problems(fixture["history"]) == []


def _race_histories(name: str) -> list[tuple[str, dict[str, Any]]]:
    """`History.to_json` of each race scenario of the system, run through its model one call at a time."""
    contests = {
        "journal": [(s.name, s.contest(Ids(7))) for s in scenarios.SCENARIOS],
        "lantern": [(s.name, s.contest()) for s in lantern_scenarios.SCENARIOS],
        "gateway": [(s.name, s.contest()) for s in gateway_scenarios.SCENARIOS],
    }[name]
    return [(scenario, simulate_in_turn(contest, plugin=plugin(name)).history.to_json())
            for scenario, contest in contests]


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_race_scenarios_history_validates(name):
    histories = _race_histories(name)
    assert len(histories) >= 5
    problems = {scenario: history_problems(data) for scenario, data in histories}
    assert {scenario: found for scenario, found in problems.items() if found} == {}


def _operations(name: str) -> list[Any]:
    """One of each operation the system's codec writes, the optional flags set on some."""
    if name == "journal":
        return [
            jn.Register(COMMAND, T0),
            jn.Acquire(COMMAND, LEASE, T0 + S, True),  # commit_fails
            jn.Complete(COMMAND, LEASE, 1, "a" * 64, T0 + 2 * S),
            jn.Fail(COMMAND, LEASE, 1, T0 + 3 * S, False, True),  # response_lost
            jn.InjectFault(COMMAND, jn.FaultKind.EXTRA_FIELD),
        ]
    if name == "lantern":
        return [
            ln.CreateVenue("bar", "Bar", 52.52, 13.405, 150),
            ln.Light("u1", "l1", "bar", 52.52, 13.405, now=T0, response_lost=True),
            ln.ScheduledLight("u2", "l2", "bar", T0, now=T0 + S),
            ln.Extinguish("u1", "l1", now=T0 + 2 * S),
            ln.ReadActive(now=T0 + 3 * S),
            ln.InjectFault(ln.FaultKind.STRANDED_GUARD, "u2", now=T0 + 4 * S),
            ln.InjectFault(ln.FaultKind.COUNTER_DRIFT, "bar"),
            ln.DeleteVenue("bar"),
        ]
    answer = gb.hosted(at=T0 + 2 * S)
    return [
        gb.begin(T0),
        gb.get(T0 + S),
        gb.claim(gb.A, T0 + S, commit_fails=True),
        gb.record(gb.A, 1, answer, T0 + 2 * S),
        gb.provider_intent(gb.A, T0 + 3 * S),
        gb.report(gb.A, 1, T0 + 4 * S),
        gb.reconcile(gb.B, T0 + 5 * S),
        gb.apply(gb.B, 2, gb.evidence(), T0 + 6 * S),
        gb.manual("COMMIT", T0 + 7 * S, ref=gb.X402),
        gb.close(T0 + 8 * S),
        gw.InjectFault(journal=gb.REF, kind=gw.FAULT_KINDS[0]),
    ]


def _every_operation(name: str) -> History:
    """A history of each operation in turn, with the model's answers and final documents, an unanswered call
    and both forms of wire fault. A fault is no call and has no answer: it is recorded as one never returned."""
    system = plugin(name)
    state = system.initial_state()
    calls = []
    for index, op in enumerate(_operations(name)):
        state, result = system.step(state, op)
        answer = result.output if result.ok else result.code
        if answer is None:
            calls.append(Call(index, f"caller-{index}", op, 10 * index, None, Indefinite(NO_RETURN)))
        else:
            calls.append(Call(index, f"caller-{index}", op, 10 * index, 10 * index + 5, Definite(answer)))
    calls[1] = Call(1, "caller-1", calls[1].op, 10, 15, Indefinite(system.unavailable_code), (
        WireFault("fail-response", "Commit", True, False), WireFault.from_label("delay BatchGetDocuments")))
    partitions = sorted({system.partition_of(op) for op in _operations(name)})
    return History(calls, {key: system.documents_of(state, key) for key in partitions}, system=name)


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_history_of_every_operation_validates(name):
    history = _every_operation(name)
    data = json.loads(history.dumps())
    assert History.from_json(data) == history  # the reader takes it back: the sample is a real history
    assert history_problems(data) == []
    written = {call["op"]["type"] for call in data["calls"]}
    listed = set(history_schema()["$defs"][name]["$defs"]["op"]["properties"]["type"]["enum"])
    assert written == listed, f"the {name}'s operations the schema lists ({sorted(listed)}) are not the ones its " \
        f"codec writes ({sorted(written)}): update $defs/{name} in fencecheck/schemas/history.schema.json"


def test_tagged_stored_values_validate():
    """Final documents' timestamps and maps whose keys start with `$` (fencecheck.checker.history_codec)."""
    documents = {"commands/x": {"at": T0, "odd": {"$kind": [1, {"at": T0}]}, "plain": {"n": None, "f": 1.5}}}
    history = History([], {COMMAND.key_hash: documents}, system="journal")
    assert history_problems(history.to_json()) == []


# --- what the format refuses, naming the key ---------------------------------------------------------------


def _journal() -> dict[str, Any]:
    return json.loads(_every_operation("journal").dumps())


def _gateway() -> dict[str, Any]:
    return json.loads(_every_operation("gateway").dumps())


def _lantern() -> dict[str, Any]:
    return json.loads(_every_operation("lantern").dumps())


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value
    return change


def _drop(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        for key in path[:-1]:
            data = data[key]
        del data[path[-1]]
    return change


# (id, history, change, what the problem must say)
BROKEN = [
    ("missing-calls", _journal, _drop(["calls"]), "$: 'calls' is a required property"),
    ("missing-format", _journal, _drop(["format"]), "$: 'format' is a required property"),
    ("missing-outcome", _journal, _drop(["calls", 0, "outcome"]), "$.calls[0]: 'outcome' is a required property"),
    ("missing-lease-id", _journal, _drop(["calls", 2, "op", "leaseId"]), "$.calls[2].op: 'leaseId' is a required"),
    ("missing-payload", _journal, _drop(["commands", "c1", "payload"]),
     "$.commands.c1: 'payload' is a required property"),
    ("missing-journal-field", _gateway, _drop(["journals", "j1", "consistency"]),
     "$.journals.j1: 'consistency' is a required property"),
    ("missing-evidence-field", _gateway, _drop(["calls", 7, "op", "evidence", "verdict"]),
     "$.calls[7].op.evidence: 'verdict' is a required property"),
    ("string-id", _journal, _set(["calls", 0, "id"], "0"), "$.calls[0].id: '0' is not of type 'integer'"),
    ("float-invoked-at", _journal, _set(["calls", 0, "invokedAt"], 1.5),
     "$.calls[0].invokedAt: 1.5 is not of type 'integer'"),
    ("string-caller", _lantern, _set(["calls", 0, "caller"], 7), "$.calls[0].caller: 7 is not of type 'string'"),
    ("numeric-answer", _journal, _set(["calls", 0, "outcome"], {"definite": 3}),
     "$.calls[0].outcome.definite: 3 is not of type 'object', 'string'"),
    ("string-fence", _journal, _set(["calls", 2, "op", "expectedFenceEpoch"], "1"),
     "$.calls[2].op.expectedFenceEpoch: '1' is not of type 'integer'"),
    ("numeric-forwarded", _journal, _set(["calls", 1, "wireFaults", 0, "forwarded"], 1),
     "$.calls[1].wireFaults[0].forwarded: 1 is not of type 'boolean'"),
    ("unknown-top-level-key", _journal, _set(["comment"], "x"), "('comment' was unexpected)"),
    ("another-systems-header", _lantern, _set(["commands"], {}), "('commands' was unexpected)"),
    ("unknown-call-key", _journal, _set(["calls", 0, "note"], "x"), "$.calls[0]: Additional properties are not "
     "allowed ('note' was unexpected)"),
    ("unknown-op-key", _gateway, _set(["calls", 0, "op", "lease_id"], gb.A), "$.calls[0].op: Additional "
     "properties are not allowed ('lease_id' was unexpected)"),
    ("another-systems-op", _lantern, _set(["calls", 0, "op"], {"type": "register", "command": "c1",
                                                              "now": "2026-03-01T12:00:00.000000+00:00"}),
     "$.calls[0].op.type: 'register' is not one of"),
    ("system-not-a-name", _journal, _set(["system"], "Ledger 2"), "$.system: 'Ledger 2' does not match"),
    ("older-format", _journal, _set(["format"], "fencecheck.history/0"), "$.format: 'fencecheck.history/1' was "
     "expected"),
    ("definite-without-completion", _journal, _set(["calls", 0, "completedAt"], None),
     "$.calls[0].outcome: 'indefinite' is a required property"),
    ("two-outcomes", _journal, _set(["calls", 0, "outcome", "indefinite"], "x"), "$.calls[0].outcome: "),
    ("empty-wire-faults", _journal, _set(["calls", 1, "wireFaults"], []), "$.calls[1].wireFaults: [] should be "
     "non-empty"),
    ("bad-fault-label", _journal, _set(["calls", 1, "wireFaults", 1], "delay"),
     "$.calls[1].wireFaults[1]: 'delay' does not match"),
    ("untagged-dollar-key", _journal, _set(["finalDocuments", COMMAND.key_hash, "x/y"], {"v": {"$odd": 1}}),
     f"$.finalDocuments['{COMMAND.key_hash}']['x/y'].v: '$odd' does not match"),
]


@pytest.mark.parametrize(("build", "change", "expected"), [case[1:] for case in BROKEN],
                         ids=[case[0] for case in BROKEN])
def test_a_broken_history_fails_naming_the_key(build, change, expected):
    data = build()
    assert history_problems(data) == []  # the change alone breaks it
    broken = copy.deepcopy(data)
    change(broken)
    problems = history_problems(broken)
    assert any(expected in problem for problem in problems), problems
    with pytest.raises((ValueError, TypeError, KeyError, SystemNotFoundError)):  # the reader refuses it too
        History.from_json(broken)


@pytest.mark.parametrize(("build", "change", "expected"), [
    # The writers write `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`; the reader also takes other ISO 8601 spellings.
    (_journal, _set(["calls", 0, "op", "now"], "2026-03-01T12:00:00Z"),
     "$.calls[0].op.now: '2026-03-01T12:00:00Z' does not match"),
    # The gateway's reader hands field values to the model's constructors, which do not check every type.
    (_gateway, _set(["calls", 3, "op", "expected_fence_epoch"], "1"),
     "$.calls[3].op.expected_fence_epoch: '1' is not of type 'integer'"),
], ids=["datetime-spelling", "gateway-field-type"])
def test_the_schema_holds_to_what_is_written_where_the_reader_is_lenient(build, change, expected):
    """Where the reader takes more than the writers write, the schema takes only what is written
    (docs/history-format.md, "The schema and the reader")."""
    data = build()
    change(data)
    History.from_json(data)  # the reader's leniency, documented
    problems = history_problems(data)
    assert len(problems) == 1 and problems[0].startswith(expected), problems
