"""An implementation in another shape passes the journal's lockstep machine (issue 12, point 7).

`tests.fakes.frozen_journal` behaves as the reference but returns frozen `MappingProxyType` outputs (the
lease expiry nested as one) and raises an exception class of its own whose `.code` is the contract's code;
its module declares no `CommandJournalError`. Resolved by its spec like any system, it must pass: the
harness converts any Mapping to plain JSON and tells the contract's error by its code.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

from fencecheck.plugin.records import UndeclaredError
from fencecheck.runners.lockstep import Lockstep
from fencecheck.suites import ENV_ARTIFACTS
from fencecheck.systems.journal.plugin import resolve_system
from stateful_tests import machine_runner
from tests.fakes import frozen_journal
from tests.systems.journal.machine import JournalMachine

pytestmark = pytest.mark.emulator

SPEC = "tests.fakes.frozen_journal"
SMALL = settings(max_examples=8, stateful_step_count=25, derandomize=True, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))


def test_a_mapping_proxy_implementation_passes_the_lockstep_machine(emulator, project_id, firestore_db,
                                                                     tmp_path, monkeypatch):
    system = resolve_system(SPEC)
    assert system.module == SPEC and system.error_type is UndeclaredError  # told by `.code` alone
    transitions: Counter[str] = Counter()

    class FrozenJournalMachine(JournalMachine):
        def __init__(self) -> None:
            super().__init__()
            # its own transition counts: artifacts/coverage is about the reference
            self.lockstep = Lockstep(self.db, plugin=self.plugin, system=self.system, epoch=self.lockstep.epoch,
                                     coverage=transitions)

    FrozenJournalMachine.system = system
    monkeypatch.setenv(ENV_ARTIFACTS, str(tmp_path))  # no evidence about anything
    monkeypatch.setattr(machine_runner, "COUNTEREXAMPLES", tmp_path / "counterexamples")
    monkeypatch.setattr(frozen_journal, "SEEN", Counter())

    machine_runner.run_machine(FrozenJournalMachine, settings=SMALL, emulator=emulator, project_id=project_id,
                               db=firestore_db)

    seen = frozen_journal.SEEN
    errors = {key for key in seen if key.startswith("error:")}
    assert seen["output"] > 0 and seen["nested"] > 0, seen  # frozen outputs, a nested expiry among them
    assert errors, seen  # and its own exception class, carrying contract codes
    assert transitions, "the machine compared nothing"
