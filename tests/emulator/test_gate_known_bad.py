"""`fencecheck gate --known-bad` end to end on the shared test emulator: the stateful suite runs against a
known-bad variant, its tests fail, the gate says the variant was caught (exit 0) and which property broke,
and points at a counterexample that the gate itself replayed (still failing against the variant, passing against
the reference) and that `fencecheck replay` confirms still fails.

The failing tests' kinds (contract) reach the gate through their JUnit records, written by the project's pytest
plug-in from the structured problems their exceptions carry; the replays report theirs the same way.

The variant is the one the known-bad catalogue catches fastest (earlier-clock-finishes: two steps, caught in
well under a second); most of this test's minute is Hypothesis shrinking the failing program.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.emulator, pytest.mark.harness]  # the gate deselects harness tests

ROOT = Path(__file__).resolve().parents[2]
VARIANT = "earlier-clock-finishes"


def test_gate_against_a_known_bad_variant_fails_and_points_at_a_replayable_counterexample(emulator, tmp_path):
    env = {**os.environ, "FIRESTORE_EMULATOR_HOST": emulator.host}
    artifacts = tmp_path / "artifacts"
    gate = subprocess.run(
        [sys.executable, "-m", "fencecheck", "gate", "--suite", "stateful", "--known-bad", VARIANT, "--profile",
         "ci", "--workers", "1", "--artifacts", str(artifacts)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    output = gate.stdout + gate.stderr
    assert gate.returncode == 0, output  # caught by a property of the contract: what --known-bad asks
    assert f"the known-bad variant {VARIANT} CAUGHT" in gate.stdout
    assert f"system under test: known_bad.journal:{VARIANT}" in gate.stdout
    # The failing property: the lockstep mismatch and the transition the model expected.
    assert "property: LockstepMismatch: lockstep mismatch at step" in gate.stdout
    assert "(transition complete.clock_earlier.unavailable)" in gate.stdout

    found = re.search(r"^  counterexample: (\S+\.py)$", gate.stdout, re.MULTILINE)
    assert found, gate.stdout
    counterexample = ROOT / found.group(1)
    assert counterexample.is_file()
    assert f"replay: .venv/bin/python -m fencecheck replay {found.group(1)}" in gate.stdout
    # The gate replayed it itself (the one definition of caught): still failing against the variant, passing
    # against the reference; failures.json records both.
    assert "  replay against the variant: still fails (contract)\n  replay against the reference: passes\n" \
        in gate.stdout
    sidecar = json.loads((artifacts / "failures.json").read_text())
    # The failing tests' kinds came from their JUnit records (the pytest plug-in), the replays' from theirs.
    assert {tuple(f["kinds"]) for f in sidecar["failures"]} == {("contract",)}, sidecar["failures"]
    replays = [r for f in sidecar["failures"] for r in f["replays"] if r["counterexample"] == found.group(1)]
    assert replays == [{"counterexample": found.group(1), "variant_kinds": ["contract"], "reference_kinds": [],
                        "problem": None}]

    markdown = (artifacts / "evidence.md").read_text()
    assert markdown.startswith("**fencecheck: FAIL**")
    assert "complete.clock_earlier.unavailable" in markdown and f"fencecheck replay {found.group(1)}" in markdown

    replay = subprocess.run([sys.executable, "-m", "fencecheck", "replay", str(counterexample)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "still fails: LockstepMismatch" in replay.stdout
