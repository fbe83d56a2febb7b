"""The example system outside the package (examples/cas_register/) on the emulator: its reference agrees with its
model step by step (the lockstep runner, given nothing but the plug-in), a broken implementation of the user's
(`cas_register:<module>`) is caught, and `fencecheck replay --plugin ...` replays a counterexample file of it: still
failing against that module, no longer against the reference. Its race scenarios (examples/cas_register/races.py),
called as the race suite calls them (`scenario.execute`): the reference passes each and saves its result, also
under the wire's fault mix, and the broken implementation loses the compare-and-set race."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from examples.cas_register import races
from examples.cas_register.model import CompareAndSet, Read, Write
from examples.cas_register.plugin import CAS_REGISTER, REFERENCE
from fencecheck.plugin.registry import ENV_PLUGINS
from fencecheck.plugin.specs import ENV_SYSTEM
from fencecheck.runners.contest import ContestRun
from fencecheck.runners.contest_results import ScenarioResult
from fencecheck.runners.counterexamples import write_counterexample
from fencecheck.runners.lockstep import LockstepMismatch, replay
from fencecheck.wire.mix import DEFAULT_SEED, FaultMix

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[2]
WHERE = "examples.cas_register.plugin:CAS_REGISTER"
OPS = [Write("x", 0), CompareAndSet("x", 5, 1), CompareAndSet("x", 0, 2), Read("x"), Read("y"), Write("y", 3)]
BLIND = """\
    from examples.cas_register.implementation import _ref, read_register, write_register  # noqa: F401


    def compare_and_set(*, db, key, expected, new, attempt_log=None):
        _ref(db, key).set({"value": new})  # never compares: the bug
        return {"outcome": "swapped", "value": new}
"""


def _blind_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "blind_cas.py").write_text(textwrap.dedent(BLIND))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "blind_cas", raising=False)
    return "cas_register:blind_cas"


def test_the_reference_agrees_with_the_model_at_every_step(firestore_db):
    replay(firestore_db, OPS, plugin=CAS_REGISTER, system=REFERENCE)
    stored = {snapshot.id: snapshot.to_dict() for snapshot in firestore_db.collection("casRegisters").stream()}
    assert stored == {"x": {"value": 2}, "y": {"value": 3}}


def test_a_compare_and_set_that_never_compares_is_caught(firestore_db, tmp_path, monkeypatch):
    blind = CAS_REGISTER.resolve(_blind_module(tmp_path, monkeypatch))
    with pytest.raises(LockstepMismatch) as raised:
        replay(firestore_db, OPS, plugin=CAS_REGISTER, system=blind)
    assert "lockstep mismatch at step 2" in str(raised.value)


@pytest.mark.harness  # runs `fencecheck replay`, which runs pytest: the gate deselects it, ./run tests runs it
def test_fencecheck_replay_replays_a_counterexample_of_the_outside_system(emulator, tmp_path, monkeypatch):
    spec = _blind_module(tmp_path, monkeypatch)
    path = write_counterexample(tmp_path / "counterexamples", OPS[:2], machine="CasMachine", plugin=CAS_REGISTER,
                                system_module=spec)
    env = {key: value for key, value in os.environ.items() if key not in (ENV_PLUGINS, ENV_SYSTEM)}
    env |= {"FIRESTORE_EMULATOR_HOST": emulator.host,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), str(ROOT), env.get("PYTHONPATH")]))}

    def run(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "fencecheck", "replay", "--plugin", WHERE, str(path), *options],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)

    done = run()
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"lockstep program {path} against {spec}, emulator at {emulator.host}" in done.stdout
    assert "still fails: LockstepMismatch: lockstep mismatch at step 2" in done.stdout
    done = run("--system", "reference")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "against the cas_register reference" in done.stdout and "no longer fails" in done.stdout


# --- its races, as race_tests/test_race_reference.py runs them -------------------------------------------------


@pytest.fixture
def registered(monkeypatch):
    """The example registered as a user registers it (--plugin exports it so): a race's history names its system by
    its registered name, and the history's JSON is written through the registry."""
    monkeypatch.setenv(ENV_PLUGINS, WHERE)


def _race(name: str, implementation, *, emulator, project_id, db, tmp_path: Path,
          wire_mix: FaultMix | None = None) -> tuple[ScenarioResult, ContestRun]:
    return races.BY_NAME[name].execute(
        db, implementation=implementation, repeat=0, artifacts_dir=tmp_path / "races",
        counterexamples_dir=tmp_path / "counterexamples", emulator=emulator, project_id=project_id,
        wire_mix=wire_mix)


@pytest.mark.parametrize("name", list(races.BY_NAME))
def test_the_reference_keeps_each_race_promise_and_saves_its_result(name, emulator, project_id, firestore_db,
                                                                     tmp_path, registered):
    result, _run = _race(name, REFERENCE, emulator=emulator, project_id=project_id, db=firestore_db, tmp_path=tmp_path)
    assert result.passed, result.findings()
    assert result.definite_callers == result.callers == races.WIDTH
    assert (tmp_path / "races" / f"cas_register_{name}-0.json").is_file()
    assert not (tmp_path / "counterexamples").exists()


def test_the_reference_wins_the_compare_and_set_race_under_the_wire_fault_mix(emulator, project_id, firestore_db,
                                                                               tmp_path, registered):
    result, run = _race("cas_from_same_value", REFERENCE, emulator=emulator, project_id=project_id,
                        db=firestore_db, tmp_path=tmp_path, wire_mix=FaultMix(DEFAULT_SEED))
    assert run.wire_seed is not None and run.wire_faults, "the fault mix faulted nothing"
    assert result.passed, result.findings()


def test_a_compare_and_set_that_never_compares_loses_the_race(emulator, project_id, firestore_db, tmp_path,
                                                               monkeypatch, registered):
    blind = CAS_REGISTER.resolve(_blind_module(tmp_path, monkeypatch))
    result, _run = _race("cas_from_same_value", blind, emulator=emulator, project_id=project_id,
                         db=firestore_db, tmp_path=tmp_path)
    assert result.verdict == "illegal"  # 24 callers swapped from 0: at most one can have
    assert any("24 callers answered swapped, exactly one expected" in str(p) for p in result.promise_problems)
    assert list((tmp_path / "counterexamples").glob("race-cas_register_cas_from_same_value-*.json"))
