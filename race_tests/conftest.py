"""Race suite options and fixtures.

    .venv/bin/python -m pytest race_tests -n 2                      # every scenario once
    .venv/bin/python -m pytest race_tests -n 2 --race-repeat 10     # every scenario 10 times
    FENCECHECK_RACE_REPEAT=10 .venv/bin/python -m pytest race_tests -n auto

`--race-repeat N` parametrizes each scenario over a repetition index (ids `r0`..`r{N-1}`), so xdist spreads
the repetitions over its workers; each repetition runs in its own emulator project with fresh ids. Every
registered system's races (test_race_reference.py, over the systems whose plug-in names race scenarios) run
through `fencecheck.runners.contest`: every run is saved as `artifacts/races/<system>_<scenario>-<repeat>.json`; a
failed verdict also saves the history as `counterexamples/race-<system>_<scenario>-<shortid>.json` (re-check it with
`fencecheck.runners.contest_results.recheck(path)`). Each system's results are evidence about its reference: they
are cleared and written only when the run uses that reference (`reference_run(system=...)`).

Definite share (`fencecheck.checker.definite`): a run fails for contention below 90% definite racing callers (in
the test), and a scenario below 99% over its repeats of this session: each test records its counts
(`record_share`), the controller sums them per scenario and fails the session at its end, naming the
scenario under "definite share" in the summary.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.checker.definite import scenario_contention
from fencecheck.errors import CheckFailed, FencecheckError
from fencecheck.plugin.registry import plugin
from fencecheck.plugin.specs import ENV_SYSTEM, check_configured, configured_implementation, reference_run
from fencecheck.runners.contest import qualified_name
from fencecheck.runners.contest_results import write_json
from fencecheck.suites import artifacts_root
from fencecheck.suites.pytest_plugin import count_option, wire_mix

ENV_REPEAT = "FENCECHECK_RACE_REPEAT"
SHARE_PROPERTY = "fencecheck_definite_share"  # user property: (scenario, definite callers, callers)
WIRE_PROPERTY = "fencecheck_wire_faults"  # user property: (system, {"kind Method": count})
_SHARES: list[tuple[str, int, int]] = []  # this process's runs: (scenario, definite callers, callers)
_WIRE: dict[str, Counter[str]] = {}  # the session's wire fault events per system (the controller's sum)
WIRE_FAULTS_FILE = "wire-faults/races.json"  # under artifacts/: the session's race fault kinds per system
_SHARE_PROBLEMS = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("races", "race suite")
    group.addoption(
        "--race-repeat",
        type=int,
        default=None,
        metavar="N",
        help=f"run every race scenario N times (default: ${ENV_REPEAT} or 1)",
    )


def race_repeat(config: pytest.Config) -> int:
    return count_option(config, "race_repeat", ENV_REPEAT, 1)


def artifacts_dir(config: pytest.Config) -> Path:
    return artifacts_root(config.rootpath) / "races"


def counterexamples_dir(config: pytest.Config) -> Path:
    return config.rootpath / "counterexamples"


_RESULT_FILE = re.compile(r"^(?P<scenario>[a-z0-9_]+)-(?P<repeat>\d+)\.json$")


def race_systems() -> tuple[str, ...]:
    """The registered systems with race scenarios (the others fail test_race_suite_parts.py)."""
    return suite_parts.with_part("races")


def races_of(name: str) -> Any:
    """System `name`'s race module (the one its plug-in's `SuiteParts.races` names)."""
    return suite_parts.load(plugin(name), "races")


def _result_scenarios() -> set[str]:
    """The scenario names of the result files this run may write (`<system>_<scenario>`): each registered
    system's with race scenarios, when this run is against that system's reference."""
    return {qualified_name(plugin(name), scenario)
            for name in race_systems() if reference_run(system=name)
            for scenario in races_of(name).BY_NAME}


def pytest_configure(config: pytest.Config) -> None:
    race_repeat(config)  # a bad value is a usage error before anything runs
    wire_mix(config)  # so is a malformed --wire-faults / $FENCECHECK_WIRE_FAULTS
    try:
        check_configured()  # so is a $FENCECHECK_SYSTEM that names nothing importable, of either system
    except FencecheckError as error:
        raise pytest.UsageError(f"{ENV_SYSTEM}: {error}") from None
    if hasattr(config, "workerinput"):
        return
    _SHARES.clear()
    _WIRE.clear()
    (artifacts_root(config.rootpath) / WIRE_FAULTS_FILE).unlink(missing_ok=True)
    # The controller (or a plain run) forgets earlier runs' per-run results, so the directory describes
    # this run only. Per-run results are about a reference: a run against another implementation of a system
    # neither clears nor writes that system's. benchmark.json (written by benchmarks/races.py) is left alone.
    ours = _result_scenarios()
    directory = artifacts_dir(config)
    if ours and directory.is_dir():
        for path in directory.iterdir():
            match = _RESULT_FILE.match(path.name)
            if match and match["scenario"] in ours:
                path.unlink(missing_ok=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "race_repeat" in metafunc.fixturenames:
        count = race_repeat(metafunc.config)
        metafunc.parametrize("race_repeat", range(count), ids=[f"r{i}" for i in range(count)])


def pytest_report_header(config: pytest.Config) -> str:
    counts = ", ".join(f"{len(races_of(name).SCENARIOS)} {name}" for name in race_systems())
    return f"race suite: {counts} scenarios x {race_repeat(config)} repetition(s)"


@pytest.fixture
def implementation(system_name: str) -> Any:
    """The implementation under test of the system a test is parametrized with (`system_name`): its reference, or
    the implementation of that system $FENCECHECK_SYSTEM names (`fencecheck gate --known-bad NAME` sets it)."""
    return configured_implementation(plugin(system_name))


# --- the definite share over a scenario's repeats ----------------------------------------------------


def record_share(record_property, result) -> None:
    """Record a run's counts for the session's per-scenario check (`result`: a `ScenarioResult`)."""
    answered = result.definite_callers + result.contract_unavailable_callers
    record_property(SHARE_PROPERTY, [result.scenario, answered, result.callers])


def record_wire_faults(record_property, run) -> None:
    """Record a run's wire fault events (`ContestRun.wire_faults`) for the session's count per system."""
    record_property(WIRE_PROPERTY, [run.plugin.name, dict(run.wire_faults)])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect what the race tests recorded (on the controller, xdist forwards each worker's reports with
    their user properties; a worker's own collection is never read)."""
    if report.when == "call":
        _SHARES.extend(tuple(value) for name, value in report.user_properties if name == SHARE_PROPERTY)
        for name, value in report.user_properties:
            if name == WIRE_PROPERTY:
                _WIRE.setdefault(value[0], Counter()).update(value[1])


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return
    if any(_WIRE.values()):  # the evidence: fault kinds exercised per system's races in this session
        write_json(artifacts_root(session.config.rootpath) / WIRE_FAULTS_FILE,
                   {system: dict(sorted(kinds.items())) for system, kinds in sorted(_WIRE.items()) if kinds})
    problems = scenario_contention(_SHARES)
    session.config.stash[_SHARE_PROBLEMS] = problems
    if problems and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if any(_WIRE.values()):
        terminalreporter.section("wire faults", sep="-")
        for system, kinds in sorted(_WIRE.items()):
            shown = ", ".join(f"{label} {count}" for label, count in sorted(kinds.items()))
            terminalreporter.line(f"{system} races: {shown or 'none'}")
    problems = config.stash.get(_SHARE_PROBLEMS, {})
    if problems:
        terminalreporter.section("definite share", sep="=", red=True)
        for scenario, problem in problems.items():
            terminalreporter.line(f"FAILED {scenario}: {problem}")


