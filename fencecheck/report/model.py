"""The evidence report's data model: one `Run`, rendered three ways (JSON, Markdown, HTML).

Every record is a frozen attrs class and pure data; `collect.py` builds them from an artifacts directory,
the renderers only read them. A section that was not run is `None` on the `Run` and is written as
`{"status": "not run"}`, so no reader can mistake "nothing ran" for "nothing failed".

`Run.to_json()` / `Run.from_json()` carry `schemaVersion` (docs/report.md describes every key). The
verdict, the seeds, the known-bad breakdown and similar summaries are derived: they are written for
readers and recomputed, never trusted, when a JSON file is read back.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

import attrs

from fencecheck.checker.definite import contention_problem, degree_judged, scenario_contention, undecided_problem
from fencecheck.checker.known_bad_verdict import STATUSES
from fencecheck.report.codec import decode, encode
from fencecheck.report.failures import Failure
from fencecheck.report.mutation import MutationSection
from fencecheck.report.parallel import ParallelSection
from fencecheck.report.wire_faults import WireFaultSection
from fencecheck.report.wire_faults import warnings as wire_warnings

# 1 was the gate's first, minimal evidence.json (suites and lock timeouts only); 2 had one system's coverage; 3 had
# one `kind` ("contract" or "error") per failed test and true/false replays, not the problems' structured kinds.
SCHEMA_VERSION = 4

PASS, FAIL, INCOMPLETE = "pass", "fail", "incomplete"
NOT_RUN = "not run"
COLLECTED = "collected"

SUITE_PASSED, SUITE_FAILED, SUITE_EMPTY = "passed", "failed", "empty"
SUITE_STATUSES = (SUITE_PASSED, SUITE_FAILED, SUITE_EMPTY, NOT_RUN)

RACE_VERDICTS = ("ok", "illegal", "unknown")
# How much of a linearization the report shows for a race run:
#   found     the checker's full linearization (verdict ok)
#   prefix    the longest linearizable prefix (verdict illegal); the failing call is marked
#   none      nothing to show (verdict unknown: the search ran out of budget, or the history was unreadable)
LINEARIZATION_KINDS = ("found", "prefix", "none")

# The statuses are the known-bad judge's (fencecheck.checker.known_bad_verdict), named here as the report spells them.
KNOWN_BAD_STATUSES = STATUSES

THOROUGH_PROFILES = frozenset({"thorough"})  # profiles under which every reachable transition must fire


# --- run metadata ------------------------------------------------------------------------------------


@attrs.frozen
class Environment:
    """Where the run happened. `source` is "gate" when captured while the suites ran, "report" when the
    report was re-rendered later without the gate's record (then the versions are today's, not the run's)."""

    commit: str | None = None
    dirty: bool | None = None
    python: str | None = None
    hypothesis: str | None = None
    google_cloud_firestore: str | None = None
    pytest: str | None = None
    java: str | None = None
    emulator: str | None = None
    source: str = "gate"
    # What the suites ran against when it was not the reference (`gate --system`): for an exec: implementation
    # its own name, system and protocol version from its hello, and its command line.
    implementation: str | None = None


@attrs.frozen
class Settings:
    """How the run was configured: the Hypothesis profile's settings, xdist workers, race repetitions."""

    profile: str | None = None
    hypothesis: dict[str, Any] = attrs.field(factory=dict)
    workers: str | None = None
    race_repeat: int | None = None
    selected_suites: tuple[str, ...] = ()


# --- sections ----------------------------------------------------------------------------------------


@attrs.frozen
class SuiteResult:
    """One pytest suite: the gate's status from its exit code, counts from its JUnit XML."""

    name: str
    status: str
    tests: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0  # sum of the test cases' times (JUnit)
    wall_seconds: float | None = None  # the suite's process, start to end (gate only)
    failing: tuple[str, ...] = ()
    # Against one implementation (gate --known-bad / --system): what its tests drove (fencecheck.report.junit).
    drove_implementation: int = 0
    reference_only: tuple[str, ...] = ()
    no_implementation: int = 0

    @property
    def against_one(self) -> bool:
        """The suite ran against one implementation and its tests said what they drove."""
        return bool(self.drove_implementation or self.reference_only or self.no_implementation)

    def __attrs_post_init__(self) -> None:
        if self.status not in SUITE_STATUSES:
            raise ValueError(f"suite {self.name}: unknown status {self.status!r}")


