"""fencecheck.runners.counterexamples for another system than the journal: lantern programs rendered as a replay
module that names its implementation, and the journal's form kept exactly (no emulator: the modules are
compiled and inspected, not run)."""

from __future__ import annotations

import ast
import math
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fencecheck.cli.replay as replay
import model.lantern as lantern
from fencecheck.runners.counterexamples import (
    plugin_constant,
    plugin_line,
    program_source,
    to_source,
    write_counterexample,
)
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.lantern.plugin import LANTERN
from model.journal import CommandRef, FaultKind, InjectFault, Register
from model.lantern import CreateVenue, DeleteVenue, Extinguish, Light, ReadActive, ScheduledLight

NAMESPACE = {name: getattr(lantern, name) for name in lantern.__all__} | {"datetime": datetime, "UTC": UTC}
T0 = datetime(2026, 3, 1, 20, tzinfo=UTC)
VARIANT_SPEC = "known_bad.lantern:finding_13_blind_decrement_deleted_venue"

ids = st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True)
times = st.integers(-10**12, 10**12).map(lambda us: T0 + timedelta(microseconds=us))
latitudes = st.floats(-90, 90, allow_nan=False)
longitudes = st.floats(-180, 180, allow_nan=False)
operations = st.one_of(
    st.builds(CreateVenue, ids, st.text(min_size=1, max_size=20), latitudes, longitudes, st.floats(0.5, 100_000)),
    st.builds(DeleteVenue, ids),
    st.builds(Light, ids, ids, ids, latitudes, longitudes, now=times),
    st.builds(ScheduledLight, ids, ids, ids, times, now=times),
    st.builds(Extinguish, ids, ids, now=times),
    st.builds(ReadActive, now=times),
    st.builds(lantern.InjectFault, st.sampled_from(lantern.FaultKind), ids, now=st.none() | times),
)


def _module(source: str) -> dict:
    namespace: dict = {"__name__": "counterexample"}
    exec(compile(ast.parse(source), "<counterexample>", "exec"), namespace)  # noqa: S102 - the point of the test
    return namespace


def _unused_imports(source: str) -> set[str]:
    """Names the module imports but never uses (what ruff's F401 would report)."""
    tree = ast.parse(source)
    imported = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return imported - used


@given(operations)
def test_lantern_operations_round_trip_through_source(op):
    assert eval(to_source(op), NAMESPACE) == op  # noqa: S307
    assert eval(to_source(op, indent=4), NAMESPACE) == op  # noqa: S307


def test_floats_are_spelled_exactly_and_only_when_finite():
    assert to_source(52.5210000000001) == "52.5210000000001"
    assert eval(to_source(0.1 + 0.2)) == 0.1 + 0.2  # noqa: S307
    for value in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError):
            to_source(value)


@given(st.lists(operations, min_size=1, max_size=6))
def test_a_lantern_program_module_replays_its_ops_against_the_system_it_names(ops):
    source = program_source(ops, machine="LanternMachine", failure="LockstepMismatch: boom", replay_command="x",
                            plugin=LANTERN, system_module=VARIANT_SPEC)
    module = _module(source)
    assert module["OPS"] == ops
    assert module["SYSTEM"] == LANTERN.resolve(VARIANT_SPEC)
    assert "    replay(firestore_db, OPS, plugin=LANTERN, system=SYSTEM)" in source
    assert _unused_imports(source) == set()


def test_the_reference_is_named_too():
    ops = [CreateVenue("bar-1", "Bar", 52.52, 13.405, 150)]
    source = program_source(ops, machine="LanternMachine", replay_command="x", plugin=LANTERN)
    assert "LANTERN = plugin('lantern')\nSYSTEM = LANTERN.resolve('reference.lantern')\n" in source
    assert _module(source)["SYSTEM"] is LANTERN.reference
    assert "from datetime" not in source and "FaultKind" not in source  # nothing unused: the file lints clean


def test_a_fault_without_a_time_imports_fault_kind_but_no_datetime():
    ops = [CreateVenue("bar-1", "Bar", 52.52, 13.405, 150), lantern.InjectFault(lantern.FaultKind.COUNTER_DRIFT,
                                                                                "bar-1")]
    source = program_source(ops, machine="LanternMachine", replay_command="x", plugin=LANTERN)
    assert "from model.lantern import CreateVenue, FaultKind, InjectFault" in source
    assert _unused_imports(source) == set() and "datetime" not in source


def test_the_written_file_names_the_variant_for_fencecheck_replay(tmp_path):
    ops = [CreateVenue("bar-1", "Bar", 52.52, 13.405, 150), Light("u", "lan-1", "bar-1", 52.52, 13.405, now=T0)]
    path = write_counterexample(tmp_path, ops, machine="LanternMachine", plugin=LANTERN, system_module=VARIANT_SPEC)
    assert replay.program_system(path) == VARIANT_SPEC
    assert "#   2. light(user=u lantern=lan-1 venue=bar-1 from 52.52,13.405 at T+0.000000s)" in path.read_text()