def assert_race_passed(races: Any, scenario: Any, race_repeat: int, result: Any) -> None:
    """A race of a system whose race module is `races` passed, judged by that module's `INVARIANTS` and `PROMISE`
    (`assert_contest_passed`)."""
    assert_contest_passed(scenario, race_repeat, result, invariants=races.INVARIANTS, promise=races.PROMISE)


def assert_contest_passed(scenario: Any, race_repeat: int, result: Any, *, invariants: str, promise: str) -> None:
    """A race's result passed: decided and linearizable, its `invariants` and harness checks kept, its `promise`
    (`scenario.promise_text`) kept, enough callers definite. One message names every failure, a contract finding
    before contention."""
    where = f"history saved to {result.counterexample}" if result.counterexample else "no history saved"
    failures = []
    if result.verdict == "unknown":  # an undecided history is not a pass
        failures.append(f"the checker could not decide within its budget ({where}):\n{result.explanation}")
    elif result.verdict != "ok":
        failures.append(f"the history is not linearizable ({where}):\n{result.explanation}")
    if result.problems:
        failures.append(f"{invariants} or harness checks broken:\n" + "\n".join(map(str, result.problems)))
    if result.promise_problems:
        failures.append(f"{promise} ({scenario.promise_text}) is broken:\n"
                        + "\n".join(map(str, result.promise_problems)))
    if result.contention is not None:  # last: a contract finding above outweighs it
        failures.append(f"{result.contention}\n{result.degree}")
    # each finding's kind travels with the failure (fencecheck.suites.pytest_plugin records it for the gate)
    if failures:
        raise CheckFailed(f"{scenario.name} (repeat {race_repeat}): " + "\n\n".join(failures), result.findings())
