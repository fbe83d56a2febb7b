"""`fencecheck mutate` end to end on a small mutant set: the first mutants of the journal's decision module run
through the stateful, race and parallel suites, each judged as gate --known-bad judges a variant, the results kept
so that a second run resumes after them, and the report valid under Stryker's schema. The full runs (hours) stay
out of CI: docs/mutation.md."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fencecheck.mutation import outcomes, stryker
from tests.process_tree import command_of, descendants, running

pytestmark = [pytest.mark.emulator, pytest.mark.harness]  # it runs suites of its own: the gate deselects it

ROOT = Path(__file__).resolve().parents[2]
JUDGED = {"caught", "survived", "timeout", "error"}


def _mutate(emulator, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FIRESTORE_EMULATOR_HOST": emulator.host}
    return subprocess.run(
        [sys.executable, "-m", "fencecheck", "mutate", "--system", "journal", "--module", "decide.py",
         "--operator", "core/AddNot", "--timeout", "600", "--workers", "1", "--work", str(work), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500, check=False,
    )


def test_mutate_judges_a_small_mutant_set_resumes_after_it_and_writes_a_valid_stryker_report(emulator, tmp_path):
    work = tmp_path / "work"
    first = _mutate(emulator, work, "--limit", "2")
    assert first.returncode == 0, first.stdout + first.stderr
    decided = outcomes.load(work)
    assert len(decided) == 2 and {o.status for o in decided.values()} <= JUDGED, decided
    # The first AddNot mutants of decide.py invert the checks of a request against what is stored: the lockstep
    # machine sees a wrong answer at once. A mutant that makes the implementation crash is an error, never a kill.
    assert any(o.killed for o in decided.values()), decided
    for outcome in decided.values():
        assert outcome.reason and outcome.seconds > 0
        if outcome.killed:
            assert outcome.suite == "stateful" and outcome.test.endswith("::runTest")
    report = json.loads((work / "mutation-report.json").read_text())
    assert stryker.problems(report) == []
    entries = {m["id"]: m for m in report["files"]["reference/journal/decide.py"]["mutants"]}
    assert {entries[i]["status"] for i in decided} <= {"Killed", "Survived", "Timeout", "RuntimeError"}
    assert all(entries[i]["killedBy"] for i, o in decided.items() if o.killed)
    assert "Pending" in {m["status"] for m in entries.values()}
    assert "decide.py: score" in first.stdout
    # Nothing is left behind: no mutant package; a killed mutant's counterexamples were moved out of the
    # project's counterexamples/ into its own directory.
    assert not list((work / "packages").glob("fencecheck_mutant_*"))
    for identity in (i for i, o in decided.items() if o.killed):
        kept = list((work / "mutants" / identity / "counterexamples").iterdir())
        assert kept and not any((ROOT / "counterexamples" / path.name).exists() for path in kept)

    second = _mutate(emulator, work, "--limit", "1")  # resumes: the two decided ones are not run again
    assert second.returncode == 0, second.stdout + second.stderr
    again = outcomes.load(work)
    assert len(again) == 3 and set(decided) < set(again)
    assert {again[i] for i in decided} == set(decided.values())


def test_mutate_lists_a_shard_and_refuses_what_it_cannot_do(emulator, tmp_path):
    listed = _mutate(emulator, tmp_path / "work", "--list", "--shard", "2/2")
    everything = _mutate(emulator, tmp_path / "work", "--list")
    assert listed.returncode == everything.returncode == 0, listed.stderr + everything.stderr
    half, whole = listed.stdout.splitlines(), everything.stdout.splitlines()
    assert half == whole[1::2] and half
    named = [line.split()[0] for line in whole[2:4]]
    picked = _mutate(emulator, tmp_path / "work", "--list", *(f"--mutant={i}" for i in named))
    assert picked.returncode == 0 and picked.stdout.splitlines() == whole[2:4], picked.stderr
    missing = _mutate(emulator, tmp_path / "work", "--list", "--mutant", "000000000000")
    assert missing.returncode == 2 and "--mutant 000000000000: no such mutant" in missing.stderr, missing.stderr
    bad = _mutate(emulator, tmp_path / "work", "--shard", "3/2")
    assert bad.returncode == 2 and "--shard '3/2': expected K/N" in bad.stderr, bad.stderr
    unknown = subprocess.run([sys.executable, "-m", "fencecheck", "mutate", "--system", "nope"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120, check=False)
    assert unknown.returncode == 2 and "--system 'nope': expected one of journal" in unknown.stderr, unknown.stderr


def test_a_signal_to_mutate_stops_its_suites_and_keeps_what_was_decided(emulator, tmp_path):
    env = {**os.environ, "FIRESTORE_EMULATOR_HOST": emulator.host}
    work = tmp_path / "work"
    command = [sys.executable, "-m", "fencecheck", "mutate", "--system", "journal", "--module", "decide.py",
               "--operator", "core/AddNot", "--timeout", "600", "--workers", "1", "--work", str(work)]
    mutate = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while not any("pytest" in command_of(pid) for pid in descendants(mutate.pid)):
            assert mutate.poll() is None and time.monotonic() < deadline, "no suite started against a mutant"
            time.sleep(0.1)
        tree = descendants(mutate.pid)
        mutate.send_signal(signal.SIGTERM)
        output, _ = mutate.communicate(timeout=120)
    finally:
        if mutate.poll() is None:
            mutate.kill()
    assert mutate.returncode == 128 + signal.SIGTERM, output
    assert "stopped by SIGTERM; the mutants decided so far are kept" in output
    deadline = time.monotonic() + 30
    while (left := [pid for pid, start in tree.items() if running(pid, start)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, [command_of(pid) for pid in left]
    assert not list((work / "packages").glob("fencecheck_mutant_*"))