@attrs.frozen
class StatefulFailure:
    message: str
    counterexample: str | None = None


@attrs.frozen
class StatefulMachine:
    """One Hypothesis state machine's run (artifacts/stateful/<machine>.json)."""

    machine: str
    profile: str | None
    examples: int
    steps: int
    seconds: float
    failures: tuple[StatefulFailure, ...] = ()
    # wire faults the machine's steps met, per kind and method ("fail-response Commit": n); {} without the wire
    wire_faults: dict[str, int] = attrs.field(factory=dict)


@attrs.frozen
class StatefulSummary:
    machines: tuple[StatefulMachine, ...]

    _json_derived: ClassVar = ("examples", "steps", "failure_count")

    @property
    def examples(self) -> int:
        return sum(m.examples for m in self.machines)

    @property
    def steps(self) -> int:
        return sum(m.steps for m in self.machines)

    @property
    def failure_count(self) -> int:
        return sum(len(m.failures) for m in self.machines)


@attrs.frozen
class CoverageRow:
    """One row of a system's transition table (`model.journal.TRANSITIONS`, `model.lantern.TRANSITIONS`) and
    how often the lockstep runs exercised it."""

    id: str
    operation: str
    from_state: str
    condition: str
    outcome: str | None
    writes: bool
    reachable: bool
    count: int

    _json_derived: ClassVar = ("unexercised",)

    @property
    def unexercised(self) -> bool:
        """A reachable transition that never fired: a gap in the evidence (unreachable rows never count)."""
        return self.reachable and self.count == 0


@attrs.frozen
class NearMissCoverage:
    """The calls of one near-miss class (fencecheck.checker.near_miss) and the transitions they reached."""

    name: str
    description: str
    transitions: tuple[tuple[str, int], ...] = ()  # (transition, count), by transition id

    @property
    def calls(self) -> int:
        return sum(count for _transition, count in self.transitions)


@attrs.frozen
class Coverage:
    """One system's transition coverage."""

    rows: tuple[CoverageRow, ...]
    files: int  # per-process coverage files merged
    system: str  # the plug-in's name (fencecheck.plugin.registry)
    near_misses: tuple[NearMissCoverage, ...] = ()  # every class, in fencecheck.checker.near_miss.CLASSES order

    _json_derived: ClassVar = ("unexercised_reachable",)

    @property
    def unexercised_reachable(self) -> tuple[str, ...]:
        return tuple(row.id for row in self.rows if row.unexercised)


@attrs.frozen
class CoverageSection:
    """Transition coverage of every system whose stateful machines ran, in plug-in order."""

    systems: tuple[Coverage, ...]

    def of(self, system: str) -> Coverage | None:
        return next((c for c in self.systems if c.system == system), None)


@attrs.frozen
class RaceCall:
    """One call of a race history, as the timeline draws it.

    Times are milliseconds from the run's first invocation; `returned_ms` is None for a call that never
    returned. `order` is the call's 1-based place in the linearization (or in the longest linearizable
    prefix of an illegal history); None when it was not placed. `failing` marks the call that cannot be
    placed after that prefix.
    """

    id: int
    caller: str
    op: str
    invoked_ms: float
    returned_ms: float | None
    outcome: str
    definite: bool
    order: int | None = None
    failing: bool = False


