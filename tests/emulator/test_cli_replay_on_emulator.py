"""`fencecheck replay` on the shared test emulator: a lockstep program and a race, each against the known-bad
system it names (still fails, exit 1) and against the reference (no longer fails, exit 0); a lantern contest
likewise (both systems' races run through fencecheck.runners.contest and are saved in one format)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fencecheck.runners.contest_results import execute_contest
from fencecheck.runners.counterexamples import write_counterexample
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.lantern.plugin import LANTERN
from known_bad.journal import system, variant
from model.lantern import CreateVenue, DeleteVenue, Light
from tests.systems.journal.races import BY_NAME, execute
from tests.systems.lantern.races import BY_NAME as LANTERN_SCENARIOS

pytestmark = [pytest.mark.emulator, pytest.mark.harness]  # the gate deselects harness tests

ROOT = Path(__file__).resolve().parents[2]


def replay(path: Path, host: str, *options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FIRESTORE_EMULATOR_HOST": host}
    return subprocess.run([sys.executable, "-m", "fencecheck", "replay", str(path), *options], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_lockstep_program_still_fails_against_its_variant_only(emulator, tmp_path):
    name = "earlier-clock-finishes"
    witness = variant(name).witness
    bad = write_counterexample(tmp_path / "bad", witness, machine="JournalMachine",
                               system_module=f"known_bad.journal:{name}", plugin=JOURNAL)
    done = replay(bad, emulator.host)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"against known_bad.journal:{name}" in done.stdout
    assert "still fails: LockstepMismatch: lockstep mismatch at step 3" in done.stdout
    assert "complete.clock_earlier.unavailable" in done.stdout

    good = write_counterexample(tmp_path / "good", witness, machine="JournalMachine", plugin=JOURNAL)  # the reference
    done = replay(good, emulator.host)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no longer fails" in done.stdout


def test_system_option_replays_a_program_against_another_implementation(emulator, tmp_path):
    name = "earlier-clock-finishes"
    bad = write_counterexample(tmp_path, variant(name).witness, machine="JournalMachine",
                               system_module=f"known_bad.journal:{name}", plugin=JOURNAL)
    done = replay(bad, emulator.host, "--system", "reference")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "against the reference" in done.stdout and "no longer fails" in done.stdout
    good = write_counterexample(tmp_path / "good", variant(name).witness, machine="JournalMachine",
                                system_module="reference", plugin=JOURNAL)
    done = replay(good, emulator.host, "--system", f"known_bad.journal:{name}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "still fails: LockstepMismatch" in done.stdout


@pytest.fixture
def illegal_race(firestore_db: Any, tmp_path: Path) -> Path:
    """A race the re-registration-writes variant loses: exact re-registrations rewrite the root, so the
    root and its revision-1 audit no longer share a commit and the answers stop fitting the model."""
    result, run = execute(firestore_db, BY_NAME["identical_registrations"], counterexamples_dir=tmp_path,
                          system=system("re-registration-writes"))
    assert run.verdict.status == "illegal" and result.counterexample, run.verdict.explain()
    return Path(result.counterexample)


def test_race_still_fails_against_its_variant(emulator, illegal_race):
    saved = json.loads(illegal_race.read_text())
    assert (saved["system"], saved["implementation"]) == ("journal", "known_bad.journal:re-registration-writes")
    done = replay(illegal_race, emulator.host)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("journal contest journal_identical_registrations from ")
    assert "24 racers released together, 0 after them, against known_bad.journal:re-registration-writes" in lines[0]
    assert "saved history, re-checked by the pure checker: illegal" in lines
    assert any(line.startswith("re-executed at ") and line.endswith(": illegal") for line in lines)
    assert lines[-1] == "still fails"


def test_race_no_longer_fails_against_the_reference(emulator, illegal_race, tmp_path):
    data = json.loads(illegal_race.read_text())
    data["implementation"] = None  # the same setup and calls, raced against the real reference
    fixed = tmp_path / "race-journal_identical_registrations-reference.json"
    fixed.write_text(json.dumps(data))
    done = replay(fixed, emulator.host)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "saved history, re-checked by the pure checker: illegal" in done.stdout  # the saved one still is
    assert "with the same setup and calls: ok" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("no longer fails")


# --- the lantern's contests (fencecheck/runners/replay_contest.py) -------------------------------------------------


def _lantern_run(firestore_db: Any, directory: Path, implementation: Any) -> tuple[Any, Any]:
    scenario = LANTERN_SCENARIOS["double_extinguish"]
    return execute_contest(firestore_db, scenario.contest(), plugin=LANTERN, implementation=implementation,
                           artifacts_dir=directory, counterexamples_dir=directory)


def test_a_lantern_contest_result_replays_clean_against_the_reference(emulator, firestore_db, tmp_path):
    result, run = _lantern_run(firestore_db, tmp_path, None)
    assert run.verdict.ok, run.verdict.explain()
    done = replay(tmp_path / f"{result.scenario}-0.json", emulator.host)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lantern contest lantern_double_extinguish" in done.stdout and "against reference.lantern" in done.stdout
    assert "saved history, re-checked by the pure checker: ok" in done.stdout
    assert done.stdout.rstrip().endswith("no longer fails (this run's interleaving was linearizable)")


def test_a_lantern_counterexample_names_and_replays_its_variant(emulator, firestore_db, tmp_path):
    spec = "known_bad.lantern:finding_5_read_then_write_extinguish"
    result, run = _lantern_run(firestore_db, tmp_path, LANTERN.resolve(spec))
    assert run.verdict.status == "illegal" and result.counterexample, run.verdict.explain()
    assert json.loads(Path(result.counterexample).read_text())["implementation"] == spec
    done = replay(Path(result.counterexample), emulator.host)
    assert f"against {spec}" in done.stdout, done.stdout + done.stderr
    assert "saved history, re-checked by the pure checker: illegal" in done.stdout
    # A race is not deterministic: the new run decides the exit code, and the last line says which.
    final = "still fails" if done.returncode == 1 else "no longer fails (this run's interleaving was linearizable)"
    assert done.returncode in (0, 1) and done.stdout.rstrip().endswith(final)


def test_a_malformed_contest_is_a_usage_error_before_any_emulator(tmp_path):
    path = tmp_path / "race-lantern_x-0.json"
    path.write_text(json.dumps({"format": "fencecheck.race-counterexample/2", "history": {"system": "lantern"}}))
    done = replay(path, "127.0.0.1:9")  # nothing listens there: it must not get that far
    assert done.returncode == 2 and "malformed saved race: no 'system' key" in done.stderr


def test_a_lantern_lockstep_program_still_fails_against_its_variant_only(emulator, tmp_path):
    """#13: the venue of a user's lantern is deleted; once it expired the user lights another elsewhere, and the
    blind decrement of the old venue fails on the missing document, so the variant never answers lit."""
    t0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
    program = [CreateVenue("bar", "Bar", 52.52, 13.405, 150), CreateVenue("club", "Club", 52.52, 13.405, 150),
               Light("u1", "l1", "club", 52.52, 13.405, now=t0), DeleteVenue("club"),
               Light("u1", "l2", "bar", 52.52, 13.405, now=t0 + timedelta(hours=2, minutes=1))]
    spec = "known_bad.lantern:finding_13_blind_decrement_deleted_venue"
    bad = write_counterexample(tmp_path / "bad", program, machine="LanternMachine", system_module=spec,
                               plugin=LANTERN)
    done = replay(bad, emulator.host)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"against {spec}" in done.stdout and "still fails: LockstepMismatch" in done.stdout

    good = write_counterexample(tmp_path / "good", program, machine="LanternMachine", plugin=LANTERN)
    done = replay(good, emulator.host)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "against the lantern reference" in done.stdout and "no longer fails" in done.stdout
