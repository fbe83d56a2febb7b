"""Every registered plug-in keeps the promises of the interface (fencecheck.plugin.SystemPlugin) that can be checked
without an emulator. Parametrized over the registry (ids: the system names), so a new system is checked the day
it is registered, with no line here to add.

Sample operations are drawn from the plug-in's own parallel programs (its `parallel` strategy: prefix and branch
calls, stepped one after another from the initial state), so they are the operations the suites really run; a
system without parallel programs fails here (and in parallel_tests/test_parallel_suite_parts.py).
"""

from __future__ import annotations

import copy
import inspect
import json
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.checker.history import NO_RETURN, Call, Definite, History, Indefinite
from fencecheck.parallel import programs
from fencecheck.plugin.records import SystemPlugin, accepts_attempt_log, load_part
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin
from fencecheck.plugin.specs import system_of_spec
from fencecheck.schemas import history_problems
from stateful_tests.known_bad_support import MachineCatalogue
from stateful_tests.machine_runner import BoundToEmulator

SYSTEMS = pytest.mark.parametrize("name", SYSTEM_NAMES)
# Small programs, few examples: each example steps a handful of operations through the pure model.
SAMPLES = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _sample_ops(system: SystemPlugin) -> st.SearchStrategy[list]:
    """Operation sequences of `system`: a parallel program's prefix and then its branches' calls, in order."""
    if system.parallel is None:
        pytest.fail(f"{system.name} has no parallel programs to draw sample operations from: "
                    + suite_parts.missing_part_message(system.name, "parallel"), pytrace=False)
    drawn = programs(system, max_prefix_ops=3, max_branches=2, max_concurrent_ops=3)
    return drawn.map(lambda program: [*program.prefix, *(call.op for branch in program.branches for call in branch)])


def _result_key(result) -> tuple:
    return (result.transition, result.wrote, result.code, result.ok, json.dumps(result.output, sort_keys=True,
                                                                                default=str))


@SYSTEMS
def test_step_is_pure_and_names_a_row_of_its_table(name):
    system = plugin(name)
    ids = system.transition_ids
    assert len(set(ids)) == len(ids), f"{name}'s transition table repeats a row id"

    @SAMPLES
    @given(_sample_ops(system))
    def check(ops):
        state = system.initial_state()
        for op in ops:
            before = copy.deepcopy(state)
            after, result = system.step(state, op)
            again_state, again = system.step(state, op)
            assert state == before, f"{name}: step changed its input state on {system.describe_op(op)}"
            assert after == again_state and _result_key(result) == _result_key(again), (
                f"{name}: stepping the same state with {system.describe_op(op)} twice gave different results")
            assert result.transition in ids, f"{name}: step fired {result.transition!r}, not a row of its table"
            assert "\n" not in system.describe_op(op), f"{name}: describe_op must describe an op in one line"
            state = after

    check()


@SYSTEMS
def test_operations_round_trip_through_json(name):
    system = plugin(name)

    @SAMPLES
    @given(_sample_ops(system))
    def check(ops):
        header, entries = system.ops_to_json(ops)
        assert set(header) <= set(system.history_header_keys), (
            f"{name}: ops_to_json wrote header keys {sorted(set(header) - set(system.history_header_keys))} its "
            "history_header_keys does not declare")
        whole = json.loads(json.dumps({**header, "entries": entries}))  # plain JSON, through a real encoding
        assert system.ops_from_json(whole, whole["entries"]) == ops

    check()


@SYSTEMS
def test_its_histories_are_read_back_and_validate_against_the_history_schema(name):
    """A history of its operations, as `fencecheck check` reads it: each call answered by the model (a fault left
    unanswered), with the final documents, written by `History.dumps`, validates against the shipped JSON Schema
    (docs/history-format.md) and is read back equal."""
    system = plugin(name)

    @SAMPLES
    @given(_sample_ops(system))
    def check(ops):
        state, calls = system.initial_state(), []
        for index, op in enumerate(ops):
            state, result = system.step(state, op)
            answer = result.output if result.ok else result.code
            outcome = Indefinite(NO_RETURN) if answer is None else Definite(answer)
            calls.append(Call(index, f"caller-{index}", op, 10 * index, None if answer is None else 10 * index + 5,
                              outcome))
        partitions = sorted({system.partition_of(op) for op in ops})
        history = History(calls, {key: system.documents_of(state, key) for key in partitions}, system=name)
        data = json.loads(history.dumps())
        assert history_problems(data) == [], f"{name}: a history of {[system.describe_op(op) for op in ops]}"
        assert History.from_json(data) == history

    check()


@SYSTEMS
def test_partitions_restrict_and_merge_back(name):
    system = plugin(name)

    @SAMPLES
    @given(_sample_ops(system))
    def check(ops):
        state = system.initial_state()
        for op in ops:
            state = system.step(state, op)[0]
            assert isinstance(system.partition_of(op), str)
        for key in system.partitions_of_state(state):
            part = system.restrict(state, key)
            assert system.documents_of(part, key) == system.documents_of(state, key)
            assert system.merge(state, part, key) == state, f"{name}: merging a partition back changed the state"
            for path in system.documents_of(state, key):
                assert system.partition_of_path(path) == key, f"{name}: {path} is stored in {key}, not its own"

    check()


