"""fencecheck.runners.counterexamples: model operations rendered as Python source that evaluates back to them,
and the generated replay module (no emulator: it is compiled and inspected, not run)."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import model.journal as journal
from fencecheck.runners.counterexamples import program_source, short_id, to_source, write_counterexample
from fencecheck.systems.journal.plugin import JOURNAL
from model.journal import Acquire, CommandRef, Complete, Fail, FaultKind, InjectFault, Register

NAMESPACE = {name: getattr(journal, name) for name in journal.__all__} | {"datetime": datetime, "UTC": UTC}
T0 = datetime(2026, 1, 1, tzinfo=UTC)
UUID = st.integers(0, 2**32 - 1).map(lambda n: f"{n:08x}-c0de-4000-8000-000000000000")
LEASE = st.integers(0, 2**32 - 1).map(lambda n: f"{n:08x}-1ea5-4000-a000-000000000000")

commands = st.builds(
    CommandRef,
    environment=st.sampled_from(("local", "test", "staging", "production")),
    caller_scope_kind=st.sampled_from(("firebase_uid", "anonymous_principal", "internal_system")),
    caller_scope_value=st.text(min_size=1, max_size=12).filter(lambda s: s.isprintable()),
    command_id=UUID,
    command_type=st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
    endpoint_schema_version=st.integers(1, 1_000_000),
    payload=st.sampled_from(('{"a":1}', '{"a":true}', '{"x":"\\u00e9\\"q"}', "{}")),
)
times = st.integers(-10**12, 10**12).map(lambda us: T0 + timedelta(microseconds=us))
fences = st.integers(1, 9_999_999_999)
fingerprints = st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
operations = st.one_of(
    st.builds(Register, commands, times, st.booleans()),
    st.builds(Acquire, commands, LEASE, times, st.booleans()),
    st.builds(Complete, commands, LEASE, fences, fingerprints, times, st.booleans()),
    st.builds(Fail, commands, LEASE, fences, times, st.booleans()),
    st.builds(InjectFault, commands, st.sampled_from(FaultKind)),
)


def test_repr_of_a_fault_does_not_round_trip_which_is_why_to_source_exists():
    op = InjectFault(CommandRef("test", "firebase_uid", "u", "00000000-c0de-4000-8000-000000000000", "t", 1, "{}"),
                     FaultKind.BAD_HASH)
    with pytest.raises(SyntaxError):
        eval(repr(op), NAMESPACE)  # noqa: S307 - the point of the test
    assert eval(to_source(op), NAMESPACE) == op  # noqa: S307


@given(operations)
def test_to_source_round_trips(op):
    assert eval(to_source(op), NAMESPACE) == op  # noqa: S307


@given(operations)
def test_multi_line_source_round_trips_too(op):
    text = to_source(op, indent=4)
    assert all(len(line) <= 120 or "terminal_reference_fingerprint" in line for line in text.splitlines())
    assert eval(text, NAMESPACE) == op  # noqa: S307


def test_times_keep_microseconds_and_stay_utc():
    moment = T0 + timedelta(seconds=59, microseconds=999_999)
    assert to_source(moment) == "datetime(2026, 1, 1, 0, 0, 59, 999999, tzinfo=UTC)"
    assert eval(to_source(moment), NAMESPACE) == moment  # noqa: S307
    with pytest.raises(ValueError):
        to_source(datetime(2026, 1, 1))


@given(st.lists(operations, min_size=1, max_size=6))
def test_program_module_compiles_and_its_ops_evaluate_back(ops):
    source = program_source(ops, machine="JournalMachine", failure="AssertionError: boom", replay_command="x",
                            plugin=JOURNAL)
    module_globals: dict = {"__name__": "counterexample"}
    exec(compile(ast.parse(source), "<counterexample>", "exec"), module_globals)  # noqa: S102
    assert module_globals["OPS"] == ops
    assert callable(module_globals["test_replay"])
    assert "replay(firestore_db, OPS)" in source


def test_program_names_a_swapped_system_and_wraps_long_failures(tmp_path):
    command = CommandRef("test", "firebase_uid", "u", "00000000-c0de-4000-8000-000000000000", "t", 1, "{}")
    ops = [Register(command, T0), Acquire(command, "00000000-1ea5-4000-a000-000000000000", T0)]
    path = write_counterexample(tmp_path, ops, machine="M", failure="x" * 500, system_module="known_bad.journal",
                                plugin=JOURNAL)
    assert path.name == f"M-{short_id(ops, 'M')}.py"
    source = path.read_text()
    assert "SYSTEM = ReferenceAPI.from_module('known_bad.journal')" in source
    assert "replay(firestore_db, OPS, system=SYSTEM)" in source
    assert max(len(line) for line in source.splitlines()) <= 120
    assert "C1 = CommandRef(" in source and "Register(command=C1," in source


def test_short_id_is_stable_and_depends_on_the_program():
    command = CommandRef("test", "firebase_uid", "u", "00000000-c0de-4000-8000-000000000000", "t", 1, "{}")
    one, two = [Register(command, T0)], [Register(command, T0 + timedelta(microseconds=1))]
    assert short_id(one, "M") == short_id(list(one), "M")
    assert short_id(one, "M") != short_id(two, "M")
    assert short_id(one, "M") != short_id(one, "N")
