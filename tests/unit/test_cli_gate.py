"""`fencecheck gate`: argument errors, emulator errors, --known-bad wiring and what a failing run says, with a
fake emulator and fake suite processes (no emulator, no pytest subprocess); tests/emulator/test_gate_signals.py
signals a real gate."""

from __future__ import annotations

import functools
import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fencecheck.cli.main as cli
import fencecheck.emulator.lifecycle as emulator_module
from fencecheck.emulator.discovery import discover_emulator
from fencecheck.plugin.specs import ENV_SYSTEM, PROJECT_ROOT, configured_implementation, system_of_spec
from fencecheck.report import failures
from fencecheck.suites import ENV_ARTIFACTS
from fencecheck.systems.gateway.plugin import GATEWAY
from fencecheck.systems.journal.plugin import JOURNAL

FAST_VARIANT = "earlier-clock-finishes"

pytestmark = pytest.mark.harness  # the gate deselects harness tests


@pytest.fixture(autouse=True)
def _no_real_host(monkeypatch: pytest.MonkeyPatch) -> None:
    # The gate exports the emulator's host for its suites; monkeypatch restores whatever was there.
    monkeypatch.delenv("FIRESTORE_EMULATOR_HOST", raising=False)
    monkeypatch.delenv(ENV_SYSTEM, raising=False)


def _refuse_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(command: Any, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"no suite may run: {command}")

    monkeypatch.setattr(cli.gate_process, "run_suite", run)


# --- usage errors --------------------------------------------------------------------------------------


