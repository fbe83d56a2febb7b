"""The example system outside the package (examples/cas_register/): `fencecheck check --plugin ...` judges its saved
histories (a subprocess, as a user runs it), it registers by an entry point too (a dist-info in a tmp dir on
PYTHONPATH: nothing installed), its model is pure, its operations round-trip through JSON and through a
counterexample file, and `cas_register:<module>` names its implementations (no emulator here; on the emulator:
tests/emulator/test_example_plugin_on_emulator.py)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from examples.cas_register.model import CasState, CompareAndSet, Read, Write, describe_op, describe_state, step
from examples.cas_register.plugin import CAS_REGISTER, REFERENCE, CasSystem
from fencecheck.checker.history import Recorder, classifier
from fencecheck.errors import SystemNotFoundError
from fencecheck.parallel.execute import _harness_problems, _run_branch
from fencecheck.parallel.program import BranchCall
from fencecheck.plugin.registry import ENV_PLUGINS, SYSTEM_NAMES, plugin
from fencecheck.plugin.specs import (
    ENV_SYSTEM,
    configured_implementation,
    resolve_implementation,
    spellings,
    system_of_spec,
)
from fencecheck.runners.counterexamples import write_counterexample
from fencecheck.systems.lantern.plugin import LANTERN, REFERENCE_LANTERN

ROOT = Path(__file__).resolve().parents[2]
WHERE = "examples.cas_register.plugin:CAS_REGISTER"
HISTORY = "examples/cas_register/history.json"
NOT_LINEARIZABLE = "examples/cas_register/not_linearizable.json"
REFERENCE_SPEC = "cas_register:examples.cas_register.implementation"

OK_OUTPUT = f"""{HISTORY}: cas_register history, 6 calls: ok
ok: 6 calls over 2 register(s) are linearizable (11 placement attempts); indefinite calls applied: 1, left out: 0
2 register(s), in order of first invocation:
  register x: ok (7 placement attempts, 4 calls placed)
  register y: ok (4 placement attempts, 2 calls placed)
"""
ILLEGAL_OUTPUT = f"""{NOT_LINEARIZABLE}: cas_register history, 4 calls: illegal
illegal: 1 of 1 register(s) are not linearizable.
register x is not linearizable.
Longest linearizable prefix (2 calls):
    1. call 1 (alice) write x := 0 -> written (+value)
    2. call 2 (alice) compare-and-set x: 0 -> 1 -> swapped (+value)
Model state after the prefix:
  x = 1
First call that cannot be placed: call 3 (bob) compare-and-set x: 0 -> 2
  observed: swapped (+value)
  model answers after the prefix: mismatch (+value)