def test_a_file_finds_the_plugin_through_the_registry_by_its_name():
    assert plugin_line(LANTERN) == "LANTERN = plugin('lantern')"
    namespace: dict = {}
    exec(f"from fencecheck.plugin.registry import plugin\n{plugin_line(LANTERN)}", namespace)  # noqa: S102
    assert namespace[plugin_constant(LANTERN)] is LANTERN


@pytest.mark.parametrize("name, constant", [
    ("cas_register", "CAS_REGISTER"), ("cas-register", "CAS_REGISTER"), ("2pc", "PLUGIN_2PC"),
    ("system", "PLUGIN_SYSTEM"), ("ops", "PLUGIN_OPS"),
])
def test_the_plugin_constant_is_an_identifier_the_file_uses_for_nothing_else(name, constant):
    assert plugin_constant(attrs.evolve(LANTERN, name=name)) == constant


# What a lantern file looks like: the plug-in found by its registered name, the classes imported from the
# package that exports them (model.lantern, not model.lantern.ops where they are defined).
LANTERN_GOLDEN_TAIL = """from datetime import UTC, datetime

from fencecheck.plugin.registry import plugin
from fencecheck.runners.lockstep import replay
from model.lantern import CreateVenue, FaultKind, InjectFault, Light

OPS = [
    CreateVenue(venue_id='bar-1', name='Bar', latitude=52.52, longitude=13.405, radius_meters=150.0),
    Light(
        user_id='u',
        lantern_id='l',
        venue_id='bar-1',
        latitude=52.52,
        longitude=13.405,
        now=datetime(2026, 3, 1, 20, tzinfo=UTC),
    ),
    InjectFault(kind=FaultKind.COUNTER_DRIFT, subject='bar-1', now=None),
]

LANTERN = plugin('lantern')
SYSTEM = LANTERN.resolve('reference.lantern')


def test_replay(firestore_db):
    replay(firestore_db, OPS, plugin=LANTERN, system=SYSTEM)
"""


def test_the_lantern_form():
    ops = [CreateVenue("bar-1", "Bar", 52.52, 13.405, 150), Light("u", "l", "bar-1", 52.52, 13.405, now=T0),
           lantern.InjectFault(lantern.FaultKind.COUNTER_DRIFT, "bar-1")]
    source = program_source(ops, machine="LanternMachine", replay_command="x", plugin=LANTERN)
    assert source[source.index("from datetime"):] == LANTERN_GOLDEN_TAIL
    assert _module(source)["OPS"] == ops


# The journal's files keep exactly the form they had before other systems were written (this golden module
# is what fencecheck.runners.counterexamples wrote for this program before then).
JOURNAL_GOLDEN = '''"""Counterexample found by the JournalMachine lockstep state machine (shrunk by Hypothesis).

Replay it against the Firestore emulator:

    cmd
"""

# Program (times relative to the first operation):
#   1. register(cmd=2f213aeb [t v1 p=1687bf5b] at T+0.000000s)
#   2. fault(bad_hash cmd=2f213aeb)
#
# Failure when it was found:
#   boom

from datetime import UTC, datetime

from fencecheck.systems.journal.plugin import replay
from known_bad.journal import system
from model.journal import CommandRef, FaultKind, InjectFault, Register

C1 = CommandRef(
    environment='test',
    caller_scope_kind='firebase_uid',
    caller_scope_value='u',
    command_id='00000000-c0de-4000-8000-000000000000',
    command_type='t',
    endpoint_schema_version=1,
    payload='{}',
)

OPS = [
    Register(command=C1, now=datetime(2026, 1, 1, tzinfo=UTC), commit_fails=False),
    InjectFault(command=C1, kind=FaultKind.BAD_HASH),
]

SYSTEM = system('x')


def test_replay(firestore_db):
    replay(firestore_db, OPS, system=SYSTEM)
'''


def test_the_journal_form_is_unchanged():
    command = CommandRef("test", "firebase_uid", "u", "00000000-c0de-4000-8000-000000000000", "t", 1, "{}")
    ops = [Register(command, datetime(2026, 1, 1, tzinfo=UTC)), InjectFault(command, FaultKind.BAD_HASH)]
    source = program_source(ops, machine="JournalMachine", failure="boom", system_module="known_bad.journal:x",
                            replay_command="cmd", plugin=JOURNAL)
    assert source == JOURNAL_GOLDEN


def test_a_plugin_names_the_classes_of_held_values_the_file_must_import():
    ops = [DeleteVenue("v1"), ReadActive(now=T0)]
    plain = program_source(ops, machine="LanternMachine", plugin=LANTERN)
    assert "from model.lantern import DeleteVenue, ReadActive\n" in plain
    holding = attrs.evolve(LANTERN, model_imports=lambda given_ops: ["Light"] if list(given_ops) == ops else [])
    source = program_source(ops, machine="LanternMachine", plugin=holding)
    assert "from model.lantern import DeleteVenue, Light, ReadActive\n" in source
    ast.parse(source)
