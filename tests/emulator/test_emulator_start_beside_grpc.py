"""An emulator start cannot abort in a process with live gRPC channels (issue 22, point 5).

A `preexec_fn` forces subprocess into a plain fork whose at-fork handlers run in the child; gRPC's, in a
process whose channels were busy, once aborted the emulator at start (SIGABRT, one fresh-clone `./run tests`).
The harness now starts no child with Python between fork and exec (`fencecheck.emulator.lifecycle.parent_death_prefix`
ties the child's life to the harness through `setpriv --pdeathsig` instead). This test starts and stops a
private emulator 15 times while a Firestore client keeps a channel busy on the session's emulator, and
counts the starts that failed: none may. (The abort came once in a whole fresh-clone run; the static test,
tests/unit/test_no_preexec_fn.py, guards the cause itself, so this one keeps to 15 starts, about a minute.)
"""

from __future__ import annotations

import threading

import pytest

from fencecheck.emulator.lifecycle import start_emulator
from fencecheck.errors import EmulatorStartError

pytestmark = [pytest.mark.emulator, pytest.mark.harness]

STARTS = 15


def test_emulator_starts_beside_busy_grpc_channels(tmp_path, firestore_db):
    stop = threading.Event()
    reads = {"done": 0, "errors": []}

    def keep_the_channel_busy() -> None:  # gRPC's own threads, and a call in flight during each fork
        document = firestore_db.document("busy/channel")
        while not stop.is_set():
            try:
                document.get(timeout=5)
                reads["done"] += 1
            except Exception as error:  # counted, shown below: a read failing is not this test's question
                reads["errors"].append(f"{type(error).__name__}: {error}"[:200])

    reader = threading.Thread(target=keep_the_channel_busy, name="busy-channel", daemon=True)
    reader.start()
    failures = []
    try:
        for number in range(1, STARTS + 1):
            try:
                with start_emulator(log_dir=tmp_path / f"start-{number}", quiet=True) as handle:
                    assert handle.ping(timeout=5.0), f"start {number}: ready, then no answer"
            except EmulatorStartError as error:
                failures.append(f"start {number}: {str(error)[:600]}")
    finally:
        stop.set()
        reader.join(timeout=30)
    assert reads["done"] > 0, f"the channel was never busy: {reads['errors'][:3]}"
    assert failures == [], f"{len(failures)} of {STARTS} emulator starts failed:\n" + "\n".join(failures)