Timeline per caller (ms since the first invocation; #n = position in the prefix):
  alice
    [ 0.000 .. 10.000] call 1 write x := 0 -> written (+value)  #1
    [20.000 .. 40.000] call 2 compare-and-set x: 0 -> 1 -> swapped (+value)  #2
  bob
    [25.000 .. 45.000] call 3 compare-and-set x: 0 -> 2 -> swapped (+value)  <-- CANNOT BE PLACED
  carol
    [50.000 .. 60.000] call 4 read x -> read (+value)  not placed
1 register(s), in order of first invocation:
  register x: illegal (9 placement attempts, 2 calls placed)
"""


pytestmark = pytest.mark.usefixtures("no_system_environment")


def _fencecheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items() if key not in (ENV_PLUGINS, ENV_SYSTEM)}
    return subprocess.run([sys.executable, "-m", "fencecheck", *args], cwd=ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120, check=False)


# --- fencecheck check, as a user runs it ---------------------------------------------------------------------


def test_check_with_the_plugin_says_the_saved_history_is_linearizable():
    done = _fencecheck("check", "--plugin", WHERE, HISTORY)
    assert (done.returncode, done.stdout, done.stderr) == (0, OK_OUTPUT, "")


def test_check_with_the_plugin_says_the_other_history_is_illegal_and_why():
    done = _fencecheck("check", "--plugin", WHERE, NOT_LINEARIZABLE)
    assert (done.returncode, done.stdout, done.stderr) == (1, ILLEGAL_OUTPUT, "")


def test_check_without_the_plugin_is_a_usage_error_saying_how_to_register_it():
    done = _fencecheck("check", HISTORY)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "fencecheck: no system called 'cas_register': expected one of journal, lantern, gateway. (a system from "
        "outside fencecheck is registered by an entry point of the group 'fencecheck.systems', by --plugin "
        "module:attribute or by $FENCECHECK_PLUGINS.)\n")


def test_the_environment_variable_registers_it_as_plugin_does():
    done = _fencecheck("check", HISTORY, env={ENV_PLUGINS: WHERE})
    assert (done.returncode, done.stdout) == (0, OK_OUTPUT)


def test_an_entry_point_registers_it_with_nothing_installed(tmp_path):
    # What `pip install` of a package declaring the entry point leaves on sys.path, here in a tmp dir only.
    dist = tmp_path / "cas_register_example-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cas-register-example\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[fencecheck.systems]\ncas_register = {WHERE}\n")
    path = os.pathsep.join(filter(None, [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH")]))
    done = _fencecheck("check", HISTORY, env={"PYTHONPATH": path})
    assert (done.returncode, done.stdout, done.stderr) == (0, OK_OUTPUT, "")
    # the same plug-in by --plugin as well is the same registration, not a clash
    done = _fencecheck("check", "--plugin", WHERE, HISTORY, env={"PYTHONPATH": path})
    assert (done.returncode, done.stdout, done.stderr) == (0, OK_OUTPUT, "")


# --- the model --------------------------------------------------------------------------------------------------

keys = st.sampled_from(("x", "y"))
values = st.integers(-3, 3)
operations = st.one_of(st.builds(Read, keys), st.builds(Write, keys, values),
                       st.builds(CompareAndSet, keys, st.none() | values, values))


@given(st.lists(operations, max_size=8), operations)
def test_step_is_pure_and_answers_as_the_contract_says(prefix, op):
    state = CasState.empty()
    for earlier in prefix:
        state, _result = step(state, earlier)
    before = CasState(state.values)
    after, result = step(state, op)
    assert state == before  # the state it was handed is unchanged (frozen: it cannot be changed)
    current = state.get(op.key)
    if isinstance(op, Read):
        assert (after, result.output, result.wrote) == (state, {"outcome": "read", "value": current}, False)
    elif isinstance(op, Write):
        assert (after.get(op.key), result.output) == (op.value, {"outcome": "written", "value": op.value})
    elif current == op.expected:
        assert (after.get(op.key), result.output) == (op.new, {"outcome": "swapped", "value": op.new})
    else:
        assert (after, result.output, result.wrote) == (state, {"outcome": "mismatch", "value": current}, False)
    assert result.matches(result.output) and not result.matches({**result.output, "value": True})


def test_answers_match_exactly():
    _state, result = step(CasState.empty().with_value("x", 1), Read("x"))
    assert result.matches({"outcome": "read", "value": 1})
    assert not result.matches({"outcome": "read", "value": True})  # True == 1 in Python, not in the contract
    assert not result.matches({"value": 1, "outcome": "read"})  # the contract's key order
    assert not result.matches("cas_unavailable")


def test_descriptions():
    assert [describe_op(op) for op in (Read("x"), Write("x", 2), CompareAndSet("x", None, 1))] == [
        "read x", "write x := 2", "compare-and-set x: None -> 1"]
    assert describe_state(CasState.empty()) == "(every register empty)"
    assert describe_state(CasState.empty().with_value("y", 2).with_value("x", 1)) == "x = 1\ny = 2"


@given(st.lists(operations, max_size=8))
def test_operations_round_trip_through_json(ops):
    header, entries = CAS_REGISTER.ops_to_json(ops)
    assert CAS_REGISTER.ops_from_json(header, entries) == ops


@pytest.mark.parametrize("entry, message", [
    ({"type": "swap", "key": "x"}, "a cas_register operation is an object whose type is one of ['cas', 'read', "
                                   "'write']"),
    ({"type": "read", "key": "x", "value": 1}, "a read operation has exactly the keys ['type', 'key']"),
])
def test_malformed_operations_are_refused(entry, message):
    with pytest.raises(ValueError) as raised:
        CAS_REGISTER.ops_from_json({}, [entry])
    assert str(raised.value) == message


# --- registered, its implementations are named as every system's ---------------------------------------------


def test_registered_it_is_a_system_like_the_built_in_ones(monkeypatch):
    monkeypatch.setenv(ENV_PLUGINS, WHERE)
    assert tuple(SYSTEM_NAMES) == ("journal", "lantern", "gateway", "cas_register")
    assert plugin("cas_register") is CAS_REGISTER
    assert "systems: journal, lantern, gateway, cas_register; one of your own" in spellings()


def test_cas_register_module_specs_name_its_implementations(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_PLUGINS, WHERE)
    assert system_of_spec(REFERENCE_SPEC) == "cas_register"
    assert resolve_implementation(REFERENCE_SPEC) is REFERENCE and CAS_REGISTER.resolve("") is REFERENCE
    env = {ENV_SYSTEM: REFERENCE_SPEC}
    assert configured_implementation(CAS_REGISTER, env) is REFERENCE
    assert configured_implementation(LANTERN, env) is REFERENCE_LANTERN
    (tmp_path / "my_cas.py").write_text("from examples.cas_register.implementation import compare_and_set, "
                                        "read_register, write_register  # noqa: F401\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mine = resolve_implementation("cas_register:my_cas")
    assert (mine.name, mine.api.__name__) == ("cas_register:my_cas", "my_cas")
    assert CAS_REGISTER.describe_impl(mine) == "cas_register:my_cas"
    assert CAS_REGISTER.describe_impl(REFERENCE) == "the cas_register reference"
    with pytest.raises(SystemNotFoundError) as raised:
        resolve_implementation("cas_register:examples.cas_register.model")
    assert str(raised.value) == (
        "cas_register system 'cas_register:examples.cas_register.model': module examples.cas_register.model has no "
        "read_register, write_register, compare_and_set. Expected cas_register:<module>, an importable module with "
        "read_register, write_register, compare_and_set.")


class _NoClock:
    """A register whose read counts one transaction attempt (as the reference's calls do) and is handed no clock."""

    @staticmethod
    def read_register(*, db, key, attempt_log=None):
        attempt_log.attempts += 1
        return {"outcome": "read", "value": None}


def test_a_parallel_call_that_takes_no_time_reads_no_clock_and_is_no_problem():
    # The parallel engine holds a call to its plug-in's clock: once per call, never for one handed no reading
    # (`clock_of` None, every call of this system), as the contest runner does.
    fake = CasSystem("cas_register:no_clock", _NoClock)
    recorder = Recorder(classify=classifier(CAS_REGISTER, fake), system=CAS_REGISTER.name)
    records = _run_branch(CAS_REGISTER, fake, None, None, recorder, "b1", (BranchCall(Read("x")),), 0)
    assert [attempt.clock_wanted for record in records for attempt in record.attempts] == [0]
    assert _harness_problems((records,), ("b1",)) == []
    read_once = tuple(attrs.evolve(record, attempts=(attrs.evolve(record.attempts[0], clock_reads=1),))
                      for record in records)
    (problem,) = _harness_problems((read_once,), ("b1",))
    assert problem.text == "b1: the clock was read 1 times (never: the call is handed no reading)"


def test_a_counterexample_file_imports_it_by_name_and_its_classes_from_their_module(tmp_path, monkeypatch):
    ops = [Write("x", 0), CompareAndSet("x", 0, 1), Read("x")]
    path = write_counterexample(tmp_path, ops, machine="CasMachine", plugin=CAS_REGISTER)
    source = path.read_text()
    assert source[source.index("from examples"):] == CAS_FILE_TAIL
    monkeypatch.setenv(ENV_PLUGINS, WHERE)  # the file finds the plug-in wherever it is registered
    namespace: dict = {"__name__": "counterexample"}
    exec(compile(ast.parse(source), str(path), "exec"), namespace)  # noqa: S102 - the point of the test
    assert namespace["OPS"] == ops and namespace["SYSTEM"] is REFERENCE
    assert namespace["CAS_REGISTER"] is CAS_REGISTER


CAS_FILE_TAIL = f"""from examples.cas_register.model import CompareAndSet, Read, Write
from fencecheck.plugin.registry import plugin
from fencecheck.runners.lockstep import replay

OPS = [
    Write(key='x', value=0),
    CompareAndSet(key='x', expected=0, new=1),
    Read(key='x'),
]

CAS_REGISTER = plugin('cas_register')
SYSTEM = CAS_REGISTER.resolve({REFERENCE_SPEC!r})


def test_replay(firestore_db):
    replay(firestore_db, OPS, plugin=CAS_REGISTER, system=SYSTEM)
"""
