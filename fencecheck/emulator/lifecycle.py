"""Start, reach, reset and stop the Firestore emulator.

``start_emulator()`` launches the emulator (found by ``fencecheck.emulator.discovery``) on a free loopback port,
in its own process group, with its output in a log file, and waits until ``GET /`` answers ``Ok``.
``connect_existing()`` wraps an emulator somebody else runs (``FIRESTORE_EMULATOR_HOST``); it is
never stopped by us. ``emulator_from_environment()`` picks one of the two.

No JVM started here may outlive this process: handles stop on ``with`` exit, on ``atexit``, on
SIGTERM (handler installed from the main thread, chaining the previous one) and, on Linux, the
kernel kills the JVM if the thread that started it dies (``PR_SET_PDEATHSIG``, set by ``setpriv`` before
the JVM's exec: no Python runs between fork and exec), which covers SIGKILL of the Python process.
"""

from __future__ import annotations

import atexit
import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fencecheck.emulator.discovery import (
    ENV_HOST,
    EmulatorCommand,
    discover_emulator,
    emulator_version,
    guard_emulator_target,
    java_version,
    loopback_emulator_host,
    new_run_token,
    parse_emulator_host,
    project_id_for,
)
from fencecheck.errors import (
    EmulatorStartError,
    EmulatorUnreachableError,
    PortInUseError,
    UsageError,
)

if TYPE_CHECKING:
    from google.cloud import firestore

__all__ = [
    "LOCK_TIMEOUT_MARKER", "EmulatorCommand", "EmulatorHandle", "close_client", "connect_existing",
    "discover_emulator", "emulator_from_environment", "find_free_port", "new_run_token",
    "parse_emulator_host", "project_id_for", "running_emulators", "set_parent_death_signal", "start_emulator",
    "stop_all",
]

# The emulator logs this line once per lock timeout (followed by a stack trace), measured by
# provoking two overlapping read-write transactions on one document.
LOCK_TIMEOUT_MARKER = "com.google.cloud.datastore.core.exception.DatastoreException: Transaction lock timeout."
LOOPBACK = "127.0.0.1"
PROJECT_SOURCE = "the project id given to EmulatorHandle (its project_id argument)"
DEFAULT_LOG_DIR = Path("artifacts/emulator")
_BIND_FAILURE = b"java.net.BindException"
_PR_SET_PDEATHSIG = 1

_registry: set[EmulatorHandle] = set()
_registry_lock = threading.RLock()  # the SIGTERM handler may run while the main thread holds it
_env_lock = threading.Lock()
_sigterm_installed = False


class _LogScanner:
    """Counts marker lines in a growing log, reading only what was appended since the last call."""

    def __init__(self, path: Path, marker: str) -> None:
        self._path, self._marker = path, marker.encode()
        self._offset, self._count, self._partial = 0, 0, b""
        self._lock = threading.Lock()

    def count(self) -> int:
        with self._lock:
            try:
                with open(self._path, "rb") as log:
                    if os.fstat(log.fileno()).st_size < self._offset:  # replaced or truncated
                        self._offset, self._count, self._partial = 0, 0, b""
                    log.seek(self._offset)
                    while chunk := log.read(1 << 20):
                        self._offset += len(chunk)
                        lines = (self._partial + chunk).split(b"\n")
                        self._partial = lines.pop()  # may be an unfinished line
                        self._count += sum(1 for line in lines if line.rstrip(b"\r") == self._marker)
            except FileNotFoundError:
                pass
            return self._count


