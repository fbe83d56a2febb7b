"""The example system outside the package (examples/cas_register/) on the emulator: its reference agrees with its
model step by step (the lockstep runner, given nothing but the plug-in), a broken implementation of the user's
(`cas_register:<module>`) is caught, and `fencecheck replay --plugin ...` replays a counterexample file of it: still
failing against that module, no longer against the reference."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from examples.cas_register.model import CompareAndSet, Read, Write
from examples.cas_register.plugin import CAS_REGISTER, REFERENCE
from fencecheck.counterexamples import write_counterexample
from fencecheck.lockstep import LockstepMismatch, replay
from fencecheck.plugins import ENV_PLUGINS
from fencecheck.systems import ENV_SYSTEM

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
