"""The lantern's parallel programs without the emulator (fencecheck/systems/lantern/parallel.py, and the generic
engine taking the lantern plug-in):

- every program is bounded, contests the project, and round-trips through JSON naming its system;
- the contests its known-bad variants need are generated: two extinguishes of alice's live lantern (#5), and a
  read after its expiry racing her extinguish or another read (A3); the simplest program is the first;
- a lantern counterexample is named and saved as the lantern's, loads back, and `fencecheck replay` prepares
  it against the lantern's reference (another system's `--system` is a usage error);
- a saved history of another system than its program's is refused; `fencecheck check` reads a lantern file.
"""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import HealthCheck, find, given, settings

import fencecheck.cli.check as check_command
import fencecheck.cli.replay as replay
from fencecheck.checker.history import History, Planned, simulate
from fencecheck.checker.linearizability import check
from fencecheck.errors import UsageError
from fencecheck.parallel import CaseResult, ParallelProgram, Repetition, contested_keys, programs
from fencecheck.parallel.case import load_counterexample, save_counterexample
from fencecheck.plugin.registry import plugin
from fencecheck.suites.hypothesis_profiles import _PHASES as PHASES
from model.lantern import Extinguish, Light, ReadActive

LANTERN = plugin("lantern")
FIND = settings(database=None, max_examples=2000, suppress_health_check=list(HealthCheck), phases=PHASES,
                derandomize=True)
MANY = settings(database=None, max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))


@MANY
@given(programs(LANTERN, max_branches=3, max_concurrent_ops=5))
def test_lantern_programs_are_bounded_contested_and_round_trip(program):
    assert program.system == "lantern" and 2 <= program.size.branches <= 3 and program.size.concurrent_ops <= 5
    assert contested_keys(program) == ("project",)
    data = json.loads(json.dumps(program.to_json()))
    assert data["system"] == "lantern" and ParallelProgram.from_json(data) == program


def _alone(program: ParallelProgram, kind: type) -> list:
    return [branch[0].op for branch in program.branches if isinstance(branch[0].op, kind)]


def test_the_simplest_program_is_two_extinguishes_of_a_live_lantern():
    program = find(programs(LANTERN), lambda p: True, settings=FIND)
    state, _results = program.prefix_state()
    ops = [call.op for branch in program.branches for call in branch]
    assert program.size.branches == 2 and len(ops) == 2 and all(isinstance(op, Extinguish) for op in ops)
    assert all(state.lantern(op.lantern_id).active_at(op.now) for op in ops)


def test_a_read_after_expiry_racing_an_extinguish_is_generated():
    def read_races_extinguish(program: ParallelProgram) -> bool:
        state, _results = program.prefix_state()
        reads = [op for op in _alone(program, ReadActive) if any(
            lantern.stored_active and not lantern.active_at(op.now) for _id, lantern in state.lanterns)]
        return bool(reads) and bool(_alone(program, Extinguish))

    program = find(programs(LANTERN), read_races_extinguish, settings=FIND)
    assert program.size.branches == 2


def test_relights_after_expiry_are_generated():
    def relight(program: ParallelProgram) -> bool:
        state, _results = program.prefix_state()
        return any(state.guard(op.user_id) is not None and not state.lantern(state.guard(op.user_id).lantern_id)
                   .active_at(op.now) for op in _alone(program, Light))

    assert find(programs(LANTERN), relight, settings=FIND).size.branches == 2


# --- counterexamples ----------------------------------------------------------------------------------------


def _case(system: str = "reference") -> CaseResult:
    program = find(programs(LANTERN), lambda p: True, settings=FIND)
    return CaseResult(program, (Repetition("prefix", "demo-x"),), 1.0, system)


def test_a_lantern_counterexample_is_the_lantern_s_and_replays_against_its_reference(tmp_path):
    path = save_counterexample(_case(), tmp_path)
    assert path.name.startswith("parallel-lantern-reference-")
    saved = load_counterexample(path)
    assert saved.plugin is LANTERN and saved.program.system == "lantern"
    prepared = replay.prepare(path)
    assert prepared.kind == "parallel" and prepared.system is LANTERN.reference
    spec = "known_bad.lantern:finding_5_read_then_write_extinguish"
    assert LANTERN.spec_of(replay.prepare(path, spec).system) == spec
    with pytest.raises(UsageError, match="counterexample of the lantern"):
        replay.prepare(path, "known_bad.journal:whatever")


def test_a_variant_s_lantern_counterexample_names_the_variant(tmp_path):
    spec = "known_bad.lantern:rejected_a3_auto_extinguish_batch"
    path = save_counterexample(_case(spec), tmp_path)
    assert path.name.startswith("parallel-lantern-rejected_a3_auto_extinguish_batch-")
    assert LANTERN.spec_of(replay.prepare(path).system) == spec


def test_a_history_of_another_system_than_the_program_s_is_refused(tmp_path):
    path = save_counterexample(_case(), tmp_path)
    data = json.loads(path.read_text())
    data["history"] = History((), {}, system="journal").to_json()
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="the history is the journal's, the program the lantern's"):
        load_counterexample(path)


def test_fencecheck_check_judges_a_lantern_parallel_counterexample(tmp_path):
    # A serial run of the simplest program (b1's extinguish, then b2's), simulated by the model: linearizable.
    case = _case()
    program = case.program
    state, _results = program.prefix_state()
    planned = [Planned(lane, branch[0].op, 2 * i, 2 * i + 1, 2 * i) for i, (lane, branch) in
               enumerate(zip(program.lanes, program.branches, strict=True))]
    history, _state = simulate(planned, plugin=LANTERN, initial_state=state)
    failing = attrs.evolve(case, repetitions=(Repetition("illegal", "demo-x", history=history),))
    path = save_counterexample(failing, tmp_path)
    saved = check_command.load(path)
    assert saved.kind == "parallel" and saved.plugin is LANTERN and saved.initial_state == state
    assert check(saved.history, plugin=LANTERN, initial_state=saved.initial_state).status == "ok"


def test_a_command_line_spec_makes_a_file_name_without_separators(tmp_path):
    # An exec: spec is a command line: its slashes and spaces must not become directories in the file name.
    path = save_counterexample(_case("lantern:exec:node some dir/main.js --variant x"), tmp_path)
    assert path.parent == tmp_path
    assert path.name.startswith("parallel-lantern-node-some-dir-main-js-variant-x-")
