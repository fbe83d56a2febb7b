"""`fencecheck replay`: what is wrong with a file is said before any emulator starts; a race's contest is rebuilt
from a saved file exactly; a lockstep program's pytest outcome is read correctly (with a fake subprocess)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import fencecheck.cli.main as cli
import fencecheck.cli.replay as replay
from fencecheck.errors import CounterexampleError, FencecheckError
from fencecheck.runners.contest import Ids
from fencecheck.runners.contest_results import save_counterexample
from fencecheck.runners.contest_simulation import simulate_in_turn
from fencecheck.runners.counterexamples import write_counterexample
from fencecheck.runners.replay_contest import load_contest
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE
from known_bad.journal import variant
from tests.systems.journal.races import BY_NAME

VARIANT = "earlier-clock-finishes"


@pytest.fixture(autouse=True)
def _no_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**kwargs: Any) -> Any:
        raise AssertionError("no emulator may start for a file that cannot be replayed")

    monkeypatch.setattr(cli, "emulator_from_environment", refuse)


def _replay(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["replay", str(path)])
    return code, capsys.readouterr().err


def _saved_race(tmp_path: Path, scenario: str = "commit_failure_takeover", **extra: Any) -> Path:
    """A saved journal race (format 2) with `extra` keys set (None: removed)."""
    run = simulate_in_turn(BY_NAME[scenario].contest(Ids(7)), plugin=JOURNAL)
    path = save_counterexample(run, tmp_path)
    if extra:
        data = json.loads(path.read_text())
        for key, value in extra.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        path.write_text(json.dumps(data))
    return path


# --- errors, exit 2 ------------------------------------------------------------------------------------


def test_missing_file(tmp_path, capsys):
    code, err = _replay(tmp_path / "counterexamples" / "gone.py", capsys)
    assert code == 2 and "no such file" in err and "Expected a counterexample" in err


def test_unknown_kind_of_file(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    code, err = _replay(path, capsys)
    assert code == 2 and "unknown kind of file (.txt)" in err


def test_directory_is_not_a_counterexample(tmp_path, capsys):
    code, err = _replay(tmp_path, capsys)
    assert code == 2 and "not a file" in err


def test_malformed_json(tmp_path, capsys):
    path = tmp_path / "race-x.json"
    path.write_text('{"format": "fencecheck.race-counterexample/1",')
    code, err = _replay(path, capsys)
    assert code == 2 and "not valid JSON (line 1" in err


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"format": "fencecheck.history/1"}, "not a saved race (format 'fencecheck.history/1'"),
        ([1, 2], "not a saved race (format 'list'"),
    ],
    ids=["other-format", "not-an-object"],
)
def test_wrong_format(tmp_path, capsys, data, message):
    path = tmp_path / "race-x.json"
    path.write_text(json.dumps(data))
    code, err = _replay(path, capsys)
    assert code == 2 and message in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"history": None}, "no 'history' key"),
        ({"setup": 5}, "malformed saved race (TypeError"),
        ({"racers": []}, "a contest needs racers"),
        ({"system": "abacus"}, "no system called 'abacus'"),
    ],
    ids=["no-history", "bad-setup", "no-racers", "unknown-system"],
)
def test_malformed_saved_race(tmp_path, capsys, extra, message):
    code, err = _replay(_saved_race(tmp_path, **extra), capsys)
    assert code == 2 and message in err


@pytest.mark.parametrize(
    "old", ["fencecheck.race-result/1", "fencecheck.race-counterexample/1", "fencecheck.contest-counterexample/1"]
)
def test_a_version_1_race_file_is_refused_saying_how_to_regenerate_it(tmp_path, capsys, old):
    """Version 1 (the journal's own race runner, the lantern's first contest files) did not record the racers'
    operations: it cannot be replayed as it was, so it is a usage error that names the version expected."""
    code, err = _replay(_saved_race(tmp_path, format=old), capsys)
    assert code == 2
    assert f"format {old!r}, which this fencecheck no longer reads" in err
    assert "expected fencecheck.race-result/2 or fencecheck.race-counterexample/2" in err
    assert "Run the race suite again to regenerate it" in err


def test_race_naming_a_module_that_cannot_be_imported(tmp_path, capsys):
    path = _saved_race(tmp_path, implementation="no_such_package.journal")
    code, err = _replay(path, capsys)
    assert code == 2 and "module 'no_such_package.journal' cannot be imported" in err


def test_race_naming_an_unknown_variant(tmp_path, capsys):
    path = _saved_race(tmp_path, implementation="known_bad.journal:no-such-bug")
    code, err = _replay(path, capsys)
    assert code == 2 and "no known-bad variant 'no-such-bug'" in err and VARIANT in err


def test_python_file_that_is_not_a_counterexample(tmp_path, capsys):
    path = tmp_path / "helper.py"
    path.write_text("def helper():\n    return 1\n")
    code, err = _replay(path, capsys)
    assert code == 2 and "not a lockstep counterexample" in err


def test_python_file_that_does_not_parse(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("def test_replay(:\n")
    code, err = _replay(path, capsys)
    assert code == 2 and "not valid Python" in err


@pytest.mark.parametrize(
    ("system", "message"),
    [
        ("known_bad.journal:no-such-bug", "no known-bad variant 'no-such-bug'"),
        ("no_such_module.journal", "module 'no_such_module.journal' cannot be imported"),
        ("json", "has no attribute 'register_commerce_command'"),
    ],
    ids=["unknown-variant", "missing-module", "not-a-journal"],
)
def test_program_naming_a_system_that_cannot_be_built(tmp_path, capsys, system, message):
    path = write_counterexample(tmp_path, variant(VARIANT).witness, machine="JournalMachine", system_module=system,
                                plugin=JOURNAL)
    code, err = _replay(path, capsys)
    assert code == 2 and message in err


# --- which system a program names -----------------------------------------------------------------------


def test_program_system_reads_what_counterexamples_write(tmp_path):
    ops = variant(VARIANT).witness
    named = write_counterexample(tmp_path / "a", ops, machine="M", system_module=f"known_bad.journal:{VARIANT}",
                                 plugin=JOURNAL)
    module = write_counterexample(tmp_path / "b", ops, machine="M", system_module="reference", plugin=JOURNAL)
    plain = write_counterexample(tmp_path / "c", ops, machine="M", plugin=JOURNAL)
    assert replay.program_system(named) == f"known_bad.journal:{VARIANT}"
    assert replay.program_system(module) == "reference"
    assert replay.program_system(plain) is None
    spec = "journal:exec:node implementations/node-journal/main.js --variant takeover-keeps-fence"
    external = write_counterexample(tmp_path / "d", ops, machine="M", system_module=spec, plugin=JOURNAL)
    assert replay.program_system(external) == spec  # the command line, whole, so a replay starts the same
    assert f"SYSTEM = JOURNAL.resolve({spec!r})" in external.read_text()


# --- rebuilding a race's contest ---------------------------------------------------------------------------


def test_contest_is_rebuilt_exactly_from_a_saved_counterexample(tmp_path):
    original = BY_NAME["commit_failure_takeover"].contest(Ids(7))
    saved = load_contest(_saved_race(tmp_path))
    assert saved.plugin is JOURNAL and saved.implementation == "reference"
    rebuilt = saved.contest
    assert rebuilt.scenario == original.scenario and rebuilt.setup == original.setup
    assert rebuilt.racers == original.racers  # names, ops (ids, clock readings) and commit-failing first attempts
    assert rebuilt.followers == original.followers and rebuilt.facts == original.facts == {"terminalEvents": 0}
    assert any(racer.first_op is not None for racer in rebuilt.racers)


def test_contest_keeps_the_follow_up_callers_and_the_terminal_event_count(tmp_path):
    original = BY_NAME["complete_versus_fail"].contest(Ids(7))
    assert original.followers, "the scenario is chosen for its sequential follow-up callers"
    rebuilt = load_contest(_saved_race(tmp_path, "complete_versus_fail")).contest
    assert rebuilt.racers == original.racers and rebuilt.followers == original.followers
    assert rebuilt.facts == {"terminalEvents": 1}


def test_saved_counterexample_names_its_system_and_implementation(tmp_path):
    data = json.loads(_saved_race(tmp_path, implementation=f"known_bad.journal:{VARIANT}").read_text())
    assert data["system"] == "journal" and data["implementation"] == f"known_bad.journal:{VARIANT}"
    assert data["racers"] and data["format"] == "fencecheck.race-counterexample/2"


# --- a lockstep program's pytest outcome (fake subprocess) ---------------------------------------------------


def _fake_pytest(returncode: int, junit: str | None, stdout: str = ""):
    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        assert "-p" in command and "fencecheck.suites.pytest_plugin" in command
        assert kwargs["env"]["FIRESTORE_EMULATOR_HOST"] == "127.0.0.1:9"
        if junit is not None:
            path = next(arg.partition("=")[2] for arg in command if arg.startswith("--junitxml="))
            Path(path).write_text(junit)
        return subprocess.CompletedProcess(command, returncode, stdout, "")

    return run


def _program(tmp_path: Path) -> Path:
    return write_counterexample(tmp_path, variant(VARIANT).witness, machine="JournalMachine", plugin=JOURNAL)


def test_program_that_passes_no_longer_fails(tmp_path):
    outcome = replay.replay_program(_program(tmp_path), "127.0.0.1:9", REFERENCE, run=_fake_pytest(0, None))
    assert not outcome.still_fails and "no longer fails" in outcome.lines[-1]


def test_program_that_fails_still_fails_with_its_failure_text(tmp_path):
    junit = """<testsuites><testsuite><testcase classname="c" name="test_replay">
