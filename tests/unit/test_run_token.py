"""A pytest run started from inside another (the gate's suites under tests/emulator/test_gate_known_bad.py)
names its emulator projects with its own run token, not the one it inherits: with the same worker ids and
counters it would otherwise use, and reset, the very projects of the outer run's tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fencecheck.suites.pytest_plugin import ENV_RUN_TOKEN

pytestmark = pytest.mark.harness  # the gate deselects harness tests

INNER_TEST = """
import os
from pathlib import Path

def test_writes_down_its_token():  # a file: an xdist worker's output is not shown
    Path(os.environ["TOKEN_FILE"]).write_text(os.environ["FENCECHECK_RUN_TOKEN"])
"""


def _inner_token(tmp_path: Path, *extra: str) -> str:
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    token_file = tmp_path / "token.txt"
    env = {**os.environ, ENV_RUN_TOKEN: "outer-run-token", "TOKEN_FILE": str(token_file)}
    env.pop("FIRESTORE_EMULATOR_HOST", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "fencecheck.suites.pytest_plugin", "-p", "no:cacheprovider",
         "-p", "no:randomly", *extra, str(tmp_path / "test_inner.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return token_file.read_text()


def test_a_nested_run_mints_its_own_token(tmp_path):
    token = _inner_token(tmp_path)
    assert token and token != "outer-run-token"


def test_a_nested_runs_workers_share_their_controllers_token(tmp_path):
    token = _inner_token(tmp_path, "-n", "1")  # a worker inherits it from its controller, not from outside
    assert token and token != "outer-run-token"
