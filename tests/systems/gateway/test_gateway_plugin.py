"""The gateway plug-in (fencecheck/systems/gateway/plugin.py) keeps the interface's promises, without an emulator:
it loads by name, its operations (faults too) round-trip through a history's JSON, its calls name the
reference's parameters exactly, partitions are journals, transition coverage counts its table, and the
linearizability checker judges its histories with its model (ok, and illegal when a second worker is told it
won the consume election)."""

from __future__ import annotations

import inspect
from datetime import timedelta

import attrs
import pytest

import reference.gateway
from fencecheck.checker import coverage
from fencecheck.checker.history import Call, Definite, History, Indefinite, Planned, classifier, simulate
from fencecheck.checker.linearizability import check
from fencecheck.emulator.firestore_io import typed
from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin
from fencecheck.systems.gateway.plugin import GATEWAY, REFERENCE_GATEWAY, call_arguments, partition_of_path
from model.gateway import FAULT_KINDS, TRANSITIONS, InjectFault, documents, fault_applies, invariant_violations
from reference.gateway import GatewayError
from tests.systems.gateway.builders import (
    NAMESPACE,
    REF,
    T0,
    US,
    X402,
    A,
    B,
    apply,
    begin,
    claim,
    close,
    evidence,
    get,
    hosted,
    manual,
    provider_intent,
    reconcile,
    record,
    report,
)

S = timedelta(seconds=1)
EVERY_OP = [
    begin(T0),
    get(T0 + US, region="eu-west"),
    claim(A, T0 + S),
    record(A, 1, hosted(at=T0 + S), T0 + 2 * S, commit_fails=True),
    provider_intent(A, T0 + 3 * S),
    report(A, 2, T0 + 4 * S),
    reconcile(B, T0 + 5 * S, ref=X402),
    apply(A, 2, evidence("FAILED", receipt_digest=None), T0 + 6 * S),
    manual("RELEASE", T0 + 7 * S, fenced=False, claimed=True),
    close(T0 + 8 * S),
    InjectFault(journal=X402, kind="stray_next_event"),
]


def _run(ops):
    state = GATEWAY.initial_state()
    for op in ops:
        state, _result = GATEWAY.step(state, op)
    return state


def test_the_gateway_is_found_by_name():
    assert "gateway" in SYSTEM_NAMES and plugin("gateway") is GATEWAY
    assert GATEWAY.resolve("") is REFERENCE_GATEWAY and GATEWAY.resolve("reference.gateway") is REFERENCE_GATEWAY
    with pytest.raises(SystemNotFoundError, match="known_bad.gateway:<variant>"):
        GATEWAY.resolve("reference.lantern")


def test_every_operation_round_trips_through_a_history_json():
    header, entries = GATEWAY.ops_to_json(EVERY_OP)
    assert list(header) == ["journals"] and list(header["journals"]) == ["j1", "j2"]  # each journal once
    assert GATEWAY.ops_from_json(header, entries) == EVERY_OP
    calls = tuple(Call(i, f"w{i}", op, 10 * i, 10 * i + 5, Definite("gateway_unavailable"))
                  for i, op in enumerate(EVERY_OP[:3]))
    history = History(calls, {GATEWAY.partition_of(EVERY_OP[0]): documents(_run(EVERY_OP[:3]))}, system="gateway")
    again = History.loads(history.dumps())
    assert again == history and again.final_documents == history.final_documents
    with pytest.raises(ValueError, match="exactly the keys"):
        GATEWAY.ops_from_json(header, [{**entries[0], "lease_id": A}])
    with pytest.raises(ValueError, match="journals table"):
        GATEWAY.ops_from_json(header, [{**entries[0], "journal": "j9"}])


def test_each_call_names_exactly_the_reference_functions_parameters():
    for op in EVERY_OP[:-1]:
        function, kwargs = call_arguments(op)
        parameters = set(inspect.signature(getattr(reference.gateway, function)).parameters)
        assert parameters == {*kwargs, "db", "clock", "attempt_log"}, function
        assert kwargs["request"] == {"amount": 1200, "currency": "usd"}  # parsed, as a caller sends it
    _function, kwargs = call_arguments(EVERY_OP[3])
    assert kwargs["answer"] == attrs.asdict(EVERY_OP[3].answer)
    with pytest.raises(TypeError, match="not a gateway call"):
        call_arguments(EVERY_OP[-1])


def test_errors_are_told_apart_and_unavailable_is_indefinite():
    classify = classifier(GATEWAY, REFERENCE_GATEWAY)
    assert classify(GatewayError("gateway_unavailable")) == Indefinite("gateway_unavailable")
    assert classify(GatewayError("lease_rejected")) == Definite("lease_rejected")

    class Foreign(Exception):
        code = "release_refused"

    assert GATEWAY.error_code(REFERENCE_GATEWAY, Foreign()) == "release_refused"
    assert GATEWAY.error_code(REFERENCE_GATEWAY, ValueError("boom")) is None