@attrs.frozen
class RaceScenario:
    """One run (scenario x repetition) of the race suite, from artifacts/races/<scenario>-<repeat>.json."""

    scenario: str
    repeat: int
    ids_seed: int | None
    width: int
    lanes: tuple[str, ...]  # caller names: the racing callers, then the sequential `after` callers
    outcomes: dict[str, int]  # final answer -> callers
    first_outcomes: dict[str, int]  # first attempt's answer -> callers
    definite_callers: int
    definite_share: float
    whole_call_retries: int
    attempts: int  # transaction attempts over every call
    aborts: int
    max_attempts: int
    verdict: str
    checker_ms: float
    checker_steps: int
    race_seconds: float
    total_seconds: float
    problems: tuple[str, ...] = ()
    promise_problems: tuple[str, ...] = ()
    explanation: str | None = None
    counterexample: str | None = None
    lock_timeouts: int | None = None
    linearization: str = "none"
    history: tuple[RaceCall, ...] = ()
    system: str = attrs.field(kw_only=True)  # the plug-in whose implementation raced (fencecheck.plugin.registry)
    contract_unavailable_callers: int = 0  # indefinite with the model's own unavailable answer: not contention
    # A contended run raced again at lower degrees: the highest judged, its verdict and findings (None: none).
    judged_width: int | None = None
    judged_verdict: str | None = None
    judged_problems: tuple[str, ...] = ()
    undecided: tuple[str, ...] = ()  # expectations missed while a caller went unanswered: contention

    _json_derived: ClassVar = ("run_id", "passed", "failing_call", "contention", "degree")

    def __attrs_post_init__(self) -> None:
        if self.verdict not in RACE_VERDICTS:
            raise ValueError(f"race {self.run_id}: unknown verdict {self.verdict!r}")
        if self.linearization not in LINEARIZATION_KINDS:
            raise ValueError(f"race {self.run_id}: unknown linearization kind {self.linearization!r}")

    @property
    def run_id(self) -> str:
        return f"{self.scenario}-{self.repeat}"

    @property
    def contention(self) -> str | None:
        """Why too few racing callers got a definite answer for the verdict to count (fencecheck.checker.definite)."""
        return (contention_problem(self.definite_callers + self.contract_unavailable_callers, self.width)
                or undecided_problem(self.undecided))

    @property
    def degree(self) -> str | None:
        """For a contended run, the degree it was judged at: "contended at 24, judged at 8: ok" (no pass)."""
        if self.contention is None:
            return None
        return degree_judged(self.width, self.judged_width, self.judged_verdict, self.judged_problems)

    @property
    def passed(self) -> bool:
        return self.verdict == "ok" and not self.problems and not self.promise_problems and self.contention is None

    @property
    def failing_call(self) -> int | None:
        return next((call.id for call in self.history if call.failing), None)


@attrs.frozen
class LockTimeoutSource:
    """One emulator's count: the gate's own emulator, or a pytest session that owned one."""

    source: str
    count: int | None


@attrs.frozen
class LockTimeouts:
    sources: tuple[LockTimeoutSource, ...]

    _json_derived: ClassVar = ("count",)

    @property
    def count(self) -> int | None:
        """The sum over emulators that could count (None when none could read its log)."""
        known = [s.count for s in self.sources if s.count is not None]
        return sum(known) if known else None


@attrs.frozen
class RulesCase:
    identity: str
    operation: str
    target: str
    outcome: str  # allowed | denied | error
    http_status: int
    error_status: str | None = None
    document_count: int | None = None


@attrs.frozen
class RulesSummary:
    """The rules probe's full matrix (`RulesMatrix.to_json()`), with its deviations from the boundary."""

    identities: tuple[str, ...]
    targets: tuple[str, ...]
    boundary_holds: bool
    documents_unchanged: bool | None
    cases: tuple[RulesCase, ...]
    deviations: tuple[str, ...]  # case ids (identity-operation-target) whose outcome is not the expected one


