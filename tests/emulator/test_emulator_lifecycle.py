"""The emulator lifecycle against the real Firestore emulator.

Most tests use a private emulator (separate from the session one) so that stopping it, or
counting its lock timeouts, cannot disturb other tests.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core.exceptions import Aborted
from google.cloud import firestore

from fencecheck.emulator.lifecycle import (
    EmulatorCommand,
    EmulatorHandle,
    connect_existing,
    discover_emulator,
    emulator_from_environment,
    find_free_port,
    new_run_token,
    project_id_for,
    start_emulator,
)
from fencecheck.errors import EmulatorStartError, EmulatorUnreachableError, PortInUseError, UsageError

pytestmark = [pytest.mark.emulator, pytest.mark.harness]  # the gate deselects harness tests

REPO_ROOT = Path(__file__).resolve().parents[2]
_RUN = new_run_token()
_ids = iter(range(1, 10**6))


def _project() -> str:
    return project_id_for(_RUN, "lifecycle", next(_ids))


def _emulator_pids(port: int) -> list[int]:
    """Live emulator processes (by command line) listening on ``port``; zombies have no cmdline."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        is_emulator = any(b"CloudFirestore" in arg or b"cloud-firestore-emulator" in arg for arg in args)
        if is_emulator and b"--port" in args and args[args.index(b"--port") + 1 :][:1] == [str(port).encode()]:
            pids.append(int(entry.name))
    return pids


def _wait_for_exit(pidfd: int, timeout: float = 15.0) -> bool:
    """Block until the process behind ``pidfd`` has exited (pidfds become readable then)."""
    readable, _, _ = select.select([pidfd], [], [], timeout)
    return bool(readable)


def _eventually(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorHandle]:
    with start_emulator(log_dir=tmp_path_factory.mktemp("private-emulator")) as handle:
        yield handle


def test_private_emulator_answers_on_its_own_port(private, tmp_path):
    assert private.started_by_us and private.host == f"127.0.0.1:{private.port}"
    with urllib.request.urlopen(private.base_url + "/", timeout=5) as response:
        assert response.read().strip() == b"Ok"
    assert _emulator_pids(private.port) == [private.pid]
    assert private.log_path.name == f"emulator-{private.port}.log" and private.log_path.exists()
    assert private.ready_seconds is not None and private.ready_seconds < 30


def test_reset_clears_one_project_and_leaves_the_other(private):
    kept, cleared = _project(), _project()
    for project in (kept, cleared):
        db = private.client(project)
        for n in range(3):
            db.collection("things").document(f"d{n}").set({"n": n})
        db.collection("things").document("d0").collection("sub").document("s").set({"deep": True})
    private.reset(cleared)
    cleared_db, kept_db = private.client(cleared), private.client(kept)
    assert list(cleared_db.collection("things").stream()) == []
    assert not cleared_db.collection("things").document("d0").collection("sub").document("s").get().exists
    assert len(list(kept_db.collection("things").stream())) == 3
    assert kept_db.collection("things").document("d0").collection("sub").document("s").get().exists


def test_uppercase_project_id_is_refused_before_the_emulator_sees_it(private):
    with pytest.raises(UsageError, match="lowercase"):
        private.reset("Demo_Project")