def test_partitions_are_journals():
    state = _run([begin(T0), begin(T0, ref=X402), claim(A, T0 + S)])
    stripe, x402 = GATEWAY.partition_of(begin(T0)), GATEWAY.partition_of(begin(T0, ref=X402))
    assert sorted(GATEWAY.partitions_of_state(state)) == sorted([stripe, x402])
    docs = documents(state)
    assert {partition_of_path(path) for path in docs} == {stripe, x402}
    assert partition_of_path("gatewayNamespaces/gw-prod") is None and partition_of_path("venues/bar") is None
    alone = GATEWAY.restrict(state, stripe)
    assert GATEWAY.documents_of(alone, stripe) == GATEWAY.documents_of(state, stripe)
    assert GATEWAY.documents_of(alone, x402) == {}
    assert GATEWAY.merge(GATEWAY.restrict(state, x402), alone, stripe) == state
    read = GATEWAY.read_set(stripe, GATEWAY.documents_of(state, stripe))
    assert read[-1].endswith("/events/0000000003")  # one past the highest event: a second write lands there


def test_faults_damage_one_journal_and_break_an_invariant():
    stored = _run([begin(T0), claim(A, T0 + S)])
    for kind in FAULT_KINDS:
        fault = InjectFault(journal=REF, kind=kind)
        assert fault_applies(stored, fault)
        damaged, result = GATEWAY.step(stored, fault)
        assert result.transition == "fault.injected" and result.wrote and GATEWAY.is_fault(fault)
        assert GATEWAY.clock_of(fault) is None
        assert GATEWAY.clock_of(get(T0, ref=attrs.evolve(REF, consistency="PER_REGION"))) is None  # refused first
        assert GATEWAY.clock_of(get(T0)) == T0
        assert typed(documents(damaged)) != typed(documents(stored))  # 1.0 == 1 in Python, not here
        assert invariant_violations(documents(damaged), namespace_id=NAMESPACE), kind
        assert GATEWAY.step(damaged, get(T0 + 2 * S))[1].code == "unrecognized_record"
        assert GATEWAY.step(damaged, fault)[1].transition == "fault.not_applicable"
    begun = _run([begin(T0)])
    assert not fault_applies(begun, InjectFault(journal=REF, kind="lease_stretched"))  # no lease to stretch


def test_coverage_counts_the_gateway_table(tmp_path):
    counts = {"begin.new": 2, "claim.first": 1}
    path = coverage.write(tmp_path, "gw0", counts, "gateway")
    assert path.name == "gateway-transitions-gw0.json"
    merged = coverage.merge([path, path], "gateway")
    assert list(merged) == [row.id for row in TRANSITIONS] and merged["begin.new"] == 4
    missing = coverage.unexercised(merged, "gateway")
    assert "begin.new" not in missing and "claim.recovery" in missing
    assert "any.corrupt" not in missing and "fault.injected" not in missing  # only injection reaches them
    with pytest.raises(ValueError, match="gateway model's table"):
        coverage.normalized({"register.absent.new": 1}, "gateway")


def test_the_checker_judges_a_consume_election_with_the_gateway_model():
    started = begin(T0)
    first, second = claim(A, T0 + S), claim(B, T0 + S)
    history, _state = simulate(
        [Planned("a", started, 0, 10, 5), Planned("b", first, 20, 40, 30), Planned("c", second, 21, 41, 35)],
        plugin=GATEWAY,
    )
    assert check(history, plugin=GATEWAY).ok
    won = history.by_id(1).outcome.observed
    assert won["outcome"] == "consume_claimed"
    assert history.by_id(2).outcome.observed["outcome"] == "pending"
    # Both workers told they own the consume call (the split-brain answer): no order explains it.
    broken = History((history.calls[0], history.calls[1], attrs.evolve(history.calls[2], outcome=Definite(won))),
                     history.final_documents, system="gateway")
    verdict = check(broken, plugin=GATEWAY)
    assert verdict.status == "illegal"
    assert "journal" in verdict.explain() and "is not linearizable" in verdict.explain()
    # The stored documents are compared too: a second consume event that the answers do not explain.
    stray = {key: {**docs, "gatewayNamespaces/x": {}} for key, docs in history.final_documents.items()}
    assert check(history.with_final_documents(stray), plugin=GATEWAY).status == "illegal"


def test_a_gateway_counterexample_file_loads_and_holds_the_program(tmp_path):
    import importlib.util

    from fencecheck.runners.counterexamples import write_counterexample

    path = write_counterexample(tmp_path, EVERY_OP, machine="GatewayMachine", plugin=GATEWAY,
                                system_module="known_bad.gateway:release_at_the_deadline")
    spec = importlib.util.spec_from_file_location("gateway_counterexample", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # NameError without GATEWAY.model_imports: JournalRef, HostedAnswer, Evidence
    assert module.OPS == EVERY_OP
    assert module.SYSTEM.name == "known_bad.gateway:release_at_the_deadline"


def test_every_journey_is_a_rule_of_its_own_and_checked_for_its_rows():
    from tests.systems.gateway import machine as gateway_machine
    from tests.systems.gateway.machine_journeys import JOURNEYS

    for journey in gateway_machine.JOURNEYS:
        assert getattr(gateway_machine.GatewayMachine, f"journey_{journey}").__name__ == f"journey_{journey}"
    journeys = {journey for draws, _rows in JOURNEYS for journey in draws[:1]}
    assert journeys == set(gateway_machine.JOURNEYS)  # each journey's rows are checked (machine_journeys.py)
