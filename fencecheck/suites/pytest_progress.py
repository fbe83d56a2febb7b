"""pytest's half of fencecheck.suites.progress: the controller (or the only pytest process) counts tests done of total
and writes them to the run's progress directory; its workers write their machines' examples there (they inherit
$FENCECHECK_PROGRESS_SHARED). Run by the gate ($FENCECHECK_PROGRESS_DIR set), that is all: the gate prints the
lines. Run by hand, the controller prints the same line itself, through pytest's terminal reporter, whenever
$FENCECHECK_PROGRESS_SECONDS (default 30) passed without one: a stateful test runs for minutes without a dot.

Loaded by fencecheck.suites.pytest_plugin.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from fencecheck.suites import progress

LABEL = "progress"


class _Run:
    """Registered as a plugin in the controller (or the only process): its methods are hooks."""

    def __init__(self, config: pytest.Config, directory: Path, own_directory: bool, saved: dict[str, str | None],
                 prints: bool) -> None:
        self.config, self.directory, self.own_directory, self.saved = config, directory, own_directory, saved
        self.done, self.total = 0, 0
        self.ticker = progress.Ticker(progress.interval(), time.monotonic)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._print_lines, name="fencecheck-progress", daemon=True) \
            if prints else None

    def _write(self) -> None:
        with contextlib.suppress(OSError):  # progress is for people watching; it never fails a run
            progress.write_tests(self.directory, self.done, self.total)

    def _print_lines(self) -> None:
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        capture = self.config.pluginmanager.getplugin("capturemanager")
        while not self.stop.wait(self.ticker.poll_seconds()):
            if reporter is None or not self.ticker.due():
                continue
            line = progress.format_line(LABEL, progress.snapshot(self.directory), self.ticker.elapsed())
            # Outside the running test's capture (without xdist this process runs the tests itself).
            with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
                # Progress dots (xdist's among them) leave the line open without pytest knowing of it.
                if getattr(reporter._tw, "width_of_current_line", 0):
                    reporter.write("\n")
                reporter.write_line(line)

    def pytest_sessionstart(self) -> None:
        self.ticker = progress.Ticker(self.ticker.seconds, time.monotonic)
        if self.thread is not None:
            self.thread.start()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.items:  # an xdist controller collects nothing: its workers say, below
            self.total = len(session.items)
            self._write()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))  # every worker collects the same tests
        self._write()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":  # one per test, whatever its outcome
            self.done += 1
            self._write()

    def pytest_unconfigure(self) -> None:
        self.stop.set()
        if self.thread is not None and self.thread.is_alive():
            self.thread.join(timeout=5)
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if self.own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # a worker only counts examples, into the directory its controller exported
    # Popped: a pytest that a test starts keeps its own progress apart from this run's.
    requested = os.environ.pop(progress.ENV_REQUEST, None)
    saved = {progress.ENV_REQUEST: requested, progress.ENV_SHARED: os.environ.get(progress.ENV_SHARED)}
    directory = Path(requested) if requested else Path(tempfile.mkdtemp(prefix="fencecheck-progress-"))
    directory.mkdir(parents=True, exist_ok=True)
    os.environ[progress.ENV_SHARED] = str(directory)  # before xdist spawns the workers: they inherit it
    prints = requested is None and not config.getoption("collectonly", False)
    config.pluginmanager.register(_Run(config, directory, requested is None, saved, prints), "fencecheck-progress")