@attrs.frozen
class KnownBadResult:
    """One known-bad variant of the catalogue (artifacts/known_bad/<name>.json)."""

    name: str
    rule: str
    caught: bool
    status: str
    seconds_to_detection: float | None = None
    shrunk_steps: int | None = None
    counterexample: str | None = None
    failing_property: str | None = None
    warnings: tuple[str, ...] = ()  # bounds that did not hold but decide nothing (fencecheck.checker.known_bad_verdict)

    def __attrs_post_init__(self) -> None:
        if self.status not in KNOWN_BAD_STATUSES:
            raise ValueError(f"known-bad {self.name}: unknown status {self.status!r}")


@attrs.frozen
class KnownBadCatalogue:
    variants: tuple[KnownBadResult, ...]

    _json_derived: ClassVar = ("breakdown",)

    @property
    def breakdown(self) -> dict[str, int]:
        """mutmut-style: how many variants were caught / survived / timed out / errored."""
        counts = Counter(v.status for v in self.variants)
        return {status: counts.get(status, 0) for status in KNOWN_BAD_STATUSES}


@attrs.frozen
class Counterexample:
    """A link to a saved counterexample file (a path as the suite recorded it, and whether it exists)."""

    kind: str  # race | stateful | known-bad | parallel
    source: str  # the race run, machine or variant that produced it
    path: str
    exists: bool


@attrs.frozen
class ArtifactError:
    """An artifact file that exists but could not be read: the report says so instead of guessing."""

    path: str
    message: str


@attrs.frozen
class Verdict:
    status: str  # pass | fail | incomplete
    reasons: tuple[str, ...] = ()  # why it is not a pass
    warnings: tuple[str, ...] = ()  # worth a reader's attention, but not failing


# --- the run -----------------------------------------------------------------------------------------

# Optional sections: attribute name -> JSON key. None on the Run means "not run".
_SECTIONS = {
    "stateful": "stateful",
    "coverage": "coverage",
    "races": "races",
    "lock_timeouts": "lockTimeouts",
    "rules": "rules",
    "known_bad": "knownBad",
    "parallel": "parallel",
    "wire_faults": "wireFaults",
    "mutation": "mutation",
}


@attrs.frozen
class RaceSection:
    scenarios: tuple[RaceScenario, ...]


