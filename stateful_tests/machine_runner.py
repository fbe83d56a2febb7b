"""Running a lockstep state machine of any system: Hypothesis, the counterexample file, the evidence.

A machine class (`JournalMachine`, `LanternMachine`) names its system's plug-in (`plugin`) and the
implementation it drives (`system`); it records the programs it ran (`last_program`, `final_programs`), the
transitions they fired (`run_counts`) and how many examples it started (`examples_run`). `run_machine` binds
it to an emulator project, runs it, and

- on failure writes each shrunk program to `counterexamples/<Machine>-<id>.py` (fencecheck.runners.counterexamples),
  naming the implementation when it is not the reference (a system other than the journal always names it),
  and adds the replay command to the error;
- for a run against the reference, writes `artifacts/stateful/<Machine>.json` (the report's stateful section);
- under a full-coverage profile (`thorough`), fails when a reachable row of the system's transition table
  never fired.

Not collected (the name does not match test_*.py and no plug-in names it as its machine: stateful_tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import note
from hypothesis.control import current_build_context
from hypothesis.stateful import run_state_machine_as_test

from fencecheck.checker import coverage
from fencecheck.report.artifacts import write_stateful_summary
from fencecheck.runners.counterexamples import replay_command, write_counterexample
from fencecheck.suites import artifacts_root, hypothesis_profiles, progress
from fencecheck.wire.session import open_session

ROOT = Path(__file__).resolve().parent.parent
COUNTEREXAMPLES = ROOT / "counterexamples"  # repo root, gitignored


def is_final_run() -> bool:
    """True while Hypothesis replays the final (shrunk) example of a failing test."""
    try:
        return bool(current_build_context().is_final)
    except Exception:
        return False


def run_machine(machine: Any, *, settings, emulator, project_id, db, wire=None) -> None:
    """Run `machine` under Hypothesis; on failure write the shrunk program to counterexamples/ (then
    re-raise); under a full-coverage profile, fail when a reachable transition never fired.

    A machine whose `wire_faults` is true gets `wire` (a `fencecheck.wire.WireSession` of the same project,
    the `wire_session` fixture), or a wire proxy of its own for the run, stopped whatever happens."""
    with contextlib.ExitStack() as stack:
        if getattr(machine, "wire_faults", False) and wire is None:
            wire = stack.enter_context(open_session(emulator.host, project_id))
        machine.wire = wire if getattr(machine, "wire_faults", False) else None
        try:
            _run_machine(machine, settings=settings, emulator=emulator, project_id=project_id, db=db)
        finally:
            machine.wire = None


def write_counterexamples(machine: Any, programs: list[list[Any]], error: BaseException) -> list[Path]:
    """Write each non-empty program of `machine` that failed with `error` to counterexamples/, naming the
    implementation it drove unless that is the reference, and add the replay command to the error (where the
    gate finds the files: fencecheck.report.failures.counterexample_paths)."""
    plugin = machine.plugin
    on_reference = machine.system is plugin.reference
    paths = [
        write_counterexample(
            COUNTEREXAMPLES,
            program,
            machine=machine.__name__,
            failure=f"{type(error).__name__}: {error}",
            system_module=None if on_reference else plugin.spec_of(machine.system),
            plugin=plugin,
        )
        for program in programs
        if program
    ]
    if paths:
        error.add_note("counterexample written; replay it with: " + " ; ".join(map(replay_command, paths)))
    return paths


def _wire_faults(machine: Any, before: Counter[str]) -> dict[str, int]:
    """The wire faults applied since `before` (the proxy may serve the whole test process), per kind."""
    return dict(machine.wire.kinds() - before) if machine.wire is not None else {}


def _run_machine(machine: Any, *, settings, emulator, project_id, db) -> None:
    plugin = machine.plugin
    machine.emulator, machine.project_id, machine.db = emulator, project_id, db
    machine.last_program, machine.final_programs, machine.run_counts = [], [], Counter()
    machine.examples_run = 0
    on_reference = machine.system is plugin.reference
    wire_before = machine.wire.kinds() if machine.wire is not None else Counter()
    started = time.monotonic()
    failures: list[dict[str, str | None]] = []
    try:
        run_state_machine_as_test(machine, settings=settings)
    except Exception as error:
        failures.append({"message": f"{type(error).__name__}: {str(error)[:2000]}", "counterexample": None})
        paths = write_counterexamples(machine, machine.final_programs or [machine.last_program], error)
        if paths:
            failures[-1]["counterexample"] = str(paths[-1])
        raise
    finally:
        machine.emulator = machine.project_id = machine.db = None
        if on_reference:  # evidence for the report; known-bad runs write their own
            write_stateful_summary(
                artifacts_root(ROOT),
                machine=machine.__name__,
                profile=hypothesis_profiles.selected_name(),
                examples=machine.examples_run,
                steps=sum(machine.run_counts.values()),
                seconds=round(time.monotonic() - started, 2),
                failures=failures,
                wire_faults=_wire_faults(machine, wire_before),
            )
    if hypothesis_profiles.requires_full_coverage():
        missing = coverage.unexercised(machine.run_counts, plugin.name)
        assert not missing, f"reachable transitions never exercised by {machine.__name__}: {missing}"


def end_example(machine: Any) -> None:
    """A machine's teardown: record the example's program and transitions (and, while Hypothesis replays its
    final example, note the model state), read back the whole project once more unless the example already
    failed on a mismatch, and empty the project whatever happened."""
    lockstep = machine.lockstep
    progress.example_done(type(machine).__name__)  # the gate's progress line counts examples per machine
    try:
        type(machine).last_program = list(lockstep.ops)
        if is_final_run():
            type(machine).final_programs.append(list(lockstep.ops))
            note(lockstep.plugin.describe_state(lockstep.state, epoch=lockstep.epoch))
        if type(machine).run_counts is not None:
            type(machine).run_counts.update(lockstep.transitions)
        if not lockstep.mismatched:
            # A write a step's own read-back could not see (another partition, a top-level document) is caught
            # here at the latest, before the project is emptied.
            lockstep.check_project()
    finally:
        machine.emulator.reset(machine.project_id)


class BoundToEmulator:
    """First base of a machine's TestCase (`class TestX(BoundToEmulator, XMachine.TestCase)`, with `machine` and
    `settings` set): pytest binds it to an emulator project, and it runs through `run_machine`."""

    machine: Any
    settings: Any

    @pytest.fixture(autouse=True)
    def _bind(self, emulator, project_id, firestore_db, wire_session):
        self._env = (emulator, project_id, firestore_db, wire_session)

    def runTest(self):
        emulator, project_id, db, wire = self._env
        run_machine(self.machine, settings=self.settings, emulator=emulator, project_id=project_id, db=db, wire=wire)

    runTest.is_hypothesis_test = True