class EmulatorHandle:
    """A running emulator: ours (``started_by_us``) or one found via ``FIRESTORE_EMULATOR_HOST``."""

    def __init__(
        self,
        host: str,
        *,
        process: subprocess.Popen[bytes] | None = None,
        log_path: Path | None = None,
        command: EmulatorCommand | None = None,
    ) -> None:
        loopback_emulator_host(host)  # every request and client of a handle stays on this machine
        self.host = host
        self.base_url = f"http://{host}"
        self.log_path = log_path
        self.command = command
        self.ready_seconds: float | None = None
        self._process = process
        self._scanner = _LogScanner(log_path, LOCK_TIMEOUT_MARKER) if log_path else None
        self._stop_lock = threading.RLock()  # re-entrant: the SIGTERM handler may interrupt stop()
        self._stopping = self._stopped = False

    @property
    def started_by_us(self) -> bool:
        return self._process is not None

    @property
    def port(self) -> int:
        return parse_emulator_host(self.host)[1]

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def __repr__(self) -> str:
        return f"EmulatorHandle(host={self.host!r}, started_by_us={self.started_by_us})"

    def __enter__(self) -> EmulatorHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- HTTP -------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")  # without it: 404
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()

    def ping(self, timeout: float = 2.0) -> bool:
        """True if ``GET /`` answers ``Ok``."""
        try:
            return self._request("GET", "/", timeout=timeout).strip() == b"Ok"
        except (OSError, http.client.HTTPException):  # URLError is an OSError
            return False

    def _project_path(self, project_id: str) -> str:
        """The emulator's REST path of one project, after the guard (`guard_emulator_target`)."""
        if not isinstance(project_id, str) or project_id != project_id.lower() or "_" in project_id:
            raise UsageError(
                f"project id {project_id!r} must be lowercase without underscores "
                "(the emulator answers HTTP 500 'Invalid app id'); use project_id_for()."
            )
        guard_emulator_target(self.host, project_id, project_source=PROJECT_SOURCE)
        return "/emulator/v1/projects/" + urllib.parse.quote(project_id, safe="")

    def reset(self, project_id: str) -> None:
        """Delete every document of one project (other projects are untouched)."""
        self._request("DELETE", self._project_path(project_id) + "/databases/(default)/documents")

    def load_rules(self, project_id: str, rules_text: str) -> None:
        """Replace the security rules of one project; a compile error raises UsageError."""
        body = {"rules": {"files": [{"content": rules_text}]}}
        try:
            self._request("PUT", self._project_path(project_id) + ":securityRules", body)
        except urllib.error.HTTPError as exc:
            if exc.code != 400:
                raise
            try:
                message = json.loads(exc.read())["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = f"HTTP 400 {exc.reason}"
            raise UsageError(f"security rules for {project_id} were rejected: {message}") from None

    def rule_coverage(self, project_id: str) -> dict[str, Any]:
        return json.loads(self._request("GET", self._project_path(project_id) + ":ruleCoverage"))

    def client(self, project_id: str) -> firestore.Client:
        """A Firestore client for ``project_id`` talking to this emulator without credentials. Every client
        fencecheck makes is made here, after the guard: a loopback host and a ``demo-`` project."""
        self._project_path(project_id)  # guard_emulator_target, before anything of the client is touched
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import firestore

        # The client reads FIRESTORE_EMULATOR_HOST once, in __init__; restore the old value so a
        # private emulator does not redirect clients other code creates later.
        with _env_lock:
            previous = os.environ.get(ENV_HOST)
            os.environ[ENV_HOST] = self.host
            try:
                return firestore.Client(project=project_id, credentials=AnonymousCredentials())
            finally:
                if previous is None:
                    os.environ.pop(ENV_HOST, None)
                else:
                    os.environ[ENV_HOST] = previous

    # --- evidence ---------------------------------------------------------------------------
    def lock_timeout_count(self) -> int | None:
        """Lock timeouts logged so far, or None when we cannot see the emulator's log."""
        return self._scanner.count() if self._scanner else None

    def emulator_version(self) -> str | None:
        return emulator_version(self.command) if self.command else None

    def java_version(self) -> str | None:
        return java_version(self.command.java) if self.command and self.command.java else None

    # --- lifecycle --------------------------------------------------------------------------
    def detach(self) -> int:
        """Give up ownership: this process will no longer stop the emulator (not on exit, not on SIGTERM),
        so it outlives us. Only sensible for one started with ``kill_with_parent=False``; ``fencecheck
        emulator stop`` ends it later by its process group. Returns that group's id (the emulator's pid)."""
        if self._process is None:
            raise UsageError("only an emulator started by this process can be detached")
        with _registry_lock:
            _registry.discard(self)
        return self._process.pid

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the emulator's process group, SIGKILL it after ``timeout``. Idempotent;
        does nothing for an emulator we did not start."""
        if self._process is None:
            return
        with self._stop_lock:
            if self._stopping:
                # Re-entered by the SIGTERM handler while stop() was waiting on this thread:
                # waiting again could deadlock inside Popen.wait, so just kill and let exit reap.
                _signal_group(self._process.pid, signal.SIGKILL)
                return
            if not self._stopped:
                self._stopping = True
                try:
                    _terminate_group(self._process, timeout)
                finally:
                    self._stopping = False
                self._stopped = True
            with _registry_lock:
                _registry.discard(self)


def _signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to a process group; False if the group no longer exists."""
    try:
        os.killpg(pgid, signum)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # pgid reused by someone else's group: not ours to signal
        return False


def _terminate_group(process: subprocess.Popen[bytes], timeout: float) -> None:
    pgid = process.pid  # start_new_session=True makes the child its group's leader
    deadline = time.monotonic() + timeout
    _signal_group(pgid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    # A launcher script (FENCECHECK_EMULATOR_COMMAND) may exit at once and leave java behind in
    # the group, so wait for the group, not just the leader.
    while process.poll() is not None and _signal_group(pgid, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process.poll() is None or _signal_group(pgid, 0):
        _signal_group(pgid, signal.SIGKILL)
        process.wait()


def stop_all() -> None:
    """Stop every emulator this process started and has not stopped yet."""
    with _registry_lock:
        handles = list(_registry)
    for handle in handles:
        handle.stop()


def running_emulators() -> list[EmulatorHandle]:
    with _registry_lock:
        return list(_registry)


atexit.register(stop_all)


def _install_sigterm_handler() -> None:
    """On SIGTERM stop our emulators, then chain the previous handler or exit with 128+15."""
    global _sigterm_installed
    if _sigterm_installed or threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:  # the process chose to survive SIGTERM; so do its emulators
        return

    owner = os.getpid()

    def on_sigterm(signum: int, frame: Any) -> None:
        if os.getpid() != owner:  # a forked child (a checker's worker): the emulators are its parent's, not its own
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        stop_all()
        if callable(previous):
            previous(signum, frame)
            return
        # os._exit, not SystemExit: pytest reports SystemExit raised inside a test as a failure
        # and carries on, and default SIGTERM semantics are "terminate now" anyway.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
    _sigterm_installed = True


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def set_parent_death_signal(signum: int) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent exits (Linux only).

    Strictly: when the parent *thread* that forked us exits. Returns False where unsupported.
    """
    prctl = _prctl()
    return prctl is not None and prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signum)) == 0


def parent_death_prefix(signum: int = signal.SIGKILL) -> list[str]:
    """The argv prefix that makes the kernel send ``signum`` to the child when this thread dies:
    util-linux's ``setpriv --pdeathsig`` sets it and then execs the command, so the pid stays the command's.

    Not a ``preexec_fn``: Python code between fork and exec forces a plain fork, whose at-fork handlers run in
    the child, and gRPC's, in a process with live channels, aborted an emulator at start (SIGABRT). Without
    one, subprocess forks through vfork/posix_spawn and runs no Python in the child. The signal follows the
    forking *thread*, so it is asked only from the main thread; where setpriv is missing (not Linux) the
    other ties hold: the process group, atexit and the SIGTERM handler.
    """
    if threading.current_thread() is not threading.main_thread() or not sys.platform.startswith("linux"):
        return []
    setpriv = shutil.which("setpriv")
    return [] if setpriv is None else [setpriv, "--pdeathsig", signal.Signals(signum).name.removeprefix("SIG"), "--"]


def find_free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _check_port_free(port: int) -> None:
    with socket.socket() as probe:
        # SO_REUSEADDR: a port in TIME_WAIT is usable by the emulator, only a listener blocks it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} on {LOOPBACK} is already in use ({exc.strerror}). "
                "Stop whatever listens there (ss -ltnp), or pass port=None to pick a free port."
            ) from None


def _log_tail(path: Path, lines: int = 15, max_chars: int = 3000) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - 64 * 1024))
            text = log.read().decode(errors="replace")
    except OSError:
        return "(log unreadable)"
    return "\n".join(text.splitlines()[-lines:])[-max_chars:]


def _launch(command: EmulatorCommand, port: int, log_path: Path, rules_path: Path | None,
            kill_with_parent: bool) -> EmulatorHandle:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [*(parent_death_prefix() if kill_with_parent else ()), *command.argv(LOOPBACK, port, rules_path)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, signalled as a whole on stop
        )
    handle = EmulatorHandle(f"{LOOPBACK}:{port}", process=process, log_path=log_path, command=command)
    with _registry_lock:
        _registry.add(handle)
    return handle


def _lost_port_race(log_path: Path) -> bool:
    try:
        return _BIND_FAILURE in log_path.read_bytes()[:1 << 20]
    except OSError:
        return False


def _wait_ready(handle: EmulatorHandle, timeout: float) -> None:
    process = handle._process
    assert process is not None and handle.log_path is not None
    deadline = time.monotonic() + timeout
    while not handle.ping(timeout=1.0):
        if process.poll() is not None:
            raise EmulatorStartError(
                f"the Firestore emulator exited with code {process.returncode} before answering on "
                f"{handle.host}. Log: {handle.log_path}\n{_log_tail(handle.log_path)}"
            )
        if time.monotonic() > deadline:
            raise EmulatorStartError(
                f"the Firestore emulator did not answer on {handle.base_url}/ within {timeout:.0f} s. "
                f"Log: {handle.log_path}\n{_log_tail(handle.log_path)}"
            )
        time.sleep(0.05)


def start_emulator(
    *,
    port: int | None = None,
    rules_path: Path | None = None,
    log_dir: Path | None = None,
    log_path: Path | None = None,
    command: EmulatorCommand | None = None,
    ready_timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
    quiet: bool = False,
    kill_with_parent: bool = True,
) -> EmulatorHandle:
    """Start an emulator on 127.0.0.1 (a free port unless ``port`` is given) and wait until ready.

    The log goes to ``log_path`` or ``<log_dir>/emulator-<port>.log`` (default
    ``artifacts/emulator``). Use the handle as a context manager, or call ``stop()``.
    """
    command = command or discover_emulator(env)
    _install_sigterm_handler()
    attempts = 1 if port is not None else 3  # a picked port can be taken before the JVM binds it
    for attempt in range(1, attempts + 1):
        if port is not None:
            _check_port_free(port)
        chosen = port if port is not None else find_free_port()
        path = log_path or (log_dir or DEFAULT_LOG_DIR) / f"emulator-{chosen}.log"
        if not quiet:
            print(f"starting Firestore emulator ({command.description}) on {LOOPBACK}:{chosen} ...",
                  end="", file=sys.stderr, flush=True)
        started = time.monotonic()
        handle = _launch(command, chosen, path, rules_path, kill_with_parent)
        try:
            _wait_ready(handle, ready_timeout)
        except BaseException as exc:  # also KeyboardInterrupt: never leave the JVM behind
            handle.stop()
            if not quiet:
                print(" failed", file=sys.stderr, flush=True)
            if attempt < attempts and isinstance(exc, EmulatorStartError) and _lost_port_race(path):
                continue
            raise
        handle.ready_seconds = time.monotonic() - started
        if not quiet:
            print(f" ready in {handle.ready_seconds:.1f} s", file=sys.stderr, flush=True)
        return handle
    raise AssertionError("unreachable")


def connect_existing(
    value: str, *, env_var: str = ENV_HOST, log_path: Path | None = None, timeout: float = 5.0
) -> EmulatorHandle:
    """Wrap an emulator someone else runs at ``value`` (host:port); never stopped by us."""
    host, port = loopback_emulator_host(value, env_var)  # refused before anything is sent to it
    handle = EmulatorHandle(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", log_path=log_path)
    if not handle.ping(timeout=timeout):
        raise EmulatorUnreachableError(
            f"{env_var}={value} is set but nothing answers 'Ok' at {handle.base_url}/. "
            f"Start the emulator at {host}:{port}, or unset {env_var} to let fencecheck start one."
        )
    return handle


def emulator_from_environment(env: Mapping[str, str] | None = None, **start_kwargs: Any) -> EmulatorHandle:
    """Connect to ``$FIRESTORE_EMULATOR_HOST`` if set, else start a private emulator."""
    env = os.environ if env is None else env
    if env.get(ENV_HOST):
        return connect_existing(env[ENV_HOST])
    return start_emulator(env=env, **start_kwargs)


def close_client(client: firestore.Client) -> None:
    """Close a client's gRPC channel (the sync client has no public close)."""
    api = getattr(client, "_firestore_api_internal", None)  # None if no RPC was ever made
    try:
        if api is not None:
            api.transport.close()
    except Exception:  # best effort: a failing close must not fail a test's teardown
        pass
