"""Issue 23's first done-when, end to end: the example system from outside the package (examples/cas_register/),
registered by nothing but `$FENCECHECK_PLUGINS` / `--plugin`, joins every suite over the registry. Collection
includes its lockstep machine (under its own path), its race scenarios, its parallel programs and its conformance
tests, and none of them without the registration; `fencecheck gate --plugin ... --system ...` runs the
stateful, race and parallel suites for it and passes; and `gate --known-bad` catches its catalogue's variant. Its
folder and that one registration are all it takes: no file of fencecheck/ or of the suites names it.

Each runs pytest inside pytest (harness: `./run tests` runs them, the gate deselects them). The passing gate takes
about a minute (its suites' own emulator time: 30 lockstep examples, two 24-way races, three parallel programs), the
known-bad one about half a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fencecheck.plugin.registry import ENV_PLUGINS
from fencecheck.plugin.specs import ENV_SYSTEM

pytestmark = pytest.mark.harness  # the gate deselects harness tests

ROOT = Path(__file__).resolve().parents[2]
WHERE = "examples.cas_register.plugin:CAS_REGISTER"
SPEC = "cas_register:examples.cas_register.implementation"
# What collection must include for the example (pytest's node ids), each the one registry-wide test of its suite.
ITS_TESTS = {
    "examples/cas_register/machine.py::TestCasRegisterMachine::runTest",
    "race_tests/test_race_reference.py::test_race[r0-cas_register-cas_from_same_value]",
    "race_tests/test_race_reference.py::test_race[r0-cas_register-writes_racing_reads]",
    "parallel_tests/test_parallel_reference.py::test_reference_is_linearizable_under_parallel_programs[cas_register]",
    "parallel_tests/test_parallel_wire_faults.py::test_parallel_programs_under_wire_faults[cas_register]",
    "tests/unit/test_plugin_conformance.py::test_step_is_pure_and_names_a_row_of_its_table[cas_register]",
    "tests/unit/test_plugin_conformance.py::test_its_declared_suite_parts_import_and_fit_together[cas_register]",
}


def _env(**extra: str) -> dict[str, str]:
    base = {key: value for key, value in os.environ.items() if key not in (ENV_PLUGINS, ENV_SYSTEM)}
    return {**base, **extra}


def _collected(env: dict[str, str]) -> set[str]:
    """Every node id `pytest --collect-only -q` collects from the project's test paths, as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_registered_from_outside_its_machine_races_parallel_programs_and_conformance_are_collected():
    registered = _collected(_env(**{ENV_PLUGINS: WHERE}))
    assert ITS_TESTS <= registered, sorted(ITS_TESTS - registered)
    unregistered = _collected(_env())
    assert not ITS_TESTS & unregistered, "collected without being registered"
    # What the registration adds is the example's, each named by it (and takes nothing away).
    assert unregistered <= registered, sorted(unregistered - registered)[:10]
    assert all("cas_register" in node or "CasRegister" in node for node in registered - unregistered)


@pytest.mark.emulator
def test_the_gate_passes_for_it(emulator, tmp_path):
    artifacts = tmp_path / "artifacts"
    gate = subprocess.run(
        [sys.executable, "-m", "fencecheck", "gate", "--plugin", WHERE, "--system", SPEC, "--profile", "ci",
         "--suite", "stateful", "--suite", "races", "--suite", "parallel", "--artifacts", str(artifacts)],
        cwd=ROOT, env=_env(FIRESTORE_EMULATOR_HOST=emulator.host), capture_output=True, text=True, timeout=1200,
        check=False,
    )
    output = gate.stdout + gate.stderr
    assert gate.returncode == 0, output[-6000:]
    evidence = json.loads((artifacts / "evidence.json").read_text())
    assert evidence["verdict"]["status"] == "pass", evidence["verdict"]
    # Its suites wrote their evidence into this gate's --artifacts (FENCECHECK_ARTIFACTS), where the report read it.
    assert evidence["stateful"]["status"] == evidence["races"]["status"] == "collected", evidence["verdict"]
    assert sorted(path.name for path in (artifacts / "races").glob("cas_register_*.json")), "no race result here"
    for suite in ("stateful", "races", "parallel"):  # each ran the example's tests, none failed
        junit = (artifacts / "junit" / f"{suite}.xml").read_text()
        assert "cas_register" in junit or "CasRegister" in junit, f"the {suite} suite ran nothing of the example"
        assert 'failures="0"' in junit and 'errors="0"' in junit, junit[:2000]


@pytest.mark.emulator
def test_the_gate_catches_its_known_bad_variant(emulator, tmp_path):
    gate = subprocess.run(
        [sys.executable, "-m", "fencecheck", "gate", "--plugin", WHERE, "--known-bad", "blind_compare_and_set",
         "--profile", "ci", "--suite", "stateful", "--suite", "races", "--artifacts", str(tmp_path / "artifacts")],
        cwd=ROOT, env=_env(FIRESTORE_EMULATOR_HOST=emulator.host), capture_output=True, text=True, timeout=1200,
        check=False,
    )
    assert gate.returncode == 0, (gate.stdout + gate.stderr)[-6000:]  # caught: what --known-bad asks
    assert "the known-bad variant blind_compare_and_set CAUGHT" in gate.stdout
    assert "FAILED [stateful] examples.cas_register.machine.TestCasRegisterMachine::runTest" in gate.stdout
    race = "race_tests.test_race_reference::test_race[r0-cas_register-cas_from_same_value]"
    assert f"FAILED [races] {race}" in gate.stdout