def test_unknown_known_bad_name_is_a_usage_error_listing_the_names(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    artifacts = tmp_path / "artifacts"
    assert cli.main(["gate", "--known-bad", "no-such-bug", "--artifacts", str(artifacts)]) == 2
    err = capsys.readouterr().err
    assert "unknown known-bad variant 'no-such-bug'" in err
    assert FAST_VARIANT in err and "preseeded-next-audit-ignored" in err
    assert not artifacts.exists()  # refused before anything was written


def test_unknown_profile_is_a_usage_error(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    assert cli.main(["gate", "--profile", "fastest", "--artifacts", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "unknown profile 'fastest'" in err and "ci, thorough, gate" in err


def test_known_bad_option_parses():
    args = cli.build_parser().parse_args(["gate", "--known-bad", FAST_VARIANT, "--suite", "stateful"])
    assert args.known_bad == FAST_VARIANT and args.suite == ["stateful"]
    assert cli.known_bad_system(FAST_VARIANT) == f"known_bad.journal:{FAST_VARIANT}"


# --- emulator errors: clear messages, exit 2, no suite started ----------------------------------------


def test_unreachable_emulator_host_names_the_variable(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    with socket.socket() as probe:  # bound and released: nothing listens there
        probe.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", closed)
    assert cli.main(["gate", "--suite", "unit", "--artifacts", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"FIRESTORE_EMULATOR_HOST={closed}" in err and "unset FIRESTORE_EMULATOR_HOST" in err


def test_malformed_emulator_host_is_a_usage_error(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "http://localhost:8080")
    assert cli.main(["gate", "--suite", "unit", "--artifacts", str(tmp_path)]) == 2
    assert "is not a host:port pair" in capsys.readouterr().err


def test_missing_emulator_says_what_to_install(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    for name in ("FENCECHECK_EMULATOR_JAR", "FENCECHECK_EMULATOR_COMMAND", "CLOUDSDK_ROOT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no gcloud
    # The real discovery, with no SDK roots and an empty home: nothing to find.
    monkeypatch.setattr(emulator_module, "discover_emulator",
                        functools.partial(discover_emulator, sdk_roots=(), home=tmp_path))
    assert cli.main(["gate", "--suite", "unit", "--artifacts", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "Firestore emulator was not found" in err and "google-cloud-cli-firestore-emulator" in err


def test_missing_java_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    jar = tmp_path / "cloud-firestore-emulator.jar"
    jar.write_text("not really a jar")
    monkeypatch.setenv("FENCECHECK_EMULATOR_JAR", str(jar))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no java
    monkeypatch.delenv("JAVA", raising=False)
    assert cli.main(["gate", "--suite", "unit", "--artifacts", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "Java 17 was not found" in err and "apt-get install" in err


# --- --known-bad wiring ------------------------------------------------------------------------------


def test_against_one_implementation_the_suites_that_take_it_run_its_system_without_catalogues():
    stateful, races, emulator = (next(s for s in cli.SUITES if s.name == n) for n in ("stateful", "races", "emulator"))
    spec = f"known_bad.journal:{FAST_VARIANT}"
    assert cli.suite_args(stateful, spec) == (*stateful.args, "--only-system", "journal", "--without-catalogues")
    assert cli.suite_args(stateful, None) == stateful.args
    assert cli.suite_args(races, "journal:exec:node main.js") == (*races.args, "--only-system", "journal",
                                                                   "--without-catalogues")
    assert cli.suite_args(emulator, spec) == emulator.args
    parallel = next(s for s in cli.SUITES if s.name == "parallel")
    assert cli.suite_args(parallel, "known_bad.lantern:finding_5_read_then_write_extinguish") == (
        *parallel.args, "--only-system", "lantern", "--without-catalogues")


def _collected_by(*args: str) -> set[str]:
    """The node ids pytest collects with `args` (in a subprocess: the marks and options are the pytest
    plug-in's, as a gate's suite sees them)."""
    done = subprocess.run([sys.executable, "-m", "pytest", *args, "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return {line for line in done.stdout.splitlines() if "::" in line}


def _collected(*args: str) -> set[str]:
    """The node ids collected from the suites that take the system, with `args`."""
    return _collected_by(*(path for suite in cli.SUITES if suite.name in cli.TAKES_THE_SYSTEM for path in suite.args),
                         *args)


def test_the_deselection_leaves_one_system_and_no_catalogue():
    from fencecheck.plugin.registry import SYSTEM_NAMES, plugin
    from fencecheck.plugin.suite_parts import module_file

    nodes = {system: _collected("--only-system", system, "--without-catalogues") for system in SYSTEM_NAMES}
    files = {system: {node.split("::")[0] for node in found} for system, found in nodes.items()}
    for system in SYSTEM_NAMES:
        machine = module_file(plugin(system).suites.machine).relative_to(PROJECT_ROOT).as_posix()
        assert {machine, "race_tests/test_race_reference.py"} <= files[system], files[system]
        # the shared suites' tests are parametrized over the systems, the system in each id
        assert (f"parallel_tests/test_parallel_reference.py::test_reference_is_linearizable_under_parallel_programs"
                f"[{system}]") in nodes[system], nodes[system]
        assert any(node.startswith(f"race_tests/test_race_reference.py::test_race[r0-{system}-")
                   for node in nodes[system]), nodes[system]
        for other in set(SYSTEM_NAMES) - {system}:
            assert not any(f"[{other}" in node or f"[r0-{other}-" in node for node in nodes[system]), (
                other, nodes[system])
            assert not any(other in path for path in files[system]), files[system]
    # no catalogue is left: every known-bad test module of these suites is marked as one
    assert not any("known_bad" in path for paths in files.values() for path in paths), files


def test_the_gate_leaves_the_harness_s_own_process_tests_to_run_tests():
    """The gate's unit and emulator suites deselect the modules marked harness, and only those; `./run tests`
    (no -m) collects them."""
    def files(*args: str) -> set[str]:
        return {node.split("::")[0] for node in _collected_by(*args)}

    unit, emulator = (next(s for s in cli.SUITES if s.name == n) for n in ("unit", "emulator"))
    gated = files(*unit.args) | files(*emulator.args)
    everything = files("tests/unit", "tests/emulator", "tests/systems", "--ignore=tests/emulator/test_rules.py")
    assert everything - gated == {
        "tests/emulator/test_cli_emulator_service.py", "tests/emulator/test_cli_replay_on_emulator.py",
        "tests/emulator/test_emulator_lifecycle.py", "tests/emulator/test_emulator_start_beside_grpc.py",
        "tests/emulator/test_example_plugin_gate.py", "tests/emulator/test_gate_known_bad.py",
        "tests/emulator/test_gate_signals.py", "tests/emulator/test_known_bad_rounds.py",
        "tests/emulator/test_mutate_command.py",
        "tests/unit/test_cli_gate.py", "tests/unit/test_progress.py", "tests/unit/test_run_token.py",
    }
    # each system's own tests are the unit suite's or the emulator suite's, by their emulator mark, never both
    assert "tests/systems/journal/test_journal_registration_emulator.py" in files(*emulator.args) - files(*unit.args)
    assert "tests/systems/journal/test_journal_laws.py" in files(*unit.args) - files(*emulator.args)


def test_an_unknown_system_name_is_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "pytest", "race_tests", "--collect-only", "-q", "-p",
                           "no:cacheprovider", "--only-system", "lanturn"], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 4 and "--only-system 'lanturn': expected one of journal, lantern" in done.stderr, (
        done.stdout + done.stderr)


def test_known_bad_names_resolve_in_either_catalogue():
    assert cli.known_bad_system(FAST_VARIANT) == f"known_bad.journal:{FAST_VARIANT}"
    lantern = cli.known_bad_names("lantern")
    assert lantern and cli.known_bad_system(lantern[0]) == f"known_bad.lantern:{lantern[0]}"
    with pytest.raises(cli.UsageError, match="journal .*lantern .*gateway "):
        cli.known_bad_system("no-such-variant")


def test_the_gate_names_a_gateway_variant_and_runs_the_suites_against_it(tmp_path, capsys, monkeypatch):
    name = "unfenced_release_after_reconciliation"
    assert name in cli.known_bad_names("gateway")
    assert cli.known_bad_system(name) == f"known_bad.gateway:{name}"
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run(calls, PASSING, 0))
    code = cli.main(["gate", "--suite", "stateful", "--known-bad", name, "--workers", "1", "--profile", "ci",
                     "--artifacts", str(tmp_path / "artifacts")])
    assert code == 1  # nothing failed against the variant: it survived (a usage error would be 2)
    (call,) = calls
    assert call["env"][ENV_SYSTEM] == f"known_bad.gateway:{name}"
    assert call["command"][4:8] == ["--only-system", "gateway", "--without-catalogues", "-q"]
    # the suites' processes find the gateway's plug-in from the spec, and only the gateway's takes the variant
    assert system_of_spec(call["env"][ENV_SYSTEM]) == "gateway"
    assert configured_implementation(GATEWAY, call["env"]).name == f"known_bad.gateway:{name}"
    assert configured_implementation(JOURNAL, call["env"]) is JOURNAL.reference
    assert f"known_bad.gateway:{name}" in capsys.readouterr().out


def _fake_run(calls: list[dict[str, Any]], junit_text: str | None, returncode: int):
    """Stands in for gate_process.run_suite: records the suite's command and environment, writes its junit."""
    def run(command: list[str], env: dict[str, str], **kwargs: Any) -> int:
        calls.append({"command": command, "env": env})
        junit = next(arg.partition("=")[2] for arg in command if arg.startswith("--junitxml="))
        if junit_text is not None:
            Path(junit).write_text(junit_text)
        return returncode

    return run


class FakeEmulator:
    host = "127.0.0.1:1"

    def __enter__(self) -> FakeEmulator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def emulator_version(self) -> None:
        return None

    def java_version(self) -> None:
        return None

    def lock_timeout_count(self) -> None:
        return None


STATEFUL_FAILURE = """<testsuites><testsuite name="pytest">
<testcase classname="tests.systems.journal.machine.TestJournalLockstep" name="runTest" time="3.0">
<properties><property name="fencecheck_problem_kinds" value="contract"/></properties>
<failure message="fencecheck.runners.lockstep.LockstepMismatch: lockstep mismatch at step 2: complete(...)">self = x
E           fencecheck.runners.lockstep.LockstepMismatch: lockstep mismatch at step 2: complete(cmd=3e4fec9f)
E             model expects 'journal_unavailable' (transition complete.clock_earlier.unavailable)
E             implementation answered 'lease_rejected'
E           model state after the step (as the model predicts it):
E             3e4fec9f: registered at T+0.000000s
E           counterexample written; replay it with: .venv/bin/python -m pytest \
counterexamples/JournalMachine-ef00a6ae.py
</failure></testcase></testsuite></testsuites>
"""


def _fake_replays(monkeypatch: pytest.MonkeyPatch, on_variant: tuple[str, ...] | None = ("contract",),
                  on_reference: tuple[str, ...] | None = (), problem: str | None = None) -> list[tuple[Path, str, Any]]:
    """The gate's replays faked: every counterexample replays finding these problem kinds against the variant
    and against the reference; returns the calls."""
    calls: list[tuple[Path, str, Any]] = []

    def replay(path: Path, variant: str, emulator: Any) -> failures.Replay:
        calls.append((path, variant, emulator))
        return failures.Replay(str(path), on_variant, on_reference, problem)

    monkeypatch.setattr(cli.gate_replay, "replay_both", replay)
    return calls


def _known_bad_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, junit: str) -> tuple[int, Path]:
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run([], junit, 1))
    artifacts = tmp_path / "artifacts"
    code = cli.main(["gate", "--suite", "stateful", "--known-bad", FAST_VARIANT, "--workers", "1",
                     "--profile", "ci", "--artifacts", str(artifacts)])
    return code, artifacts


def test_a_catch_needs_the_counterexample_to_replay_against_the_variant(tmp_path, capsys, monkeypatch):
    replays = _fake_replays(monkeypatch, on_variant=())
    code, artifacts = _known_bad_gate(tmp_path, monkeypatch, STATEFUL_FAILURE)
    assert code == 1 and len(replays) == 1
    out = capsys.readouterr().out
    assert "replay against the variant: passes (does not replay)" in out
    assert (f"the known-bad variant {FAST_VARIANT} ERROR: the failure did not replay against the variant "
            f"(counterexamples/JournalMachine-ef00a6ae.py)") in out
    sidecar = json.loads((artifacts / "failures.json").read_text())
    assert sidecar["failures"][0]["replays"] == [{"counterexample": "counterexamples/JournalMachine-ef00a6ae.py",
                                                  "variant_kinds": [], "reference_kinds": [], "problem": None}]
    assert "- known-bad verdict: **error** (the failure did not replay" in (artifacts / "evidence.md").read_text()


def test_a_counterexample_failing_against_the_reference_is_no_catch(tmp_path, capsys, monkeypatch):
    _fake_replays(monkeypatch, on_reference=("contract",))
    code, artifacts = _known_bad_gate(tmp_path, monkeypatch, STATEFUL_FAILURE)
    assert code == 1
    out = capsys.readouterr().out
    assert "replay against the variant: still fails" in out and "replay against the reference: fails too" in out
    assert f"{FAST_VARIANT} ERROR: the failure's program fails against the reference too" in out
    evidence = json.loads((artifacts / "evidence.json").read_text())
    assert evidence["failedTests"][0]["replays"][0]["referenceKinds"] == ["contract"]


def test_a_counterexample_that_cannot_be_replayed_is_no_catch(tmp_path, capsys, monkeypatch):
    _fake_replays(monkeypatch, on_variant=None, on_reference=None, problem="no such file")
    code, _ = _known_bad_gate(tmp_path, monkeypatch, STATEFUL_FAILURE)
    out = capsys.readouterr().out
    assert code == 1 and "could not be replayed (no such file)" in out
    assert "ERROR: the failure did not replay against the variant (counterexamples/JournalMachine-ef00a6ae.py; " \
           "no such file)" in out


def test_a_contract_failure_without_a_counterexample_cannot_be_replayed(tmp_path, capsys, monkeypatch):
    replays = _fake_replays(monkeypatch)
    without = STATEFUL_FAILURE.replace("counterexample written; replay it with: .venv/bin/python -m pytest "
                                       "counterexamples/JournalMachine-ef00a6ae.py\n", "")
    assert "counterexamples/" not in without
    code, _ = _known_bad_gate(tmp_path, monkeypatch, without)
    out = capsys.readouterr().out
    assert code == 1 and replays == []
    assert (f"{FAST_VARIANT} ERROR: the failure did not replay against the variant (no counterexample to replay for "
            f"tests.systems.journal.machine") in out


def test_a_signal_during_the_replays_ends_with_incomplete_evidence_and_143(tmp_path, capsys, monkeypatch):
    def replay(path: Path, variant: str, emulator: Any) -> failures.Replay:
        signal.raise_signal(signal.SIGTERM)  # the gate's SignalGuard turns it into an interruption here
        raise AssertionError("the signal should have interrupted the replay")

    monkeypatch.setattr(cli.gate_replay, "replay_both", replay)
    code, artifacts = _known_bad_gate(tmp_path, monkeypatch, STATEFUL_FAILURE)
    assert code == 143
    assert json.loads((artifacts / "evidence.json").read_text())["verdict"]["status"] == "incomplete"
    assert "CAUGHT" not in capsys.readouterr().out


def test_gate_under_known_bad_names_the_failure_and_the_replay_command(tmp_path, capsys, monkeypatch):
    calls: list[dict[str, Any]] = []
    replays = _fake_replays(monkeypatch)
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run(calls, STATEFUL_FAILURE, 1))
    monkeypatch.setenv(ENV_SYSTEM, "something.else")  # never passed through: the gate sets it itself
    artifacts = tmp_path / "artifacts"
    code = cli.main(["gate", "--suite", "stateful", "--known-bad", FAST_VARIANT, "--workers", "1",
                     "--profile", "ci", "--artifacts", str(artifacts)])
    assert code == 0  # caught, by a property of the contract: what `--known-bad` asks
    (call,) = calls
    assert call["env"][ENV_SYSTEM] == f"known_bad.journal:{FAST_VARIANT}"
    assert call["command"][4:8] == ["--only-system", "journal", "--without-catalogues", "-q"]
    out = capsys.readouterr().out
    assert f"known_bad.journal:{FAST_VARIANT}" in out
    assert "property: LockstepMismatch: lockstep mismatch at step 2" in out
    assert "transition complete.clock_earlier.unavailable" in out
    assert "counterexample: counterexamples/JournalMachine-ef00a6ae.py" in out
    assert "replay: .venv/bin/python -m fencecheck replay counterexamples/JournalMachine-ef00a6ae.py" in out
    assert "(a property of the contract)" in out
    assert f"the known-bad variant {FAST_VARIANT} CAUGHT: 1 failing tests, each by a property of the contract; each " \
           "counterexample still fails by one against the variant and passes against the reference" in out
    # Replayed once, in-process, against the variant the gate ran, on the gate's own emulator.
    ((path, variant, emulator),) = replays
    assert path == PROJECT_ROOT / "counterexamples/JournalMachine-ef00a6ae.py"
    assert variant == f"known_bad.journal:{FAST_VARIANT}" and isinstance(emulator, FakeEmulator)
    assert "  replay against the variant: still fails (contract)\n  replay against the reference: passes\n" in out
    markdown = (artifacts / "evidence.md").read_text()
    assert markdown.startswith("**fencecheck: FAIL**")
    section = markdown[markdown.index("**What failed:**"):]
    assert f"known_bad.journal:{FAST_VARIANT}" in section and "complete.clock_earlier.unavailable" in section
    assert "- known-bad verdict: **caught**" in section
    assert "fencecheck replay counterexamples/JournalMachine-ef00a6ae.py" in section
    assert "  - replay against the variant: still fails" in section
    assert markdown.rstrip().splitlines()[-1].startswith("<sub>")  # the footer stays last

    # `fencecheck report` re-renders the same section (the system comes from the gate's failures.json).
    out_dir = tmp_path / "again"
    assert cli.main(["report", str(artifacts), "--output", str(out_dir)]) == 1
    assert (out_dir / "evidence.md").read_text() == markdown


@pytest.mark.parametrize(("spec", "said"), [("reference", "the journal's reference"),
                                           ("known_bad.journal:" + FAST_VARIANT, "not the reference")])
def test_the_gate_says_whether_the_named_implementation_is_its_system_s_reference(tmp_path, capsys, monkeypatch,
                                                                                  spec, said):
    passing = '<testsuites><testsuite><testcase classname="t" name="a" time="0.1"/></testsuite></testsuites>'
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run([], passing, 0))
    cli.main(["gate", "--suite", "stateful", "--system", spec, "--artifacts", str(tmp_path)])
    assert f"running against {spec}, {said}: the stateful, races, parallel suites take it" in capsys.readouterr().out
    assert "known-bad verdict" not in (tmp_path / "evidence.md").read_text()  # --system: the run's verdict


def test_gate_without_known_bad_runs_the_reference(tmp_path, capsys, monkeypatch):
    calls: list[dict[str, Any]] = []
    passing = '<testsuites><testsuite><testcase classname="t" name="a" time="0.1"/></testsuite></testsuites>'
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run(calls, passing, 0))
    monkeypatch.setenv(ENV_SYSTEM, "known_bad.journal:" + FAST_VARIANT)  # left over in the shell: ignored
    cli.main(["gate", "--suite", "stateful", "--artifacts", str(tmp_path)])
    (call,) = calls
    assert ENV_SYSTEM not in call["env"]
    # the suite writes its evidence (races, coverage, summaries) where this gate's report reads it
    assert call["env"][ENV_ARTIFACTS] == str(tmp_path.resolve())
    assert not any(arg.startswith("--ignore=") for arg in call["command"])
    assert "What failed" not in (tmp_path / "evidence.md").read_text()
    assert "system under test" not in capsys.readouterr().out


def test_a_variant_nothing_catches_is_called_survived_and_exits_1(tmp_path, capsys, monkeypatch):
    passing = '<testsuites><testsuite><testcase classname="t" name="a" time="0.1"/></testsuite></testsuites>'
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run([], passing, 0))
    code = cli.main(["gate", "--suite", "stateful", "--known-bad", FAST_VARIANT, "--artifacts", str(tmp_path)])
    assert code == 1  # the suites passed (verdict pass), but the variant was not caught
    assert f"the known-bad variant {FAST_VARIANT} SURVIVED" in capsys.readouterr().out


# A stateful suite whose machine hit a step where the variant raised NameError (its LockstepMismatch recorded the
# kind crash), and a race test that crashed in the harness (it recorded nothing): neither is the contract's.
CRASHES = """<testsuites><testsuite name="pytest">
<testcase classname="tests.systems.journal.machine.TestJournalLockstep" name="runTest" time="3.0">
<properties><property name="fencecheck_problem_kinds" value="crash"/></properties>
<failure message="fencecheck.runners.lockstep.LockstepMismatch: lockstep mismatch at step 1: register(...)">self = x
E           fencecheck.runners.lockstep.LockstepMismatch: lockstep mismatch at step 1: register(cmd=3e4fec9f at T+0s)
E             the implementation raised NameError: name 'run_transactoin' is not defined
E           model state after the step (as the model predicts it):
</failure></testcase>
<testcase classname="race_tests.test_race_reference" name="test_race[r0-journal-expired_takeover]" time="1.0">
<failure message="NameError: name 'scenario_plan' is not defined">def test_race():
&gt;       raise self._mismatch(op, [f"the implementation raised {type(error).__name__}: {error}"])
E       NameError: name 'scenario_plan' is not defined
</failure></testcase></testsuite></testsuites>
"""


def test_a_gate_whose_suites_failed_only_by_crashes_claims_no_catch(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run([], CRASHES, 1))
    artifacts = tmp_path / "artifacts"
    code = cli.main(["gate", "--suite", "stateful", "--known-bad", FAST_VARIANT, "--artifacts", str(artifacts)])
    assert code == 1
    out = capsys.readouterr().out
    assert out.count("an error, not a property of the contract)") == 2, out
    assert "(crash: an error" in out and "(harness: an error" in out
    assert f"the known-bad variant {FAST_VARIANT} ERROR: the run failed by a crash, not by a property" in out
    assert "CAUGHT" not in out
    section = (artifacts / "evidence.md").read_text().split("**What failed:**")[1]
    assert "- known-bad verdict: **error**" in section and "an error, not a property of the contract" in section
    saved = json.loads((artifacts / "failures.json").read_text())
    assert [f["kinds"] for f in saved["failures"]] == [["crash"], ["harness"]]


def _named(*names: str) -> list[cli.Suite]:
    return [suite for suite in cli.SUITES if suite.name in names]


def _steps(suites: list[cli.Suite]) -> list[tuple[str, list[str]]]:
    return [(suite.name, [other.name for other in beside]) for suite, beside in cli.schedule(suites)]


def test_the_races_parallel_and_unit_suites_run_beside_the_stateful_suite_in_that_order():
    assert _steps(list(cli.SUITES)) == [("rules", []), ("emulator", []), ("stateful", ["races", "parallel", "unit"])]
    assert _steps(_named("unit", "races", "stateful")) == [("stateful", ["races", "unit"])]
    # without the stateful suite, every suite runs alone, in order
    assert _steps(_named("unit", "races", "parallel")) == [("unit", []), ("races", []), ("parallel", [])]


def test_a_lane_suite_gets_a_stop_event_and_its_output_file_and_the_gate_prints_it(tmp_path, capsys,
                                                                                  monkeypatch):
    calls: list[dict[str, Any]] = []
    record = _fake_run(calls, PASSING, 0)

    def run(command: list[str], env: dict[str, str], **kwargs: Any) -> int:
        output = kwargs.get("output")
        if output is not None:
            output.write(b"the lane suite's own output\n")
        calls.append({"kwargs": kwargs})
        return record(command, env)

    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", run)
    artifacts = tmp_path / "artifacts"
    code = cli.main(["gate", "--suite", "stateful", "--suite", "races", "--workers", "1", "--profile", "ci",
                     "--artifacts", str(artifacts)])
    assert code == 0
    assert {c["command"][3] for c in calls if "command" in c} == {"stateful_tests", "race_tests"}
    by_stop = [c["kwargs"] for c in calls if "kwargs" in c]
    assert sorted(k.get("stop") is not None for k in by_stop) == [False, True]  # only the lane's suite has one
    out = capsys.readouterr().out
    assert "[1/2] stateful ...\n" in out and "[2/2] races ... (beside stateful" in out
    assert "the lane suite's own output" in out
    assert (artifacts / "output" / "races.log").read_text() == "the lane suite's own output\n"
    saved = json.loads((artifacts / "run.json").read_text())
    assert sorted(suite["name"] for suite in saved["suites"]) == ["races", "stateful"]


def test_a_suite_path_missing_from_the_checkout_is_a_usage_error_before_anything_runs(tmp_path, capsys,
                                                                                        monkeypatch):
    """pytest-xdist reports a missing test path as "no tests collected": the gate would call the suite empty."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run(calls, None, 5))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    assert cli.main(["gate", "--suite", "unit", "--artifacts", str(tmp_path / "artifacts")]) == 2
    err = capsys.readouterr().err
    assert "these test paths are not under" in err and "unit: tests/systems" in err and "unit: tests/unit" not in err
    assert calls == []
    assert [suite.paths for suite in cli.SUITES if suite.name == "emulator"] == [("tests/emulator", "tests/systems")]


def test_suite_process_gets_the_emulator_and_profile(tmp_path, monkeypatch):
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run(calls, None, 5))
    suite = next(s for s in cli.SUITES if s.name == "races")
    status, _counts, _seconds = cli._run_suite(suite, tmp_path, "ci", "2", "known_bad.journal:x")
    assert status == "empty"
    command = calls[0]["command"]
    assert command[command.index("-n") + 1] == "2" and "--hypothesis-profile=ci" in command
    assert command[command.index("--dist") + 1] == "worksteal"
    assert calls[0]["env"][ENV_SYSTEM] == "known_bad.journal:x"


def test_parser_rejects_a_missing_subcommand():
    with pytest.raises(SystemExit) as caught:
        cli.build_parser().parse_args([])
    assert caught.value.code == 2


def test_help_lists_the_new_commands(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("gate", "report", "replay", "emulator"))



# --- --system: an implementation other than the reference ---------------------------------------------------

PASSING = """<testsuites><testsuite name="pytest">
<testcase classname="tests.systems.journal.machine.TestJournalLockstep" name="runTest" time="3.0"/>
</testsuite></testsuites>
"""

HELLO_ONLY = """
import json, os, sys
for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.write(json.dumps({"id": request["id"], "output": {"protocol": "fencecheck-implementation",
        "version": 1, "system": "journal", "implementation": "fake-journal 0.3",
        "projectId": os.environ["FENCECHECK_PROJECT_ID"]}}) + "\\n")
    sys.stdout.flush()
"""


def _system_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, returncode: int = 0,
                 junit: str | None = None) -> tuple[int, list[dict[str, Any]], Path]:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", _fake_run(calls, junit, returncode))
    artifacts = tmp_path / "artifacts"
    code = cli.main(["gate", "--suite", "stateful", "--system", spec, "--workers", "1", "--profile", "ci",
                     "--artifacts", str(artifacts)])
    return code, calls, artifacts


def test_gate_against_an_exec_system_greets_it_and_names_it_in_the_evidence(tmp_path, capsys, monkeypatch):
    script = tmp_path / "fake_journal.py"
    script.write_text(HELLO_ONLY)
    spec = f"journal:exec:{sys.executable} {script}"
    code, calls, artifacts = _system_gate(tmp_path, monkeypatch, spec, junit=PASSING)
    assert code == 0  # the question is the ordinary one: did every suite pass against it
    (call,) = calls
    assert call["env"][ENV_SYSTEM] == spec
    assert call["command"][4:8] == ["--only-system", "journal", "--without-catalogues", "-q"]  # its system alone
    described = f"fake-journal 0.3 (journal, protocol version 1), started as {sys.executable} {script}"
    assert f"implementation under test: {described}" in capsys.readouterr().out
    evidence = json.loads((artifacts / "evidence.json").read_text())
    assert evidence["environment"]["implementation"] == described
    assert evidence["systemUnderTest"] == spec
    assert described in (artifacts / "evidence.md").read_text().splitlines()[0]
    assert described in (artifacts / "evidence.html").read_text()


def test_gate_against_a_failing_system_fails(tmp_path, monkeypatch):
    code, _calls, _artifacts = _system_gate(tmp_path, monkeypatch, f"known_bad.journal:{FAST_VARIANT}", 1,
                                            STATEFUL_FAILURE)
    assert code == 1  # a failure is a failure here: nothing asked whether it was caught


def test_an_exec_system_that_cannot_start_stops_the_gate_before_any_suite(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    code = cli.main(["gate", "--system", f"journal:exec:{tmp_path / 'missing'}", "--artifacts", str(tmp_path)])
    assert code == 2
    assert "cannot start the implementation command" in capsys.readouterr().err


def test_system_and_known_bad_together_are_a_usage_error(tmp_path, capsys, monkeypatch):
    _refuse_suites(monkeypatch)
    code = cli.main(["gate", "--system", "reference", "--known-bad", FAST_VARIANT, "--artifacts", str(tmp_path)])
    assert code == 2
    assert "give one of them" in capsys.readouterr().err
