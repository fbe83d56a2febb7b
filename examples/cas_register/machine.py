"""The compare-and-set register's lockstep machine: every rule applies one operation (`model.py`) to the pure model
and to the implementation on the Firestore emulator through `fencecheck.runners.lockstep`, which compares the answer and
reads back the register the operation touched.

Keys are a Bundle, numbered in the order an example makes them (`k1`, `k2`, ...), so a program replays exactly;
a key's first operation may be any of the three (a read or a compare-and-set of a register never written). Values
are small, so a compare-and-set often meets the value it expects, and one rule always expects the register's
current value (the model's): swaps are not left to chance. Each example starts on an emptied project; its
teardown (`end_example`) reads back the whole project once more and empties it.

Collected by stateful_tests/conftest.py from the plug-in's `SuiteParts.machine`, though it lives outside
stateful_tests/ (the file name does not match test_*.py, so nothing else collects it). The budget is this
machine's own per Hypothesis profile (`BUDGETS`), selected by name like every machine's.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from examples.cas_register.model import CompareAndSet, Read, Write
from examples.cas_register.plugin import CAS_REGISTER, CasSystem
from fencecheck.checker import coverage
from fencecheck.plugin import SystemPlugin
from fencecheck.plugin.specs import configured_implementation
from fencecheck.runners.lockstep import Lockstep
from fencecheck.suites import hypothesis_profiles
from stateful_tests.machine_runner import BoundToEmulator, end_example

pytestmark = pytest.mark.system("cas_register")  # deselected by --only-system <another>

# Examples x steps per profile: four operations and one document per key, so a small budget reaches every row
# (read, write, swapped, mismatch) many times over; each step is one emulator call and one read-back.
BUDGETS: dict[str, dict[str, int]] = {
    "ci": {"max_examples": 30, "stateful_step_count": 20},
    "gate": {"max_examples": 30, "stateful_step_count": 20},
    "thorough": {"max_examples": 200, "stateful_step_count": 50},
}

values = st.integers(0, 3)
expectations = st.none() | values  # None: the register was never written


def machine_settings() -> settings:
    """The selected profile's settings with this machine's budget (another profile's numbers are kept)."""
    return settings(hypothesis_profiles.machine_settings(), **BUDGETS.get(hypothesis_profiles.selected_name(), {}))


class CasRegisterMachine(RuleBasedStateMachine):
    """Model and implementation in lockstep over reads, writes and compare-and-sets of a few registers."""

    # Bound by the test (TestCasRegisterMachine) before Hypothesis runs: the emulator, a project, its client.
    emulator: ClassVar[Any] = None
    project_id: ClassVar[str | None] = None
    db: ClassVar[Any] = None
    wire_faults: ClassVar[bool] = False  # no operation of this system loses its answer on the wire
    wire: ClassVar[Any] = None
    plugin: ClassVar[SystemPlugin] = CAS_REGISTER
    # The reference unless $FENCECHECK_SYSTEM names a cas_register implementation.
    system: ClassVar[CasSystem] = configured_implementation(CAS_REGISTER)
    # Programs of this test run: the last one, and those Hypothesis replayed as final (shrunk) examples.
    last_program: ClassVar[list] = []
    final_programs: ClassVar[list] = []
    run_counts: ClassVar[Any] = None
    examples_run: ClassVar[int] = 0  # for the evidence report's stateful section

    keys = Bundle("keys")

    def __init__(self) -> None:
        super().__init__()
        if self.db is None:
            raise RuntimeError(f"{type(self).__name__} is not bound to an emulator project (run it via its TestCase)")
        # The project is empty: fresh for the first example, emptied by every teardown (checked before step 1).
        self.lockstep = Lockstep(self.db, plugin=CAS_REGISTER, system=self.system,
                                 coverage=coverage.PROCESS_COUNTS[CAS_REGISTER.name])
        type(self).examples_run += 1
        self.key_numbers = itertools.count(1)

    def _run(self, op: Any) -> None:
        event(self.lockstep.run(op).transition)

    @rule(target=keys)
    def new_key(self):
        return f"k{next(self.key_numbers)}"

    @rule(key=keys)
    def read(self, key):
        self._run(Read(key))

    @rule(key=keys, value=values)
    def write(self, key, value):
        self._run(Write(key, value))

    @rule(key=keys, new=values)
    def compare_and_set_current(self, key, new):
        """Expects what the register holds (the model's value): swaps, even to the value it holds already."""
        self._run(CompareAndSet(key, self.lockstep.state.get(key), new))

    @rule(key=keys, expected=expectations, new=values)
    def compare_and_set(self, key, expected, new):
        """Expects a drawn value: a mismatch unless it is the register's (an absent register holds None)."""
        self._run(CompareAndSet(key, expected, new))

    @invariant()
    def stored_documents_match_model(self):
        # Before step 1 this reads back the (emptied) project; after that Lockstep.run has already read back
        # the operation's register: a no-op.
        self.lockstep.check_documents()

    def teardown(self):
        end_example(self)


class TestCasRegisterMachine(BoundToEmulator, CasRegisterMachine.TestCase):
    """`CasRegisterMachine.TestCase` with the selected profile's settings and this machine's budget, bound to an
    emulator project."""

    settings = machine_settings()
    machine = CasRegisterMachine
