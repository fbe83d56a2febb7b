"""fencecheck.emulator.lifecycle's SIGTERM handler stops the emulators of the process that started them, and only of
that
process: a child forked from it (the checker's pool workers) that gets SIGTERM ends as SIGTERM ends a process,
leaving its parent's emulators alone. A fresh interpreter runs the check, so this worker's handlers stay as
they are; the emulator is a stand-in whose stop() writes down who called it."""

from __future__ import annotations

import signal
import subprocess
import sys

FORK_THEN_SIGTERM = """
import os, signal, sys, time
import fencecheck.emulator.lifecycle as emulator

class StandIn:
    def stop(self):
        with open(sys.argv[1], "a") as log:
            log.write(f"stopped by {'the parent' if os.getpid() == parent else 'the child'}\\n")

parent = os.getpid()
emulator._registry.add(StandIn())
emulator._install_sigterm_handler()
ready, started = os.pipe()
child = os.fork()
if child == 0:
    os.write(started, b"x")  # past the fork (CPython drops a signal that arrives while it sets the child up)
    # Wait in slices, not with signal.pause(): a SIGTERM landing between the interpreter's last check for
    # signals and the blocking call would leave pause() waiting forever, as CI once saw. Either SIGTERM
    # ends the child, or its handler returns and the child exits 0, which the parent's waitpid reports.
    for _ in range(300):  # 30 s, inside HANG_GUARD
        time.sleep(0.1)
    os._exit(0)
os.read(ready, 1)
os.kill(child, signal.SIGTERM)
_, status = os.waitpid(child, 0)
emulator._registry.clear()  # the parent's own exit would stop it (atexit): not what is checked
print(os.WTERMSIG(status) if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}")
"""


HANG_GUARD = 60  # seconds: reached only if the child survives SIGTERM and the parent waits for it


def test_a_forked_child_ends_on_sigterm_without_stopping_its_parents_emulators(tmp_path):
    log = tmp_path / "stops.log"
    done = subprocess.run([sys.executable, "-c", FORK_THEN_SIGTERM, str(log)], capture_output=True, text=True,
                          timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(int(signal.SIGTERM)), done.stdout
    assert not log.exists(), log.read_text()