@SYSTEMS
def test_the_reference_is_spelled_by_a_spec_that_resolves_back_to_it(name):
    system = plugin(name)
    spec = system.spec_of(system.reference)
    assert spec and system.owns_spec(spec) and system_of_spec(spec) == name, spec
    assert system.resolve(spec) is system.reference
    assert system.resolve(None) is system.reference and system.resolve("") is system.reference
    assert system.describe_impl(system.reference), f"{name}: describe_impl does not name its own reference"


@SYSTEMS
def test_each_known_bad_spec_resolves_to_equal_implementations_it_owns(name):
    system = plugin(name)
    variants = system.known_bad_variants()
    assert variants, f"{name} has no known-bad catalogue: the known-bad suites would verify nothing of it"
    for variant, spec in variants.items():
        first, second = system.resolve(spec), system.resolve(spec)
        assert first == second, f"{name}: {spec} resolved to two different implementations"
        assert first is not system.reference, f"{name}: {spec} resolved to the reference"
        assert system.owns_spec(spec) and system_of_spec(spec) == name, (variant, spec)
        assert system.spec_of(first) == spec, f"{name}: {spec} resolves to one spelled {system.spec_of(first)!r}"


@SYSTEMS
def test_its_declared_suite_parts_import_and_fit_together(name):
    system = plugin(name)
    parts = system.suites
    missing = [part for part in suite_parts.REQUIRED if not suite_parts.has_part(system, part)]
    assert not missing, "; ".join(suite_parts.missing_part_message(name, part) for part in missing)
    test_case = load_part(parts.machine)
    assert issubclass(test_case, BoundToEmulator) and test_case.machine.plugin is system, parts.machine
    races = load_part(parts.races)
    assert races.SCENARIOS and set(races.BY_NAME) == {s.name for s in races.SCENARIOS}, parts.races
    every = set(system.known_bad_variants())
    assert parts.catalogue, f"{name}: SuiteParts.catalogue names no catalogue module for its variants"
    catalogue = load_part(parts.catalogue)
    assert all(catalogue.variant(v).name == v for v in every), f"{parts.catalogue}.variant does not name them"
    raced = set(getattr(races, "CATCHES", {}))
    parallel = set(parts.parallel_variants())
    assert raced | parallel <= every, f"{name} races variants {sorted((raced | parallel) - every)} it does not have"
    if parts.machine_known_bad is not None:
        machine = load_part(parts.machine_known_bad)
        assert isinstance(machine, MachineCatalogue) and machine.machine is test_case.machine, parts.machine_known_bad
        # a variant only a race shows must be raced by one of the suites, or nothing ever catches it
        unraced = sorted(set(machine.concurrent) - raced - parallel)
        assert not unraced, (f"{name}'s concurrent variants {unraced} are neither in its race module's CATCHES nor "
                             "in its SuiteParts.parallel_variants: no suite runs them")


def _plain(value: object) -> bool:
    """A value a process protocol can carry: JSON (objects with str keys), or a UTC datetime (a timestamp)."""
    if isinstance(value, dict):
        return all(isinstance(key, str) and _plain(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return all(_plain(item) for item in value)
    if isinstance(value, datetime):
        return value.utcoffset() == timedelta(0)
    return value is None or isinstance(value, bool | int | float | str)


def getattr_or_fail(system: SystemPlugin, impl: object, function_name: str):
    try:
        function = system.implementations.function(impl, function_name)
    except AttributeError:
        function = None
    if not callable(function):
        pytest.fail(f"{system.name}: its reference has no function {function_name!r}", pytrace=False)
    return function


@SYSTEMS
def test_every_operation_is_a_call_of_the_reference_through_the_operation_table(name):
    """The operation table (`Implementations.operation`) maps every call the system's programs make to a function
    its reference has, whose parameters take exactly what `SystemPlugin.invoke` hands it (db, the clock unless the
    function is clockless, attempt_log when it takes one, and the table's arguments), each argument a plain value
    a process protocol can carry; a fault is no call (TypeError). The operations are those of its parallel
    programs, which need not make every kind of call: a system's own tests put the rest through its table."""
    system = plugin(name)
    table = system.implementations.operation
    assert table is not None, (f"{name} gives its own invoke and no operation table (Implementations.operation): "
                               "its calls cannot be checked, nor a process protocol derived from them")
    reference = system.reference

    @settings(SAMPLES, max_examples=100)  # each example is a few table look-ups
    @given(_sample_ops(system))
    def check(ops):
        for op in ops:
            if system.is_fault(op):
                with pytest.raises(TypeError):
                    table(op)
                continue
            function_name, kwargs = table(op)
            function = getattr_or_fail(system, reference, function_name)
            handed = {"db": None, **({} if function_name in system.clockless else {"clock": None})}
            if accepts_attempt_log(function):
                handed["attempt_log"] = None
            try:
                inspect.signature(function).bind(**handed, **kwargs)
            except TypeError as error:
                pytest.fail(f"{name}: {function_name} does not take the table's call of {system.describe_op(op)}: "
                            f"{error}", pytrace=False)
            assert _plain(kwargs), f"{name}: {function_name}'s arguments are not plain values: {kwargs!r}"

    check()
