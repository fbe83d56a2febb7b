"""`fencecheck emulator start|status|stop` with the real emulator, each command its own process: the emulator
outlives the command that started it, and nothing is left running after `stop`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import fencecheck.cli.emulator as emulator_service
from fencecheck.emulator.lifecycle import EmulatorHandle

pytestmark = [pytest.mark.emulator, pytest.mark.harness]  # the gate deselects harness tests

ROOT = Path(__file__).resolve().parents[2]


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (it holds no port: it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] == "Z"


class EmulatorCommands:
    """`python -m fencecheck emulator ...` in a subprocess, with its own state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.env = {**os.environ, emulator_service.ENV_STATE_DIR: str(state_dir)}
        self.env.pop("FIRESTORE_EMULATOR_HOST", None)  # status and stop must not need it

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "fencecheck", "emulator", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def cli(tmp_path: Path):
    commands = EmulatorCommands(tmp_path / "state")
    yield commands
    state = emulator_service.load_state(commands.state_dir)  # a failed test must not leave a JVM behind
    if state is not None and emulator_service.live_members(state):
        os.killpg(state.pid, signal.SIGKILL)


def test_start_status_stop(cli):
    started = cli("start")
    assert started.returncode == 0, started.stderr
    state = emulator_service.load_state(cli.state_dir)
    assert started.stdout == f"export FIRESTORE_EMULATOR_HOST={state.host}\n"
    # The command has exited; the emulator answers on.
    assert EmulatorHandle(state.host).ping(timeout=5)
    assert emulator_service.live_members(state) and Path(state.log_path).is_file()

    status = cli("status")
    assert status.returncode == 0 and "running" in status.stderr and state.host in status.stdout

    again = cli("start")
    assert again.returncode == 0 and "already running" in again.stderr and again.stdout == started.stdout

    stopped = cli("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stderr
    assert _gone(state.pid)
    assert not emulator_service.live_members(state)
    assert not EmulatorHandle(state.host).ping(timeout=1)
    assert not (cli.state_dir / "emulator.json").exists()

    assert cli("status").returncode == 3
    again = cli("stop")
    assert again.returncode == 0 and "not running" in again.stderr


def test_busy_port(cli):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = cli("start", "--port", str(port))
    assert done.returncode == 2 and done.stdout == ""
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr and "--port" in done.stderr
    assert not (cli.state_dir / "emulator.json").exists()
