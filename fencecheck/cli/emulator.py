"""`fencecheck emulator start|stop|status`: one Firestore emulator that outlives the command that started it.

`start` launches the emulator the usual way (`fencecheck.emulator.lifecycle.start_emulator`: discovery, free port,
readiness poll) but without the parent-death signal, then detaches it, so neither the CLI's exit nor its
SIGTERM stops it; it runs in its own process group. What `status` and `stop` need to find it again is
written to a state file, `emulator.json` in `$FENCECHECK_STATE_DIR` or `<project root>/.fencecheck/`.

Pids get reused, and a state file can outlive its emulator (a reboot, a `kill -9`). So the emulator is
started with a random token in its environment (`FENCECHECK_EMULATOR_TOKEN`, inherited by a launcher's
java), and a process counts as ours only if it is in the recorded process group AND carries that token
(Linux: /proc). `stop` never signals a group none of whose members carries the token.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from fencecheck.emulator.lifecycle import EmulatorHandle, _signal_group, new_run_token, start_emulator
from fencecheck.errors import EmulatorUnreachableError, FencecheckError, PortInUseError

ENV_STATE_DIR = "FENCECHECK_STATE_DIR"
ENV_TOKEN = "FENCECHECK_EMULATOR_TOKEN"
STATE_FORMAT = "fencecheck.emulator-state/1"
STATE_FILE = "emulator.json"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROC = Path("/proc")


@dataclass(frozen=True)
class State:
    pid: int  # also the process group id: the emulator leads its own group
    host: str
    port: int
    log_path: str
    token: str  # in the emulator's environment: tells our processes from a reused pid
    started_at: str
    source: str  # how the emulator was found (the discovery's description)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get(ENV_STATE_DIR):
        return Path(env[ENV_STATE_DIR]).expanduser()
    # The project root when running from a checkout (where the gate's artifacts/ lives too), else the cwd.
    root = PROJECT_ROOT if (PROJECT_ROOT / "pyproject.toml").is_file() else Path.cwd()
    return root / ".fencecheck"


def load_state(directory: Path) -> State | None:
    path = directory / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.pop("format", None) != STATE_FORMAT:
            raise ValueError(f"not a {STATE_FORMAT} file")
        return State(**data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as error:
        raise FencecheckError(
            f"{path} cannot be read ({type(error).__name__}: {error}). Stop the emulator it describes by hand "
            f"if one still runs, then delete the file."
        ) from None


def _save_state(directory: Path, state: State) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / STATE_FILE
    tmp = path.with_name(STATE_FILE + ".tmp")
    tmp.write_text(json.dumps({"format": STATE_FORMAT, **asdict(state)}, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _remove_state(directory: Path) -> None:
    (directory / STATE_FILE).unlink(missing_ok=True)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One start/stop at a time per state directory (two concurrent starts would launch two emulators)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "emulator.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# --- is it ours, is it alive ---------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state, ppid, pgrp, ...); None if gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()  # the name may contain spaces and parentheses


def _carries_token(pid: int, token: str) -> bool:
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return f"{ENV_TOKEN}={token}".encode() in environ.split(b"\0")


def live_members(state: State) -> list[int]:
    """Live (not zombie) processes of the recorded group that carry its token. Without /proc: the group
    leader if the group exists (the token cannot be checked there)."""
    if not PROC.is_dir():
        return [state.pid] if _signal_group(state.pid, 0) else []
    members = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # A zombie has exited (its parent, or init, has not reaped it yet): it holds no port, it is gone.
        if fields and fields[0] != "Z" and fields[2] == str(state.pid) and _carries_token(int(entry.name), state.token):
            members.append(int(entry.name))
    return members


def reachable(state: State) -> bool:
    return EmulatorHandle(state.host).ping(timeout=2.0)


# --- the three commands --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """What a command did: lines for the user (stderr), lines for the shell (stdout), the exit code."""

    messages: tuple[str, ...]
    shell: tuple[str, ...] = ()
    exit_code: int = 0


def export_line(state: State) -> str:
    return f"export FIRESTORE_EMULATOR_HOST={state.host}"


UNSET_LINE = "unset FIRESTORE_EMULATOR_HOST"


def start(directory: Path, *, port: int | None = None, ready_timeout: float = 60.0) -> Report:
    with _locked(directory):
        current = load_state(directory)
        notes: list[str] = []
        if current is not None:
            if live_members(current):
                if not reachable(current):
                    raise EmulatorUnreachableError(
                        f"an emulator started by fencecheck (pid {current.pid}) is running but does not answer at "
                        f"{current.host}; its log is {current.log_path}. Run `fencecheck emulator stop`, then start "
                        f"again."
                    )
                return Report((f"already running (pid {current.pid}) at {current.host}; log: {current.log_path}",),
                              (export_line(current),))
            notes.append(f"the emulator recorded in {directory / STATE_FILE} (pid {current.pid}) is gone; "
                         f"starting a new one")
            _remove_state(directory)
        token = new_run_token() + new_run_token()
        handle = _launch(directory, port, ready_timeout, token)
        try:
            pid = handle.detach()
            state = State(
                pid=pid,
                host=handle.host,
                port=handle.port,
                log_path=str(handle.log_path),
                token=token,
                started_at=datetime.now(UTC).isoformat(timespec="seconds"),
                source=handle.command.description if handle.command else "unknown",
            )
            _save_state(directory, state)
        except BaseException:
            handle.stop()  # without a state file nobody could find it again
            raise
    return Report((*notes, f"started the Firestore emulator (pid {pid}) at {state.host}; log: {state.log_path}",
                   "stop it with: fencecheck emulator stop"), (export_line(state),))


def _launch(directory: Path, port: int | None, ready_timeout: float, token: str) -> EmulatorHandle:
    previous = os.environ.get(ENV_TOKEN)
    os.environ[ENV_TOKEN] = token  # the emulator inherits our environment (and a launcher's java inherits its)
    try:
        return start_emulator(port=port, log_dir=directory, ready_timeout=ready_timeout, kill_with_parent=False)
    except PortInUseError:
        raise PortInUseError(
            f"port {port} on 127.0.0.1 is already in use. Stop whatever listens there (ss -ltnp), or leave out "
            f"--port to let fencecheck pick a free port."
        ) from None
    finally:
        if previous is None:
            os.environ.pop(ENV_TOKEN, None)
        else:
            os.environ[ENV_TOKEN] = previous


def status(directory: Path) -> Report:
    state = load_state(directory)
    if state is None:
        return Report((f"not running (no emulator started by `fencecheck emulator start`; state: "
                       f"{directory / STATE_FILE})",), exit_code=3)
    if not live_members(state):
        return Report((f"not running: the emulator recorded in {directory / STATE_FILE} (pid {state.pid}) is "
                       f"gone; `fencecheck emulator stop` clears the record",), exit_code=3)
    if not reachable(state):
        return Report((f"running (pid {state.pid}) but not answering at {state.host}; see its log "
                       f"{state.log_path}",), exit_code=1)
    return Report((f"running (pid {state.pid}) and answering at {state.host}; log: {state.log_path}",),
                  (export_line(state),))


def stop(directory: Path, *, timeout: float = 10.0) -> Report:
    with _locked(directory):
        state = load_state(directory)
        if state is None:
            return Report(("not running (nothing to stop)",), (UNSET_LINE,))
        if not live_members(state):
            _remove_state(directory)
            return Report((f"not running (the emulator recorded as pid {state.pid} was already gone; record "
                           f"removed)",), (UNSET_LINE,))
        _terminate(state, timeout)
        _remove_state(directory)
    return Report((f"stopped the emulator (pid {state.pid}) at {state.host}",), (UNSET_LINE,))


def _still_running(pid: int, group: int) -> bool:
    """By /proc/<pid>/stat alone: an exiting process loses its environment (so its token) before it becomes a
    zombie, and it may still hold the port then."""
    if not PROC.is_dir():
        return _signal_group(group, 0)
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z" and fields[2] == str(group)


def _terminate(state: State, timeout: float) -> None:
    """SIGTERM the group, SIGKILL it after `timeout`; wait until every member found beforehand has exited."""
    members = live_members(state)
    for signum, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        _signal_group(state.pid, signum)
        deadline = time.monotonic() + wait
        while any(_still_running(pid, state.pid) for pid in members):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        else:
            return
    raise FencecheckError(
        f"the emulator's process group {state.pid} survived SIGKILL; its state file is kept. Check `ps -g "
        f"{state.pid}`."
    )