@attrs.frozen
class Run:
    profile: str | None
    started_at: str | None
    finished_at: str | None
    interrupted: bool
    environment: Environment
    settings: Settings
    suites: tuple[SuiteResult, ...]
    stateful: StatefulSummary | None = None
    coverage: CoverageSection | None = None
    races: RaceSection | None = None
    lock_timeouts: LockTimeouts | None = None
    rules: RulesSummary | None = None
    known_bad: KnownBadCatalogue | None = None
    counterexamples: tuple[Counterexample, ...] = ()
    artifact_errors: tuple[ArtifactError, ...] = ()
    notes: tuple[str, ...] = ()  # what the collector wants a reader to know (ignored stale files, ...)
    parallel: ParallelSection | None = None  # parallel_tests (fencecheck/report/parallel.py)
    failed_tests: tuple[Failure, ...] = ()  # every failing test of the suites, from their JUnit files
    system_under_test: str | None = None  # None: the references; `known_bad.<system>:<variant>` under --known-bad
    system_is_known_bad: bool = False  # the system under test is a known-bad variant (`gate --known-bad`)
    wire_faults: WireFaultSection | None = None  # fault kinds per suite (report/wire_faults.py)
    mutation: MutationSection | None = None  # fencecheck mutate's scores (report/mutation.py); never judged

    @property
    def verdict(self) -> Verdict:
        return judge(self)

    def wire_suites_ran(self) -> tuple[str, ...]:
        """The suites whose sections were collected and whose calls go through the wire: each should record faults."""
        ran = {"stateful": self.stateful, "races": self.races, "parallel": self.parallel and self.parallel.runs}
        return tuple(suite for suite, section in ran.items() if section)

    def section_status(self, name: str) -> str:
        return NOT_RUN if getattr(self, name) is None else COLLECTED

    def seeds(self) -> dict[str, Any]:
        """What a rerun needs: Hypothesis derandomized or not, and each race run's id seed."""
        derandomized = bool(self.settings.hypothesis.get("derandomize"))
        races = {} if self.races is None else {s.run_id: s.ids_seed for s in self.races.scenarios}
        return {"hypothesis": "derandomized" if derandomized else "random", "races": races}

    def to_json(self) -> dict[str, Any]:
        verdict = self.verdict
        out: dict[str, Any] = {
            "schemaVersion": SCHEMA_VERSION,
            "verdict": encode(verdict),
            "profile": self.profile,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "interrupted": self.interrupted,
            "environment": encode(self.environment),
            "settings": encode(self.settings),
            "seeds": self.seeds(),
            "suites": encode(self.suites),
        }
        for name, key in _SECTIONS.items():
            section = getattr(self, name)
            out[key] = {"status": NOT_RUN} if section is None else {"status": COLLECTED, **encode(section)}
        out["failedTests"] = encode(self.failed_tests)
        out["systemUnderTest"] = self.system_under_test
        out["systemUnderTestIsKnownBad"] = self.system_is_known_bad
        out["counterexamples"] = encode(self.counterexamples)
        out["artifactErrors"] = encode(self.artifact_errors)
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Run:
        if not isinstance(data, dict):
            raise ValueError("evidence: expected a JSON object")
        version = data.get("schemaVersion")
        if version != SCHEMA_VERSION:
            raise ValueError(f"evidence: schemaVersion {version!r} is not {SCHEMA_VERSION}")
        sections = {}
        for name, key in _SECTIONS.items():
            raw = data.get(key, {"status": NOT_RUN} if key in _ADDED_IN_VERSION else None)
            if not isinstance(raw, dict) or raw.get("status") not in (NOT_RUN, COLLECTED):
                raise ValueError(f"evidence: {key} must be an object with status {NOT_RUN!r} or {COLLECTED!r}")
            if raw["status"] == COLLECTED:
                body = {k: v for k, v in raw.items() if k != "status"}
                sections[name] = decode(_SECTION_TYPES[name], body, f"$.{key}")
        return cls(
            profile=decode(str | None, data.get("profile"), "$.profile"),
            started_at=decode(str | None, data.get("startedAt"), "$.startedAt"),
            finished_at=decode(str | None, data.get("finishedAt"), "$.finishedAt"),
            interrupted=decode(bool, data.get("interrupted"), "$.interrupted"),
            environment=decode(Environment, data.get("environment"), "$.environment"),
            settings=decode(Settings, data.get("settings"), "$.settings"),
            suites=decode(tuple[SuiteResult, ...], data.get("suites"), "$.suites"),
            counterexamples=decode(tuple[Counterexample, ...], data.get("counterexamples", []), "$.counterexamples"),
            artifact_errors=decode(tuple[ArtifactError, ...], data.get("artifactErrors", []), "$.artifactErrors"),
            notes=decode(tuple[str, ...], data.get("notes", []), "$.notes"),
            failed_tests=decode(tuple[Failure, ...], data.get("failedTests", []), "$.failedTests"),
            system_under_test=decode(str | None, data.get("systemUnderTest"), "$.systemUnderTest"),
            system_is_known_bad=decode(bool, data.get("systemUnderTestIsKnownBad", False),
                                       "$.systemUnderTestIsKnownBad"),
            **sections,
        )


# Sections added to schema version 3 after its first files (version 4 files always have them): absent, they read as
# "not run".
_ADDED_IN_VERSION = frozenset({"wireFaults", "mutation"})

_SECTION_TYPES = {
    "stateful": StatefulSummary,
    "coverage": CoverageSection,
    "races": RaceSection,
    "lock_timeouts": LockTimeouts,
    "rules": RulesSummary,
    "known_bad": KnownBadCatalogue,
    "parallel": ParallelSection,
    "wire_faults": WireFaultSection,
    "mutation": MutationSection,
}


# --- the verdict -------------------------------------------------------------------------------------