<failure message="LockstepMismatch: ...">def test_replay(firestore_db):
E   fencecheck.runners.lockstep.LockstepMismatch: lockstep mismatch at step 3: complete(...)
E     model expects 'journal_unavailable' (transition complete.clock_earlier.unavailable)
</failure></testcase></testsuite></testsuites>"""
    outcome = replay.replay_program(_program(tmp_path), "127.0.0.1:9", REFERENCE, run=_fake_pytest(1, junit))
    assert outcome.still_fails
    assert outcome.lines[1] == "still fails: LockstepMismatch: lockstep mismatch at step 3: complete(...)"
    assert any("complete.clock_earlier.unavailable" in line for line in outcome.lines)


def test_program_whose_fixture_errors_is_not_called_a_failure(tmp_path):
    junit = """<testsuites><testsuite><testcase classname="c" name="test_replay">
<error message="failed on setup">E   EmulatorStartError: the emulator did not answer</error>
</testcase></testsuite></testsuites>"""
    with pytest.raises(FencecheckError, match="could not be replayed: pytest exited with code 1"):
        replay.replay_program(_program(tmp_path), "127.0.0.1:9", REFERENCE, run=_fake_pytest(1, junit))


def test_program_pytest_cannot_collect_is_an_error(tmp_path):
    with pytest.raises(FencecheckError, match="exited with code 2.*ImportError: boom"):
        replay.replay_program(_program(tmp_path), "127.0.0.1:9", REFERENCE,
                              run=_fake_pytest(2, None, "ERROR collecting\nImportError: boom"))


def test_kind_of_dispatches_on_the_suffix(tmp_path):
    for name, kind in (("JournalMachine-1.py", "stateful"), ("race-x-1.json", "contest")):
        (tmp_path / name).write_text("")
        assert replay.kind_of(tmp_path / name) == kind
    with pytest.raises(CounterexampleError):
        replay.kind_of(tmp_path / "missing.json")


# --- generated concurrent programs (fencecheck.parallel) ---------------------------------------------------


def test_a_parallel_program_is_told_apart_from_a_race_by_its_format(tmp_path):
    from fencecheck.parallel.case import COUNTEREXAMPLE_FORMAT

    path = tmp_path / "parallel-reference-0123456789.json"
    path.write_text(json.dumps({"format": COUNTEREXAMPLE_FORMAT}))
    assert replay.kind_of(path) == "parallel"
    path.write_text(json.dumps({"format": "fencecheck.race-counterexample/2"}))
    assert replay.kind_of(path) == "contest"


def test_a_malformed_parallel_program_is_a_usage_error(tmp_path, capsys):
    from fencecheck.parallel.case import COUNTEREXAMPLE_FORMAT

    path = tmp_path / "parallel-reference-0123456789.json"
    path.write_text(json.dumps({"format": COUNTEREXAMPLE_FORMAT, "system": "reference"}))
    code, err = _replay(path, capsys)
    assert code == 2 and "malformed concurrent program" in err and "Expected a counterexample" in err


# --- --system: replay against another implementation than the file names -----------------------------------


def test_system_override_naming_no_variant_is_a_usage_error(tmp_path, capsys):
    bad = write_counterexample(tmp_path, variant(VARIANT).witness, machine="M",
                               system_module=f"known_bad.journal:{VARIANT}", plugin=JOURNAL)
    code = cli.main(["replay", str(bad), "--system", "known_bad.journal:no-such-variant"])
    err = capsys.readouterr().err
    assert code == 2 and "--system" in err and "no-such-variant" in err


def test_system_override_of_another_system_is_a_usage_error(tmp_path, capsys):
    bad = write_counterexample(tmp_path, variant(VARIANT).witness, machine="M", plugin=JOURNAL)
    code = cli.main(["replay", str(bad), "--system", "known_bad.lantern:whatever"])
    err = capsys.readouterr().err
    assert code == 2 and "names a lantern implementation" in err and "counterexample of the journal" in err


def _system_of(source: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(source, "program", "exec"), namespace)  # the program's module body: imports, OPS, SYSTEM
    return namespace["SYSTEM"]


def test_system_override_rewrites_a_program_to_the_named_implementation(tmp_path):
    ops = variant(VARIANT).witness
    bad = write_counterexample(tmp_path / "a", ops, machine="M", system_module=f"known_bad.journal:{VARIANT}",
                               plugin=JOURNAL)
    prepared = replay.prepare(bad, "reference")
    assert prepared.system is REFERENCE and _system_of(prepared.program) is REFERENCE
    good = write_counterexample(tmp_path / "b", ops, machine="M", system_module="reference", plugin=JOURNAL)
    prepared = replay.prepare(good, f"known_bad.journal:{VARIANT}")
    assert prepared.system.module == f"known_bad.journal:{VARIANT}"
    assert _system_of(prepared.program).module == f"known_bad.journal:{VARIANT}"
    assert replay.prepare(bad).program is None  # without --system: the file as it is


def test_system_override_of_a_race(tmp_path):
    path = _saved_race(tmp_path, implementation=f"known_bad.journal:{VARIANT}")
    assert replay.prepare(path).loaded.implementation == f"known_bad.journal:{VARIANT}"
    assert replay.prepare(path, "reference").loaded.implementation == "reference"  # the journal's reference's spec
    assert replay.prepare(path, "reference").loaded.plugin.resolve(None) is REFERENCE
