"""Progress while a suite runs (fencecheck.suites.progress, fencecheck.suites.pytest_progress): the line, when one is
due (an
injected clock, no waiting), what the files say; then a real gate and a real pytest on a scratch project, with
a progress interval of a fraction of a second, printing lines with the suite, tests done of total, elapsed
time and the examples a machine ran. The scratch project's second test holds until this test saw the line."""

from __future__ import annotations

import http.server
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecheck.suites import progress

pytestmark = pytest.mark.harness  # the gate deselects harness tests


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_names_suite_tests_done_of_total_elapsed_and_examples_per_machine():
    snapshot = progress.Snapshot(done=3, total=12, examples={"LanternMachine": 17, "JournalMachine": 42})
    assert progress.format_line("[4/6] stateful", snapshot, 95.4) == (
        "[4/6] stateful: 3/12 tests done, 95 s elapsed, examples: JournalMachine 42, LanternMachine 17"
    )
    assert progress.format_line("[1/6] unit", progress.Snapshot(), 2.0) == "[1/6] unit: collecting, 2 s elapsed"
    assert progress.format_line("x", progress.Snapshot(done=0, total=5), 0) == "x: 0/5 tests done, 0 s elapsed"


def test_a_line_is_due_every_interval_and_not_before():
    clock = Clock()
    ticker = progress.Ticker(30, clock)
    clock.now += 29.9
    assert not ticker.due()
    clock.now += 0.1
    assert ticker.due()
    assert not ticker.due()  # just printed: the next is 30 s away
    clock.now += 29
    assert not ticker.due()
    clock.now += 1
    assert ticker.due() and ticker.elapsed() == 60
    clock.now += 95  # a caller that polled late prints once, not three times
    assert ticker.due() and not ticker.due()
    assert ticker.poll_seconds() == 1.0 and progress.Ticker(0.2, clock).poll_seconds() == 0.05


def test_interval_comes_from_the_environment_with_30_s_default():
    assert progress.interval({}) == 30
    assert progress.interval({progress.ENV_SECONDS: "0.5"}) == 0.5
    assert progress.interval({progress.ENV_SECONDS: "soon"}) == 30
    assert progress.interval({progress.ENV_SECONDS: "0"}) == 30


def test_snapshot_adds_the_examples_of_every_process_and_skips_what_it_cannot_read(tmp_path, monkeypatch):
    progress.write_tests(tmp_path, 2, 7)
    (tmp_path / "examples-1.json").write_text('{"JournalMachine": 4, "LanternMachine": 1}')
    (tmp_path / "examples-2.json").write_text('{"JournalMachine": 5, "odd": true}')
    (tmp_path / "examples-3.json").write_text('{"Journal')  # never half a file in practice; still no crash
    assert progress.snapshot(tmp_path) == progress.Snapshot(2, 7, {"JournalMachine": 9, "LanternMachine": 1})
    assert progress.snapshot(tmp_path / "nothing") == progress.Snapshot()

    monkeypatch.setenv(progress.ENV_SHARED, str(tmp_path / "mine"))
    (tmp_path / "mine").mkdir()
    before = progress.snapshot(tmp_path / "mine").examples.get("DemoMachine", 0)
    progress.example_done("DemoMachine")
    assert progress.snapshot(tmp_path / "mine").examples["DemoMachine"] == before + 1


# --- a real gate and a real pytest ----------------------------------------------------------------------------

SCRATCH_TESTS = """
import os, time
from pathlib import Path
from fencecheck.suites import progress

def test_first():
    for _ in range(3):
        progress.example_done("DemoMachine")

def test_second():
    release = Path(os.environ["PROGRESS_TEST_RELEASE"])
    deadline = time.monotonic() + 120  # the outer test releases it as soon as it saw the line
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
"""


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "tests" / "unit").mkdir(parents=True)
    (project / "tests" / "systems").mkdir()  # the gate's unit suite takes it too (no test of its own here)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text('pytest_plugins = ["fencecheck.suites.pytest_plugin"]\n')
    (project / "tests" / "unit" / "test_scratch.py").write_text(SCRATCH_TESTS)
    return project


@pytest.fixture
def answering_host() -> Iterator[str]:
    """Something that answers the emulator's `GET /` with Ok: the gate's suite here never talks to Firestore."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"Ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _read_until(process: subprocess.Popen[str], pattern: str, release: Path) -> tuple[str | None, str]:
    """Lines of `process` until one matches `pattern` (then `release` the scratch test), and the rest."""
    seen, match = [], None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if match is None and re.search(pattern, line):
                match = line.rstrip("\n")
                release.touch()
        process.wait(timeout=60)
    finally:
        release.touch()
        if process.poll() is None:
            process.kill()
            process.wait()
    return match, "".join(seen)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "FENCECHECK_PROGRESS"))}
    return {**env, progress.ENV_SECONDS: "0.2", "PROGRESS_TEST_RELEASE": str(tmp_path / "release"), **extra}


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_gate_prints_progress_while_a_suite_runs(tmp_path, scratch, answering_host, workers):
    gate = subprocess.Popen(
        [sys.executable, "-m", "fencecheck", "gate", "--suite", "unit", "--workers", workers, "--profile", "ci",
         "--artifacts", str(tmp_path / "artifacts")],
        cwd=scratch, env=_env(tmp_path, FIRESTORE_EMULATOR_HOST=answering_host), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    line, output = _read_until(gate, r"^\[1/1\] unit: 1/2 tests done, \d+ s elapsed, examples: DemoMachine 3$",
                               tmp_path / "release")
    assert line is not None, output
    assert gate.returncode == 0, output
    assert "progress:" not in output  # the suite's pytest leaves the lines to the gate


def test_pytest_alone_prints_the_same_line_through_its_reporter(tmp_path, scratch):
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "tests/unit", "-n", "2", "-p", "no:cacheprovider"],
        cwd=scratch, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    line, output = _read_until(run, r"^progress: 1/2 tests done, \d+ s elapsed, examples: DemoMachine 3$",
                               tmp_path / "release")
    assert line is not None, output
    assert run.returncode == 0, output
