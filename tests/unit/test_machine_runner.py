"""stateful_tests/machine_runner.py without an emulator: the full-coverage check of a machine is against its
own system's transition table (a machine here that touches no Firestore and fires one lantern row)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, rule

from fencecheck.suites import hypothesis_profiles
from fencecheck.systems.lantern.plugin import LANTERN
from stateful_tests.machine_runner import run_machine

RUN_SETTINGS = settings(max_examples=2, stateful_step_count=2, phases=[Phase.generate], database=None,
                        deadline=None, suppress_health_check=list(HealthCheck))


class OneRowMachine(RuleBasedStateMachine):
    """What run_machine needs of a machine; its one rule counts `create_venue.new` as fired."""

    plugin = LANTERN
    system = object()  # not the reference: no evidence is written for this machine
    emulator = project_id = db = None
    last_program: list = []
    final_programs: list = []
    run_counts = None
    examples_run = 0

    @rule()
    def create_a_venue(self):
        type(self).run_counts["create_venue.new"] += 1


@pytest.fixture
def profile():
    before = hypothesis_profiles.selected_name()
    yield hypothesis_profiles.select
    hypothesis_profiles.select(before)


def test_under_thorough_every_reachable_row_of_the_machines_own_system_must_fire(profile):
    profile("thorough")
    with pytest.raises(AssertionError, match="reachable transitions never exercised by OneRowMachine") as raised:
        run_machine(OneRowMachine, settings=RUN_SETTINGS, emulator=None, project_id=None, db=None)
    message = str(raised.value)
    assert "light.relight_old_venue_gone" in message and "create_venue.new" not in message
    assert "register." not in message  # the journal's table is not this machine's


def test_other_profiles_only_run_it(profile):
    profile("ci")
    run_machine(OneRowMachine, settings=RUN_SETTINGS, emulator=None, project_id=None, db=None)
    assert OneRowMachine.run_counts["create_venue.new"] >= 1
    assert OneRowMachine.db is None  # unbound again after the run
