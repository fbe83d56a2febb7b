"""`fencecheck emulator start|stop|status` with a fake emulator: a small Python HTTP server that answers `Ok`
on `GET /` like the real one, launched through the real start path (discovery replaced, nothing else)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import fencecheck.cli.emulator as emulator_service
import fencecheck.cli.main as cli
import fencecheck.emulator.lifecycle as emulator_module
from fencecheck.emulator.discovery import EmulatorCommand
from fencecheck.errors import FencecheckError

FAKE_SERVER = """
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"Ok")

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (it holds no port: it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] == "Z"


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "state"
    monkeypatch.setenv(emulator_service.ENV_STATE_DIR, str(directory))
    script = tmp_path / "fake_emulator.py"
    script.write_text(FAKE_SERVER)
    command = EmulatorCommand((sys.executable, str(script)), "fake emulator", "env-command")
    monkeypatch.setattr(emulator_module, "discover_emulator", lambda env=None: command)
    yield directory
    with contextlib.suppress(FencecheckError):  # a failed test must not leave a server behind
        state = emulator_service.load_state(directory)
        if state is not None and emulator_service.live_members(state):
            os.killpg(state.pid, signal.SIGKILL)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["emulator", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_start_status_stop_cycle(state_dir, capsys):
    code, out, err = _run(capsys, "start")
    assert code == 0, err
    state = emulator_service.load_state(state_dir)
    assert state is not None and out == f"export FIRESTORE_EMULATOR_HOST={state.host}\n"  # eval-able
    assert "started the Firestore emulator" in err and "fencecheck emulator stop" in err
    assert state.host == f"127.0.0.1:{state.port}" and Path(state.log_path).parent == state_dir
    assert os.getpgid(state.pid) == state.pid  # its own process group
    assert state.pid not in [h.pid for h in emulator_module.running_emulators()]  # detached: atexit won't stop it

    code, out, err = _run(capsys, "status")
    assert (code, out) == (0, f"export FIRESTORE_EMULATOR_HOST={state.host}\n") and "running" in err

    code, out, err = _run(capsys, "start")
    assert code == 0 and "already running" in err and out == f"export FIRESTORE_EMULATOR_HOST={state.host}\n"
    assert emulator_service.load_state(state_dir) == state  # the same one, not a second

    code, out, err = _run(capsys, "stop")
    assert code == 0 and out == "unset FIRESTORE_EMULATOR_HOST\n" and "stopped" in err
    assert _gone(state.pid) and not (state_dir / "emulator.json").exists()

    code, out, err = _run(capsys, "stop")  # idempotent
    assert code == 0 and "not running" in err
    code, out, err = _run(capsys, "status")
    assert code == 3 and out == "" and "not running" in err


def test_busy_port_is_a_clear_error(state_dir, capsys):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, out, err = _run(capsys, "start", "--port", str(port))
    assert code == 2 and out == ""
    assert f"port {port} on 127.0.0.1 is already in use" in err and "leave out --port" in err
    assert "port=None" not in err  # the library's hint, not the command line's
    assert not (state_dir / "emulator.json").exists()


def test_port_must_be_a_port(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.build_parser().parse_args(["emulator", "start", "--port", "70000"])
    assert caught.value.code == 2 and "not a TCP port" in capsys.readouterr().err


def test_stale_state_is_reported_and_cleared(state_dir, capsys):
    # A record whose pid lives but is not ours (this test process lacks the token): never signalled.
    state = emulator_service.State(os.getpid(), "127.0.0.1:9", 9, "/nowhere.log", "0123456789ab", "2026-01-01", "x")
    emulator_service._save_state(state_dir, state)
    code, _out, err = _run(capsys, "status")
    assert code == 3 and "is gone" in err
    code, out, err = _run(capsys, "stop")
    assert code == 0 and "already gone" in err and out == "unset FIRESTORE_EMULATOR_HOST\n"
    assert not (state_dir / "emulator.json").exists()


def test_stale_state_does_not_block_a_start(state_dir, capsys):
    stale = emulator_service.State(2**22 + 1, "127.0.0.1:9", 9, "/nowhere.log", "0123456789ab", "2026-01-01", "x")
    emulator_service._save_state(state_dir, stale)
    code, _out, err = _run(capsys, "start")
    assert code == 0 and "is gone; starting a new one" in err
    assert emulator_service.load_state(state_dir).pid != stale.pid
    assert _run(capsys, "stop")[0] == 0


def test_running_but_not_answering_is_exit_1(state_dir, capsys):
    token = "feedfacecafe"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                               start_new_session=True, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, emulator_service.ENV_TOKEN: token})
    try:
        # Until the child runs its own code, /proc may still show it mid-exec (no environment, so no token).
        assert sleeper.stdout.readline() == "up\n"
        state = emulator_service.State(sleeper.pid, "127.0.0.1:9", 9, "/nowhere.log", token, "2026-01-01", "x")
        emulator_service._save_state(state_dir, state)
        code, _out, err = _run(capsys, "status")
        assert code == 1 and "not answering" in err
        code, _out, err = _run(capsys, "start")
        assert code == 2 and "does not answer" in err and "fencecheck emulator stop" in err
        code, _out, err = _run(capsys, "stop")  # stops it all the same: it is ours (it carries the token)
        assert code == 0 and "stopped" in err
        assert sleeper.wait(timeout=10) == -signal.SIGTERM
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_unreadable_state_file_is_a_clear_error(state_dir, capsys):
    state_dir.mkdir(parents=True)
    for text in (json.dumps({"format": "something else"}), "[1]", "{"):
        (state_dir / "emulator.json").write_text(text)
        code, _out, err = _run(capsys, "status")
        assert code == 2 and "cannot be read" in err and "delete the file" in err


def test_state_dir_defaults_to_the_project(monkeypatch):
    monkeypatch.delenv(emulator_service.ENV_STATE_DIR, raising=False)
    assert emulator_service.state_dir() == emulator_service.PROJECT_ROOT / ".fencecheck"
    assert emulator_service.state_dir({emulator_service.ENV_STATE_DIR: "/x/y"}) == Path("/x/y")


def test_wait_helper_sees_a_reaped_process_as_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    deadline = time.monotonic() + 5
    while not _gone(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child.pid)
