"""The known-bad runner's rounds (stateful_tests/known_bad_support.py): a variant that survives one machine run
runs again, as another machine class, before it counts as surviving.

The "variant" here is the real reference, which no machine run can catch, under a tiny derandomized budget:
each round must run (ROUNDS of them), each as its own class with its own programs (under derandomization a
round that repeated the first one's programs would add nothing), and the failure must say how much ran.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, settings

from fencecheck.suites import ENV_ARTIFACTS
from fencecheck.systems.journal.plugin import REFERENCE
from stateful_tests import known_bad_support
from stateful_tests.known_bad_support import ROUNDS, Target, catch
from tests.systems.journal.machine import JournalMachine

pytestmark = [pytest.mark.emulator, pytest.mark.harness]  # the gate deselects harness tests

TINY = settings(max_examples=3, stateful_step_count=6, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


def test_a_surviving_variant_runs_every_round_with_its_own_programs(emulator, project_id, firestore_db,
                                                                     tmp_path, monkeypatch):
    # This run is no evidence about anything: neither its known-bad result nor its stateful summary (it runs
    # the reference) may reach the report.
    monkeypatch.setenv(ENV_ARTIFACTS, str(tmp_path))
    rounds: list[tuple[str, list]] = []
    real_run_machine = known_bad_support.run_machine

    def run_machine(machine, **kwargs):
        real_run_machine(machine, **kwargs)
        rounds.append((machine.__name__, list(machine.last_program)))

    monkeypatch.setattr(known_bad_support, "run_machine", run_machine)
    target = Target(name="the-reference", result_name="the-reference", rule="none", description="the reference",
                    build=lambda: REFERENCE, machine=JournalMachine, settings=TINY)
    with pytest.raises(pytest.fail.Exception, match=rf"SURVIVED: \d+ examples in {ROUNDS} rounds"):
        catch(target, emulator=emulator, project_id=project_id, db=firestore_db, failing_property="test",
              record_property=lambda _key, _value: None)
    names = [name for name, _programs in rounds]
    assert names == ["KnownBadTheReference"] + [f"KnownBadTheReferenceRound{n}" for n in range(2, ROUNDS + 1)]
    last_programs = [repr(programs) for _name, programs in rounds]
    assert len(set(last_programs)) == ROUNDS, "a derandomized round repeated another round's programs"
    result = json.loads((tmp_path / "known_bad" / "the-reference.json").read_text())
    assert result["status"] == "survived"
    assert (tmp_path / "stateful" / "KnownBadTheReference.json").exists()  # its summary went here, not to the report
