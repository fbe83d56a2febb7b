"""Build a `Run` from an artifacts directory (layout in artifacts.py).

Rules the collector keeps:

- A section with no files is `None` ("not run"), never an empty success.
- A file that exists but cannot be read becomes an `ArtifactError` (and fails the verdict): a corrupt race
  file must not hide an illegal history.
- With the gate's record (run.json), files older than the run's start are left out and counted in a note:
  an earlier run's races must not stand in for suites this run did not start.
- Race runs are re-checked with the (pure, deterministic) linearizability checker, because the result
  files keep the verdict and its explanation but not the order the checker found, which the timeline shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker import coverage as transition_coverage
from fencecheck.checker import near_miss
from fencecheck.checker.history import History
from fencecheck.checker.linearizability import check
from fencecheck.plugin.registry import SYSTEM_NAMES
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.report import artifacts as layout
from fencecheck.report import failures as gate_failures
from fencecheck.report.codec import decode
from fencecheck.report.junit import SuiteCounts, parse_junit
from fencecheck.report.model import (
    NOT_RUN,
    SUITE_EMPTY,
    SUITE_FAILED,
    SUITE_PASSED,
    ArtifactError,
    Counterexample,
    Coverage,
    CoverageRow,
    CoverageSection,
    Environment,
    KnownBadCatalogue,
    KnownBadResult,
    LockTimeouts,
    LockTimeoutSource,
    NearMissCoverage,
    RaceCall,
    RaceScenario,
    RaceSection,
    RulesCase,
    RulesSummary,
    Run,
    StatefulMachine,
    StatefulSummary,
    SuiteResult,
)
from fencecheck.report.mutation import collect_mutation
from fencecheck.report.parallel import ParallelSection, collect_parallel
from fencecheck.report.record import GateRecord, capture_environment, run_settings
from fencecheck.report.wire_faults import check_race_wire_faults, collect_wire_faults, fault_kinds
from fencecheck.runners.contest import answer_label
from fencecheck.runners.contest_results import RESULT_FORMAT, saved_format, state_after_setup
from fencecheck.runners.rules_probe import ProbeResult, RulesMatrix

# fencecheck.cli.main.SUITES, in gate order
DEFAULT_SUITES = ("unit", "rules", "emulator", "stateful", "races", "parallel")
_RACE_FILE = re.compile(r"^[a-z0-9_]+-\d+\.json$")  # race_tests/conftest.py; benchmark.json is not a run
_STALE_SLACK_SECONDS = 2.0  # the record's start is written to the second


class _Collector:
    """Accumulates errors and notes while the sections are read; one instance per `collect` call."""

    def __init__(self, artifacts: Path, since: float | None) -> None:
        self.artifacts = artifacts
        self.since = since
        self.errors: list[ArtifactError] = []
        self.stale: list[str] = []

    def files(self, pattern: str) -> list[Path]:
        """Files of this run matching a glob under the artifacts directory, in name order."""
        found = []
        for path in sorted(self.artifacts.glob(pattern)):
            if not path.is_file():
                continue
            if self.since is not None and path.stat().st_mtime < self.since:
                self.stale.append(self.relative(path))
                continue
            found.append(path)
        return found

    def relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.artifacts).as_posix()
        except ValueError:
            return str(path)

    def read(self, path: Path, parse: Callable[[Any], Any]) -> Any | None:
        """`parse(json)` of a file, or None with the failure recorded as an ArtifactError."""
        try:
            return parse(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.errors.append(ArtifactError(self.relative(path), f"{type(error).__name__}: {error}"[:300]))
            return None


def collect(
    artifacts: Path | str,
    *,
    suites: Sequence[str] = DEFAULT_SUITES,
    record: GateRecord | None = None,
) -> Run:
    """The run described by `artifacts`; `record` defaults to artifacts/run.json when present."""
    artifacts = Path(artifacts)
    notes: list[str] = []
    record_error = None
    if record is None:
        try:
            record = GateRecord.load(artifacts)
        except (OSError, ValueError, TypeError) as error:
            record_error = ArtifactError(layout.RUN_FILE, f"{type(error).__name__}: {error}"[:300])
    since = _timestamp(record.started_at) - _STALE_SLACK_SECONDS if record is not None else None
    c = _Collector(artifacts, since)
    if record_error is not None:
        c.errors.append(record_error)

    suite_results = _suites(c, suites, record)
    machines = _stateful_machines(c)
    stateful = StatefulSummary(tuple(m for _, m in machines)) if machines else None
    coverage = _coverage(c)
    races = _races(c, notes)
    sessions = _sessions(c)
    lock_timeouts = _lock_timeouts(record, sessions, suite_results)
    rules = _rules(c)
    known_bad = _known_bad(c)
    parallel = collect_parallel(c)
    wire_faults = collect_wire_faults(c, {m.machine: (path, m.wire_faults) for path, m in machines}, SYSTEM_NAMES)

    if record is not None:
        environment, settings = record.environment, record.settings
        profile, started, finished = record.profile, record.started_at, record.finished_at
        interrupted = record.interrupted or record.finished_at is None  # no finish: the gate died mid-run
    else:
        environment = _environment_from_sessions(capture_environment(source="report"), sessions)
        profile = _profile_from(stateful)
        settings = run_settings(profile, None)
        started = finished = None
        interrupted = False
        notes.append("no gate record (run.json): environment and settings were read when this report was rendered")
    if c.stale:
        notes.append(f"ignored {len(c.stale)} artifact files older than this run: {', '.join(c.stale[:5])}"
                     + (" ..." if len(c.stale) > 5 else ""))

    return Run(
        profile=profile,
        started_at=started,
        finished_at=finished,
        interrupted=interrupted,
        environment=environment,
        settings=settings,
        suites=suite_results,
        stateful=stateful,
        coverage=coverage,
        races=races,
        lock_timeouts=lock_timeouts,
        rules=rules,
        known_bad=known_bad,
        parallel=parallel,
        wire_faults=wire_faults,
        mutation=collect_mutation(c),
        # the suites' own failure texts; stale JUnit files were already left out of suite_results
        failed_tests=tuple(gate_failures.load_replays(
            artifacts, gate_failures.collect(artifacts, [s.name for s in suite_results if s.failing]))),
        system_under_test=gate_failures.load_system(artifacts),
        system_is_known_bad=gate_failures.load_known_bad(artifacts),
        counterexamples=_counterexamples(artifacts, stateful, races, known_bad, parallel),
        artifact_errors=tuple(c.errors),
        notes=tuple(notes),
    )


def _timestamp(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


# --- suites ------------------------------------------------------------------------------------------


def _suites(c: _Collector, names: Sequence[str], record: GateRecord | None) -> tuple[SuiteResult, ...]:
    ran = {suite.name: suite for suite in record.suites} if record is not None else {}
    junit = {path.stem: path for path in c.files(f"{layout.JUNIT_DIR}/*.xml")}
    results = []
    for name in dict.fromkeys([*names, *ran, *junit]):  # expected suites first, then any others found
        counts = None
        if name in junit:
            try:
                counts = parse_junit(junit[name].read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError) as error:  # ElementTree.ParseError is a SyntaxError
                c.errors.append(ArtifactError(c.relative(junit[name]), f"{type(error).__name__}: {error}"[:300]))
        gate = ran.get(name)
        if gate is not None:
            status = gate.status
        elif counts is not None:
            status = SUITE_FAILED if counts.failed or counts.errors else SUITE_PASSED if counts.tests else SUITE_EMPTY
        else:
            status = NOT_RUN
        results.append(_suite_result(name, status, counts or SuiteCounts(), gate.wall_seconds if gate else None))
    return tuple(results)


def _suite_result(name: str, status: str, counts: SuiteCounts, wall: float | None) -> SuiteResult:
    return SuiteResult(
        name=name,
        status=status,
        tests=counts.tests,
        passed=counts.passed,
        failed=counts.failed,
        errors=counts.errors,
        skipped=counts.skipped,
        seconds=counts.seconds,
        wall_seconds=wall,
        failing=counts.failing,
        drove_implementation=counts.drove_implementation,
        reference_only=counts.reference_only,
        no_implementation=counts.no_implementation,
    )


# --- stateful machines and transition coverage -------------------------------------------------------


def _stateful_machine(data: Any) -> StatefulMachine:
    if isinstance(data, dict) and "wireFaults" in data:
        fault_kinds(data["wireFaults"], "wireFaults")  # counts as the wire section reads them (no negative count)
    failures = data.get("failures", [])
    if isinstance(failures, int) and not isinstance(failures, bool):  # a bare count: no details recorded
        data = {**data, "failures": [{"message": "(no details recorded)"}] * failures}
    return decode(StatefulMachine, data)


def _stateful_machines(c: _Collector) -> list[tuple[str, StatefulMachine]]:
    """(file relative to the artifacts directory, machine) of every readable stateful summary."""
    return [(c.relative(path), m) for path in c.files(f"{layout.STATEFUL_DIR}/*.json")
            if (m := c.read(path, _stateful_machine))]


def _profile_from(stateful: StatefulSummary | None) -> str | None:
    profiles = {m.profile for m in stateful.machines if m.profile} if stateful else set()
    return profiles.pop() if len(profiles) == 1 else None


def _coverage(c: _Collector) -> CoverageSection | None:
    systems = tuple(found for name in SYSTEM_NAMES if (found := _system_coverage(c, name)) is not None)
    return CoverageSection(systems) if systems else None


def _system_coverage(c: _Collector, system: str) -> Coverage | None:
    files = c.files(f"{layout.COVERAGE_DIR}/{transition_coverage.file_prefix(system)}*.json")
    if not files:
        return None
    readable = [path for path in files if c.read(path, lambda data: data) is not None]
    try:
        counts = transition_coverage.merge(readable, system)
    except (OSError, ValueError, KeyError) as error:
        c.errors.append(ArtifactError(layout.COVERAGE_DIR, f"{type(error).__name__}: {error}"[:300]))
        return None
    # A row needs only `id` and `reachable` (SystemPlugin's model.transitions); the other columns are shown when
    # the table has them (the built-in systems' do), and left blank otherwise.
    rows = tuple(
        CoverageRow(
            id=row.id,
            operation=str(getattr(row, "operation", "")),
            from_state=str(getattr(row, "from_state", "")),
            condition=str(getattr(row, "condition", "")),
            outcome=getattr(row, "outcome", None),
            writes=bool(getattr(row, "writes", False)),
            reachable=row.reachable,
            count=counts.get(row.id, 0),
        )
        for row in plugin_named(system).transitions
    )
    near = transition_coverage.merge_near_misses(readable)  # already read: a malformed file failed above
    near_misses = tuple(NearMissCoverage(name, near_miss.CLASSES[name], tuple(counts.items()))
                        for name, counts in near.items())
    return Coverage(rows, len(readable), system, near_misses)


# --- races -------------------------------------------------------------------------------------------


def _races(c: _Collector, notes: list[str]) -> RaceSection | None:
    paths = [p for p in c.files(f"{layout.RACES_DIR}/*.json") if _RACE_FILE.match(p.name)]
    scenarios = [s for path in paths if (s := c.read(path, lambda data, p=path: _race(data, notes, p.name)))]
    if not scenarios:
        return None
    return RaceSection(tuple(sorted(scenarios, key=lambda s: (s.scenario, s.repeat))))


def _race(data: Any, notes: list[str], name: str) -> RaceScenario:
    if saved_format(data, name) != RESULT_FORMAT:  # an older version: an error that says how to regenerate
        raise ValueError(f"not a {RESULT_FORMAT} file")
    if "wireFaults" in data:  # the wire section counts the session's faults; a malformed record is still an error
        check_race_wire_faults(data["wireFaults"])
    history = History.from_json(data["history"])  # it names its system's plug-in
    system = history.system
    plugin = plugin_named(system)
    state = state_after_setup(plugin, data)
    verdict = data["verdict"]
    order: dict[int, int] = {}
    failing = None
    linearization = "none"
    if verdict in ("ok", "illegal"):  # "unknown" ran out of budget once already; it would again
        checked = check(history, plugin=plugin, initial_state=state, full=True)  # every partition's order
        if checked.status != verdict:
            notes.append(f"{name}: re-checking the history gave {checked.status}, the run recorded {verdict}")
        else:
            for partition in checked.partitions:
                order.update({call.id: place for place, call in enumerate(partition.order, 1)})
            explanation = checked.explanation
            failing = explanation.unplaceable_id if explanation is not None else None
            linearization = "found" if verdict == "ok" else "prefix"

    calls = sorted(history.calls, key=lambda call: call.id)
    origin = min((call.invoked_at for call in calls), default=0)
    # the checker's explanation uses the same epoch
    epoch = min((now for call in calls if (now := plugin.clock_of(call.op)) is not None), default=None)
    race_calls = tuple(
        RaceCall(
            id=call.id,
            caller=call.caller,
            op=plugin.describe_op(call.op, epoch=epoch),
            invoked_ms=round((call.invoked_at - origin) / 1e6, 3),
            returned_ms=None if call.completed_at is None else round((call.completed_at - origin) / 1e6, 3),
            outcome=answer_label(call.outcome),
            definite=call.outcome.definite,
            order=order.get(call.id),
            failing=call.id == failing,
        )
        for call in calls
    )
    lanes = [entry["caller"] for entry in (*data.get("callerAttempts", []), *data.get("afterAttempts", []))]
    lanes += [call.caller for call in calls if call.caller not in lanes]
    return RaceScenario(
        scenario=data["scenario"],
        system=system,
        repeat=data["repeat"],
        ids_seed=data.get("idsSeed"),
        width=data["width"],
        lanes=tuple(dict.fromkeys(lanes)),
        outcomes=dict(data["outcomes"]),
        first_outcomes=dict(data.get("first_outcomes", {})),
        definite_callers=data["definite_callers"],
        definite_share=float(data["definite_share"]),
        contract_unavailable_callers=data.get("contract_unavailable_callers", 0),
        judged_width=data.get("judged_width"),
        judged_verdict=data.get("judged_verdict"),
        judged_problems=tuple(data.get("judged_problems", ())),
        undecided=tuple(data.get("undecided", ())),
        whole_call_retries=data["whole_call_retries"],
        attempts=data["attempts"],
        aborts=data["aborts"],
        max_attempts=data["max_attempts"],
        verdict=verdict,
        checker_ms=float(data["checker_ms"]),
        checker_steps=data["checker_steps"],
        race_seconds=float(data["race_seconds"]),
        total_seconds=float(data["total_seconds"]),
        problems=tuple(data.get("problems", ())),
        promise_problems=tuple(data.get("promise_problems", ())),
        explanation=data.get("explanation"),
        counterexample=data.get("counterexample"),
        lock_timeouts=data.get("lock_timeouts"),
        linearization=linearization,
        history=race_calls,
    )


# --- emulator lock timeouts --------------------------------------------------------------------------


def _sessions(c: _Collector) -> list[dict[str, Any]]:
    def parse(data: Any) -> dict[str, Any]:
        if not isinstance(data, dict) or "lock_timeout_count" not in data:
            raise ValueError("not an emulator session file")
        return data

    return [s for path in c.files(f"{layout.EMULATOR_DIR}/session-*.json") if (s := c.read(path, parse))]


def _lock_timeouts(
    record: GateRecord | None, sessions: list[dict[str, Any]], suites: Iterable[SuiteResult]
) -> LockTimeouts | None:
    sources = []
    if record is not None and any(suite.status != NOT_RUN for suite in suites):
        sources.append(LockTimeoutSource("gate emulator", record.lock_timeouts))
    for session in sessions:
        sources.append(LockTimeoutSource(f"pytest session {session.get('worker', '?')}", session["lock_timeout_count"]))
    return LockTimeouts(tuple(sources)) if sources else None


def _environment_from_sessions(environment: Environment, sessions: list[dict[str, Any]]) -> Environment:
    for session in sessions:
        environment = attrs.evolve(
            environment,
            java=environment.java or session.get("java_version"),
            emulator=environment.emulator or session.get("emulator_version"),
        )
    return environment


# --- rules and the known-bad catalogue ---------------------------------------------------------------


def _rules_summary(data: Any) -> RulesSummary:
    results = tuple(
        ProbeResult(r["identity"], r["operation"], r["target"], r["httpStatus"], r.get("errorStatus"),
                    r.get("documentCount"))
        for r in data["results"]
    )
    # Re-derived from the cases with the probe's own rule, not trusted from the file.
    matrix = RulesMatrix(results, data.get("documentsUnchanged"))
    cases = tuple(
        RulesCase(r.identity, r.operation, r.target, r.outcome, r.http_status, r.error_status, r.document_count)
        for r in results
    )
    return RulesSummary(
        identities=tuple(data.get("identities") or dict.fromkeys(r.identity for r in results)),
        targets=tuple(data.get("targets") or dict.fromkeys(r.target for r in results)),
        boundary_holds=matrix.boundary_holds,
        documents_unchanged=matrix.documents_unchanged,
        cases=cases,
        deviations=tuple(r.case_id for r in matrix.deviations()),
    )


def _rules(c: _Collector) -> RulesSummary | None:
    paths = c.files(layout.RULES_FILE)
    return c.read(paths[0], _rules_summary) if paths else None


def _known_bad_result(data: Any) -> KnownBadResult:
    result = decode(KnownBadResult, data)
    if result.caught != (result.status == "caught"):
        raise ValueError(f"caught={result.caught} contradicts status {result.status!r}")
    return result


def _known_bad(c: _Collector) -> KnownBadCatalogue | None:
    variants = [v for p in c.files(f"{layout.KNOWN_BAD_DIR}/*.json") if (v := c.read(p, _known_bad_result))]
    return KnownBadCatalogue(tuple(sorted(variants, key=lambda v: v.name))) if variants else None


# --- counterexample links ----------------------------------------------------------------------------


def _counterexamples(
    artifacts: Path,
    stateful: StatefulSummary | None,
    races: RaceSection | None,
    known_bad: KnownBadCatalogue | None,
    parallel: ParallelSection | None = None,
) -> tuple[Counterexample, ...]:
    found: list[tuple[str, str, str]] = []
    for scenario in races.scenarios if races else ():
        if scenario.counterexample:
            found.append(("race", scenario.run_id, scenario.counterexample))
    for machine in stateful.machines if stateful else ():
        found += [("stateful", machine.machine, f.counterexample) for f in machine.failures if f.counterexample]
    for variant in known_bad.variants if known_bad else ():
        if variant.counterexample:
            found.append(("known-bad", variant.name, variant.counterexample))
    found += parallel.counterexamples() if parallel else []
    root = artifacts.parent
    return tuple(
        Counterexample(kind, source, path, (root / path).exists())  # an absolute path ignores `root`
        for kind, source, path in found
    )
