"""The gate's suite processes, and what a signal to the gate does to them.

`timeout`, container runtimes and service managers send SIGTERM to the main process only. So each suite's
pytest runs in its own session (its own process group, with its xdist workers), and the gate, on SIGINT or
SIGTERM, stops that whole group itself: SIGTERM, then SIGKILL for what is left after a grace period. The
emulator is stopped by its handle as the gate unwinds (fencecheck.emulator.lifecycle), and the gate writes its evidence
(incomplete) and exits 128 + the signal's number.

`SignalGuard` turns the first SIGINT/SIGTERM into an `Interrupted` exception in the main thread (a
KeyboardInterrupt, so every `except KeyboardInterrupt` clean-up runs) and only records later ones: a gate that
is already cleaning up finishes doing so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from fencecheck.emulator.lifecycle import parent_death_prefix

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_SECONDS = 5.0  # between SIGTERM and SIGKILL of a suite's process group


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class SignalGuard:
    """While entered (in the main thread; elsewhere it does nothing): SIGINT and SIGTERM raise `Interrupted`
    once; `received` keeps the first signal's number; after `hold()` (or the first raise) signals are only
    recorded."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._raising = True
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: object) -> None:
        if self.received is None:
            self.received = signum
        if self._raising:
            self._raising = False
            raise Interrupted(signum)

    def hold(self) -> None:
        self._raising = False

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may set handlers; a gate run from elsewhere keeps the process's
        for signum in SIGNALS:
            self._previous[signum] = signal.getsignal(signum)
            signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        # Restored unconditionally: an emulator started meanwhile chained its SIGTERM handler in front of ours,
        # and has been stopped by now (the gate's `with` around it is inside this one).
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)


def _group_running(pgid: int) -> bool:
    """True while a process of group `pgid` runs. Zombies do not count: where PID 1 reaps no orphans (some
    containers), an exited xdist worker stays in the process table for good."""
    if not sys.platform.startswith("linux"):
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def stop_group(process: subprocess.Popen[bytes], grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the process group `process` leads, SIGKILL whatever of it still runs after `grace` seconds."""
    pgid = process.pid  # start_new_session=True: the child leads its own group
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    deadline = time.monotonic() + grace
    while (process.poll() is None or _group_running(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process.poll() is None or _group_running(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()


class Stopped(Exception):
    """A suite run in a thread of the gate was told to stop (`run_suite(stop=...)`): its group is stopped."""


def run_suite(command: Sequence[str], env: Mapping[str, str], *, tick: Callable[[], None],
              poll_seconds: float, stop: threading.Event | None = None, output: IO[bytes] | None = None) -> int:
    """Run one suite's pytest in its own process group and return its exit code; `tick()` every `poll_seconds`
    while it runs. Whatever interrupts the wait (Interrupted, any exception, `stop` set: `Stopped`) stops the
    whole group first. `output`: where its stdout and stderr go (default: the gate's own)."""
    # Its own session: the gate signals the group itself. A gate killed outright (SIGKILL) cannot, so the kernel
    # sends the suite's pytest SIGTERM then, and its xdist workers follow it (fencecheck.suites.pytest_plugin).
    streams: dict[str, Any] = {} if output is None else {"stdout": output, "stderr": subprocess.STDOUT}
    process = subprocess.Popen([*parent_death_prefix(signal.SIGTERM), *command], env=dict(env),
                               start_new_session=True, **streams)
    try:
        while True:
            try:
                returncode = process.wait(timeout=poll_seconds)
                break
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    raise Stopped() from None
                tick()
    except BaseException:
        stop_group(process)
        raise
    if _group_running(process.pid):  # a worker that outlived its controller is no longer anyone's
        stop_group(process)
    return returncode