DENY_ALL = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /{document=**} { allow read, write: if false; }
  }
}
"""


def test_rules_load_apply_and_a_compile_error_is_a_usage_error(private):
    project = _project()
    private.client(project).collection("c").document("d").set({"x": 1})  # owner bypasses rules
    private.load_rules(project, DENY_ALL)
    unauthenticated = f"{private.base_url}/v1/projects/{project}/databases/(default)/documents/c/d"
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(unauthenticated, timeout=5)
    assert denied.value.code == 403
    assert "rules" in private.rule_coverage(project)

    with pytest.raises(UsageError, match="Error compiling rules") as caught:
        private.load_rules(project, DENY_ALL.replace("if false", "iff false"))
    assert isinstance(caught.value, ValueError)


def test_lock_timeouts_in_the_log_are_counted(private):
    db = private.client(_project())
    doc = db.collection("counters").document("one")
    doc.set({"n": 0})
    before = private.lock_timeout_count()
    barrier = threading.Barrier(2, timeout=30)
    outcomes: list[object] = []

    @firestore.transactional
    def increment(transaction):
        snapshot = doc.get(transaction=transaction)  # shared lock
        barrier.wait()  # both hold their shared lock before either commits: a lock conflict
        transaction.update(doc, {"n": snapshot.get("n") + 1})

    def run() -> None:
        try:
            increment(db.transaction(max_attempts=1))
            outcomes.append("committed")
        except Exception as exc:  # the client wraps the final Aborted in a ValueError
            barrier.abort()
            outcomes.append(exc.__cause__ or exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    aborted = [o for o in outcomes if isinstance(o, Aborted)]
    assert aborted and all("lock timeout" in str(o) for o in aborted), outcomes
    # The emulator may log the timeout just after answering the client.
    assert _eventually(lambda: private.lock_timeout_count() >= before + len(aborted))
    assert private.lock_timeout_count() == before + len(aborted)


def test_connect_existing_never_stops_someone_elses_emulator(private):
    other = connect_existing(private.host)
    assert not other.started_by_us and other.lock_timeout_count() is None
    other.stop()
    assert private.ping()


def test_stop_leaves_no_jvm_and_is_idempotent(tmp_path):
    handle = start_emulator(log_dir=tmp_path)
    assert _emulator_pids(handle.port) == [handle.pid]
    handle.stop()
    assert _emulator_pids(handle.port) == []
    assert not handle.ping(timeout=0.5)
    handle.stop()


def test_stop_kills_java_left_behind_by_a_launcher_script(tmp_path):
    # Like gcloud's cloud_firestore_emulator script: java runs as a child, so killing only the
    # script's pid would leave java holding the port. The whole process group must go.
    jar_command = discover_emulator()
    launcher = tmp_path / "launcher.sh"
    launcher.write_text(f'#!/bin/sh\n{shlex.join(jar_command.argv_prefix)} "$@"\necho launcher done\n')
    launcher.chmod(0o755)
    command = EmulatorCommand((str(launcher),), "test launcher script", "env-command")
    with start_emulator(log_dir=tmp_path, command=command) as handle:
        jvms = _emulator_pids(handle.port)
        assert len(jvms) == 1 and jvms != [handle.pid]
    assert _emulator_pids(handle.port) == []


def test_explicit_busy_port_is_port_in_use(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PortInUseError, match=str(port)) as caught:
            start_emulator(port=port, log_dir=tmp_path)
    assert isinstance(caught.value, OSError)
    assert list(tmp_path.iterdir()) == []  # nothing was launched


def test_early_exit_reports_the_log_path_and_tail(tmp_path):
    script = "import sys; print('boom: emulator cannot start'); sys.exit(3)"
    command = EmulatorCommand((sys.executable, "-c", script), "failing command", "env-command")
    with pytest.raises(EmulatorStartError) as caught:
        start_emulator(log_dir=tmp_path, command=command, quiet=True)
    message = str(caught.value)
    assert "exited with code 3" in message and "boom: emulator cannot start" in message
    assert str(tmp_path) in message


def test_unreachable_emulator_host_names_the_variable(tmp_path):
    closed = f"127.0.0.1:{find_free_port()}"  # bound and released: nothing listens there
    with pytest.raises(EmulatorUnreachableError) as caught:
        connect_existing(closed)
    assert f"FIRESTORE_EMULATOR_HOST={closed}" in str(caught.value)
    assert isinstance(caught.value, ConnectionError)
    with pytest.raises(EmulatorUnreachableError):
        emulator_from_environment({"FIRESTORE_EMULATOR_HOST": closed}, log_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []  # and nothing was started instead


CHILD = """
import faulthandler
import signal
import sys
from pathlib import Path
from fencecheck.emulator.lifecycle import start_emulator

faulthandler.register(signal.SIGUSR1)  # the test asks for our stacks if we do not exit in time
# A launcher without job control (`cmd &` in a script, nohup) starts us with SIGINT ignored, and Python keeps
# an inherited SIG_IGN: restore the KeyboardInterrupt an interactive process gets.
signal.signal(signal.SIGINT, signal.default_int_handler)

with start_emulator(log_dir=Path(sys.argv[1]), quiet=True) as handle:
    print("ready", handle.port, handle.pid, flush=True)
    sys.stdin.read()  # blocks until a signal arrives
"""


@pytest.mark.parametrize(
    ("signum", "check_returncode"),
    [
        (signal.SIGTERM, lambda rc: rc == 128 + signal.SIGTERM),  # our handler: stop, then exit 143
        (signal.SIGINT, lambda rc: rc != 0),  # KeyboardInterrupt unwinds through the with block
        (signal.SIGKILL, lambda rc: rc == -signal.SIGKILL),  # nothing runs: PR_SET_PDEATHSIG must act
    ],
    ids=["SIGTERM", "SIGINT", "SIGKILL"],
)
def test_no_jvm_outlives_a_signalled_python_process(tmp_path, signum, check_returncode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("FIRESTORE_EMULATOR_HOST", None)
    with open(tmp_path / "child.stderr", "wb") as stderr:
        child = subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / "logs")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=REPO_ROOT, text=True,
        )
    try:
        line = child.stdout.readline().split()
        assert line[:1] == ["ready"], (tmp_path / "child.stderr").read_text()
        port, jvm_pid = int(line[1]), int(line[2])
        jvm = os.pidfd_open(jvm_pid)  # taken before the signal, so a reused pid cannot fool us
        try:
            child.send_signal(signum)
            try:
                returncode = child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGUSR1)  # where is it stuck? (faulthandler writes to its stderr)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=2)  # time for the dump; SIGUSR1 does not end it
                child.kill()
                child.wait()
                pytest.fail(f"the child did not exit within 60 s of {signum.name}:\n"
                            + (tmp_path / "child.stderr").read_text()[-6000:])
            assert _wait_for_exit(jvm), f"JVM {jvm_pid} still alive after the child exited"
        finally:
            os.close(jvm)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdin.close()
        child.stdout.close()
    assert check_returncode(returncode), (returncode, (tmp_path / "child.stderr").read_text())
    assert _emulator_pids(port) == []


def test_session_fixtures_share_one_emulator(emulator, project_id, firestore_db, request):
    firestore_db.collection("c").document("d").set({"ok": True})
    assert firestore_db.collection("c").document("d").get().get("ok") is True
    workerinput = getattr(request.config, "workerinput", None)
    worker = workerinput["workerid"] if workerinput else "main"
    assert f"-{worker}-" in project_id and len(project_id) <= 30
    assert os.environ["FIRESTORE_EMULATOR_HOST"] == emulator.host  # visible to code under test
    if workerinput and os.environ.get("FENCECHECK_EMULATOR_LOG"):
        # xdist: the controller started the emulator; workers only connect, yet see its log.
        assert not emulator.started_by_us
        assert emulator.lock_timeout_count() is not None
