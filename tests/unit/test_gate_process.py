"""fencecheck.gate.process without a gate: the signal guard raises once and then only records, and restores the
handlers; a suite's process group is stopped whole, a grandchild included. The gate itself, signalled for real:
tests/emulator/test_gate_signals.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fencecheck.gate import process as gate_process


def test_the_first_signal_raises_later_ones_are_recorded_and_handlers_come_back():
    before = {signum: signal.getsignal(signum) for signum in gate_process.SIGNALS}
    with gate_process.SignalGuard() as guard:
        with pytest.raises(gate_process.Interrupted) as caught:
            signal.raise_signal(signal.SIGTERM)
        assert caught.value.signum == signal.SIGTERM and isinstance(caught.value, KeyboardInterrupt)
        signal.raise_signal(signal.SIGINT)  # cleaning up: recorded, not raised
        assert guard.received == signal.SIGTERM
    assert {signum: signal.getsignal(signum) for signum in gate_process.SIGNALS} == before


def test_after_hold_a_signal_is_only_recorded():
    with gate_process.SignalGuard() as guard:
        guard.hold()
        signal.raise_signal(signal.SIGINT)
    assert guard.received == signal.SIGINT


def test_outside_the_main_thread_the_guard_leaves_the_handlers_alone():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(gate_process.SignalGuard().__enter__().received))
    thread.start()
    thread.join()
    assert seen == [None]


GRANDPARENT = (
    "import subprocess, sys, time; child = subprocess.Popen(['sleep', '600']); print(child.pid, flush=True); "
    "time.sleep(600)"
)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_an_interrupted_suite_is_stopped_with_its_whole_group(monkeypatch):
    """The suite's stand-in starts a grandchild (as pytest starts xdist workers) and waits; the interruption
    (what the guard raises in the gate) stops both."""
    started: list[tuple[subprocess.Popen[bytes], int]] = []
    popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        process = popen(*args, stdout=subprocess.PIPE, **kwargs)
        started.append((process, int(process.stdout.readline())))  # the grandchild runs before the first tick
        return process

    def tick() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(gate_process.subprocess, "Popen", recording_popen)
    with pytest.raises(KeyboardInterrupt):
        gate_process.run_suite([sys.executable, "-c", GRANDPARENT], {}, tick=tick, poll_seconds=0.05)
    ((process, grandchild),) = started
    process.stdout.close()
    assert process.returncode == -signal.SIGTERM
    assert not _running(grandchild), "the grandchild outlived the stop"
    assert not gate_process._group_running(process.pid)


def test_a_suite_told_to_stop_is_stopped_with_its_whole_group_and_its_output_kept(tmp_path, monkeypatch):
    """A suite in the gate's second lane (fencecheck.cli.main.schedule) is stopped by an event, not a signal; its
    output went to the file it was given."""
    started: list[int] = []
    stop = threading.Event()
    log = tmp_path / "suite.log"

    def tick() -> None:
        if log.read_text().strip():  # the grandchild is running: its pid is in the output
            started.append(int(log.read_text()))
            stop.set()

    with log.open("wb") as output, pytest.raises(gate_process.Stopped):
        gate_process.run_suite([sys.executable, "-c", GRANDPARENT], {}, tick=tick, poll_seconds=0.05, stop=stop,
                               output=output)
    (grandchild,) = started
    assert not _running(grandchild), "the grandchild outlived the stop"
