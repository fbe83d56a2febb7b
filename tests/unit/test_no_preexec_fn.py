"""No child the harness starts runs Python between fork and exec (issue 22, point 5): a `preexec_fn` makes
subprocess fork plainly and run the process's at-fork handlers in the child, and gRPC's aborted an emulator
at start. The parent-death signal comes from `setpriv` instead (`fencecheck.emulator.lifecycle.parent_death_prefix`)."""

from __future__ import annotations

import ast
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from fencecheck.emulator.lifecycle import parent_death_prefix

PACKAGE = Path(__file__).resolve().parents[2] / "fencecheck"


def test_no_module_of_the_harness_passes_a_preexec_fn():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.keyword) and node.arg == "preexec_fn":
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.value.lineno}")
    assert found == [], f"preexec_fn passed at {found}: use fencecheck.emulator.lifecycle.parent_death_prefix"


ORPHAN = """
import subprocess, sys
from fencecheck.emulator.lifecycle import parent_death_prefix
child = subprocess.Popen([*parent_death_prefix(), sys.executable, "-c",
                          "import time; print('running', flush=True); time.sleep(120)"])
print(child.pid, flush=True)
sys.stdin.read()  # until the test kills us outright
"""


def test_a_child_started_with_the_prefix_dies_with_the_process_that_started_it():
    assert parent_death_prefix(), "no setpriv on PATH: Debian's util-linux package has it"
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=PACKAGE.parent)
    try:
        child_pid = int(parent.stdout.readline())
        child = os.pidfd_open(child_pid)  # before the kill, so a reused pid cannot fool us
        # The command runs only after setpriv has set the signal and exec'd it: a kill before that (the
        # instant between fork and prctl, which a loaded machine widens) would leave an orphan by design.
        assert parent.stdout.readline() == "running\n"
    finally:
        parent.kill()  # SIGKILL: no handler of the parent's runs, only the kernel can end the child
        parent.wait()
    try:
        exited = select.select([child], [], [], 30)[0]  # a pidfd turns readable when its process ends
        assert exited, f"child {child_pid} outlived the process that started it by 30 s"
    finally:
        if not select.select([child], [], [], 0)[0]:
            signal.pidfd_send_signal(child, signal.SIGKILL)  # leave nothing running after a failure
        os.close(child)


def test_the_prefix_names_the_signal_setpriv_understands():
    prefix = parent_death_prefix(signal.SIGTERM)
    assert prefix == [] or (prefix[1:] == ["--pdeathsig", "TERM", "--"] and prefix[0].endswith("setpriv"))
