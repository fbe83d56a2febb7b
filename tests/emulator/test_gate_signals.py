"""SIGINT or SIGTERM sent to the gate's process alone (as `timeout`, container runtimes and service managers send
it) stops its suite's pytest, the xdist workers and its emulator, writes incomplete evidence and exits 128 + the
signal's number. SIGKILL cannot be handled: then the kernel ends the suite and the emulator (parent-death
signals), and nothing of the tree is left either.

A real gate, with its own real emulator, runs its "unit" suite in a scratch project (cwd) whose two tests wait
until the test ends them; the signal goes out once both xdist workers are inside a test. Once more with two
suites at a time: the stateful suite and the races suite beside it (a thread of the gate runs that one). The
time from the signal to the last process of the gate's tree gone is printed, not asserted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.process_tree import command_of as _command
from tests.process_tree import descendants as _descendants
from tests.process_tree import running as _running

pytestmark = [pytest.mark.emulator, pytest.mark.harness]  # the gate deselects harness tests

WAITING_TEST = """
import os, time
from pathlib import Path

def _wait():
    Path(os.environ["GATE_SIGNAL_TEST_DIR"], f"running-{os.getpid()}").touch()
    time.sleep(600)  # ended by the gate's signal; the outer test stops everything within a minute either way

def test_one(): _wait()
def test_two(): _wait()
"""


def _until(condition, timeout: float, what: str, gate: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if gate.poll() is not None:
            raise AssertionError(f"the gate exited ({gate.returncode}) while waiting until {what}: "
                                 f"{gate.communicate()[0][-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


# (suites, their test directories, workers): one suite on two workers; or the stateful suite and, beside it in
# the gate's second lane (fencecheck.cli.main.schedule), the races suite, one worker each. Either way two tests wait.
ONE_SUITE = (("unit",), ("tests/unit",), "2")
TWO_LANES = (("stateful", "races"), ("stateful_tests", "race_tests"), "1")


@pytest.mark.parametrize(("signum", "layout"), [
    (signal.SIGTERM, ONE_SUITE), (signal.SIGINT, ONE_SUITE), (signal.SIGKILL, ONE_SUITE), (signal.SIGTERM, TWO_LANES),
], ids=["SIGTERM", "SIGINT", "SIGKILL", "SIGTERM-two-lanes"])
def test_a_signal_to_the_gate_alone_stops_its_whole_tree(tmp_path, signum, layout):
    suites, directories, workers = layout
    project, marks = tmp_path / "project", tmp_path / "marks"
    marks.mkdir()
    for directory in directories:
        (project / directory).mkdir(parents=True)
        (project / directory / "test_waiting.py").write_text(WAITING_TEST)
    (project / "tests" / "systems").mkdir(parents=True)  # the unit suite's other path (no test of its own here)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text('pytest_plugins = ["fencecheck.suites.pytest_plugin"]\n')
    env = {k: v for k, v in os.environ.items() if k != "FIRESTORE_EMULATOR_HOST"}  # the gate starts its own
    env.pop("PYTEST_XDIST_WORKER", None)
    env["GATE_SIGNAL_TEST_DIR"] = str(marks)
    artifacts = tmp_path / "artifacts"
    gate = subprocess.Popen(
        [sys.executable, "-m", "fencecheck", "gate", *(f"--suite={suite}" for suite in suites), "--workers", workers,
         "--profile", "ci", "--artifacts", str(artifacts)],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    tree: dict[int, str] = {}
    try:
        _until(lambda: len(list(marks.iterdir())) == 2, 120, "two xdist workers run a test", gate)
        tree = _descendants(gate.pid)
        commands = [_command(pid) for pid in tree]
        assert any("CloudFirestore" in c for c in commands), commands  # the gate's emulator
        assert sum("pytest" in c for c in commands) >= 1 and len(tree) >= 4, commands  # controller + 2 workers

        signalled = time.monotonic()
        os.kill(gate.pid, signum)  # the gate's pid only, not its group
        try:
            output, _ = gate.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("60 s after the signal the gate's output is still open: the gate, or a process "
                                 f"it left, still runs: {[_command(p) for p, s in tree.items() if _running(p, s)]}"
                                 ) from None
        deadline = signalled + 30
        while (left := [pid for pid, start in tree.items() if _running(pid, start)]) and time.monotonic() < deadline:
            time.sleep(0.02)
        gone_after = time.monotonic() - signalled
        print(f"{signal.Signals(signum).name}: gate exited, last process of its tree gone {gone_after:.2f} s "
              f"after the signal ({len(tree)} processes)")
        assert not left, f"still running {gone_after:.0f} s after the signal: {[_command(p) for p in left]}"
        if signum == signal.SIGKILL:  # nothing to write evidence with; the kernel ends the rest (PDEATHSIG)
            assert gate.returncode == -signal.SIGKILL, output
            return
        assert gate.returncode == 128 + signum, output
        evidence = json.loads((artifacts / "evidence.json").read_text())
        assert evidence["verdict"]["status"] == "incomplete", evidence["verdict"]
        assert "interrupted" in output
    finally:
        if gate.poll() is None:
            gate.kill()
            gate.wait()
        for pid, start in tree.items():
            if _running(pid, start):
                os.kill(pid, signal.SIGKILL)