def judge(run: Run) -> Verdict:
    """pass / fail / incomplete, with reasons.

    Fails on: a failed suite, a race run whose checker verdict is illegal or unknown (or whose structural
    invariants or promise broke, or with fewer than 90% definite racing callers), a race scenario with fewer
    than 99% definite racing callers over its repeats (`fencecheck.checker.definite`: contention), a known-bad
    variant that survived (sequential or concurrent), a parallel program that failed against the reference
    (or had a run with too few definite answers), a rules boundary that does not hold, an artifact that
    exists but cannot be read (it might hide any of these), and, under a thorough
    profile, a reachable transition never exercised (or no coverage at all). Incomplete, whatever else
    holds, when the run was interrupted or no suite ran at all: then nothing was shown either way.
    """
    reasons: list[str] = []
    warnings: list[str] = []
    for suite in run.suites:
        if suite.status == SUITE_FAILED:
            count = suite.failed + suite.errors
            reasons.append(f"suite {suite.name} failed" + (f" ({count} failing tests)" if count else ""))
    if run.races is not None:
        for scenario in run.races.scenarios:
            if scenario.verdict != "ok":
                reasons.append(f"race {scenario.run_id}: checker verdict {scenario.verdict}")
            elif scenario.problems or scenario.promise_problems:
                reasons.append(f"race {scenario.run_id}: structural or promise problems")
            if scenario.contention is not None:  # too few answers: a run that shows nothing, never a pass
                reasons.append(f"race {scenario.run_id}: {scenario.contention} ({scenario.degree})")
        shares = [(s.scenario, s.definite_callers + s.contract_unavailable_callers, s.width)
                  for s in run.races.scenarios]
        reasons += [f"race {name}: {problem}" for name, problem in scenario_contention(shares).items()]
    if run.known_bad is not None:
        for variant in run.known_bad.variants:
            if variant.status == "survived":
                reasons.append(f"known-bad {variant.name} survived (rule {variant.rule})")
            elif variant.status in ("timeout", "error"):
                warnings.append(f"known-bad {variant.name}: {variant.status}")
            warnings += [f"known-bad {variant.name}: {warning}" for warning in variant.warnings]
    if run.parallel is not None:
        reasons += run.parallel.reasons()
        warnings += run.parallel.warnings()
    warnings += wire_warnings(run.wire_faults, run.wire_suites_ran())  # the wire's evidence, not the contract's
    if run.rules is not None and not run.rules.boundary_holds:
        reasons.append(f"rules boundary does not hold ({len(run.rules.deviations)} deviating cases)")
    thorough = run.profile in THOROUGH_PROFILES
    if thorough and run.coverage is None:
        reasons.append(f"profile {run.profile}: no transition coverage was collected")
    for coverage in run.coverage.systems if run.coverage is not None else ():
        missing = coverage.unexercised_reachable
        if missing and thorough:
            reasons.append(f"profile {run.profile}: {len(missing)} reachable {coverage.system} transitions unexercised")
        elif missing:
            warnings.append(f"{len(missing)} reachable {coverage.system} transitions unexercised")
    reasons += [f"unreadable artifact {error.path}" for error in run.artifact_errors]
    warnings += [f"suite {suite.name} not run" for suite in run.suites if suite.status == NOT_RUN]
    warnings += [f"suite {suite.name} ran no test" for suite in run.suites if suite.status == SUITE_EMPTY]
    warnings += [f"no {key} artifacts (not run)" for name, key in _SECTIONS.items() if getattr(run, name) is None]
    if run.environment.dirty:
        warnings.append("the working tree had uncommitted changes")

    nothing_ran = all(suite.status in (NOT_RUN, SUITE_EMPTY) for suite in run.suites)  # nothing was verified
    if run.interrupted:
        reasons.insert(0, "the run was interrupted")
        return Verdict(INCOMPLETE, tuple(reasons), tuple(warnings))
    if nothing_ran:
        reasons.insert(0, "no suite ran a test")
        return Verdict(INCOMPLETE, tuple(reasons), tuple(warnings))
    return Verdict(FAIL if reasons else PASS, tuple(reasons), tuple(warnings))
