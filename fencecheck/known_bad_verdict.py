"""One definition of "caught", shared by every known-bad runner (the stateful catalogues, the lantern race and
seed-scenario catalogues, the parallel catalogue, `fencecheck gate --known-bad`).

A variant is **caught** when a run failed a property of the contract (a lockstep mismatch in an answer or the
stored documents, an `illegal` checker verdict, a structural invariant, a scenario's promise, the clock read
more than once per call) AND that failure replays against the variant AND the same program passes against the
reference. It is an **error**, never a catch, when the run failed by anything else: the harness or the variant
crashed outside the contract's error type (a `NameError`, say), the emulator failed, a call hung, or the only
failure is the checker answering `unknown` (budget exhausted); or when the failure did not replay against the
variant, or failed against the reference too. A crash or a hang seen beside a contract failure makes the whole
verdict an error: a run that crashed is not evidence. An undecided checker beside a contract failure (a broken
invariant of the stored documents, say) does not: the invariant was checked without the checker.
**survived**: no failure at all; **timeout**: the runner gave up before deciding.

Bounds on how small a shrunk counterexample is, or how quickly it was found, depend on how much time the
shrinkers got (the machine's load): they never decide the status, they are `warnings` on the verdict.

Runners describe what they saw as `Finding`s (a contract property or an error, with a one-line text) and call
`judge`; the artifact is written once, from the verdict, after every check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import attrs

CAUGHT, SURVIVED, TIMEOUT, ERROR = "caught", "survived", "timeout", "error"
STATUSES = (CAUGHT, SURVIVED, TIMEOUT, ERROR)  # as fencecheck.report.model.KNOWN_BAD_STATUSES
CONTRACT, HARNESS, UNDECIDED = "contract", "error", "undecided"

# The harness problems (fencecheck.contest, fencecheck.parallel.execute) that are no property
# of the contract: a call that raised something other than the system's error type, a call that never returned.
_ERROR_PROBLEM = re.compile(r"raised .*\(only the .* may escape\)|still running when the harness gave up")
# A lockstep step whose system raised instead of answering (fencecheck.lockstep: "the implementation raised X: ...").
_CRASHED_STEP = "the implementation raised "
# A failing test's message that names a contract property (the suites' own wording: fencecheck.lockstep, the
# lantern machine's invariant check, the race and parallel suites' assertions).
_CONTRACT_MESSAGE = re.compile(
    r"LockstepMismatch:|InvariantViolated|is not linearizable|structural invariants broken"
    r"|promise \(.*\) is broken|invariants or harness checks broken|parallel program fails"
)
# A checker that could not decide (the race suites' wording; a parallel case's failing repetition).
_UNDECIDED = re.compile(r"could not decide within its budget|failing repetition \(unknown")


@attrs.frozen
class Finding:
    """One thing a run found wrong: `kind` is CONTRACT (a property of the contract), HARNESS (an error: a crash,
    a hang) or UNDECIDED (the checker could not decide: an error unless a contract property failed beside it)."""

    kind: str
    text: str

    def __attrs_post_init__(self) -> None:
        if self.kind not in (CONTRACT, HARNESS, UNDECIDED):
            raise ValueError(f"a finding is {CONTRACT!r}, {HARNESS!r} or {UNDECIDED!r}, not {self.kind!r}")


def contract(text: str) -> Finding:
    return Finding(CONTRACT, text)


def error(text: str) -> Finding:
    return Finding(HARNESS, text)


def problem_finding(problem: str) -> Finding:
    """A race's or parallel run's problem line as a finding (foreign exceptions and hung calls are errors)."""
    return error(problem) if _ERROR_PROBLEM.search(problem) else contract(problem)


def mismatch_finding(mismatch: BaseException | str) -> Finding:
    """A lockstep mismatch as a finding: an error when the system raised instead of answering."""
    text = str(mismatch)
    head = text.split("model state after")[0]
    return error(text) if _CRASHED_STEP in head else contract(text)


def verdict_finding(verdict: str, explanation: str | None = None) -> Finding | None:
    """The checker's verdict on a history: illegal is a contract failure, unknown undecided, ok nothing."""
    if verdict == "ok":
        return None
    first = (explanation or "").strip().splitlines()[:1]
    text = f"checker: {verdict}" + (f" ({first[0]})" if first else "")
    return contract(text) if verdict == "illegal" else Finding(UNDECIDED, text)


def errors_in(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that make a verdict an error whatever else was found: crashes and hangs, and an undecided
    checker when no property of the contract failed. Empty: the contract findings (if any) decide."""
    found = list(findings)
    harness = [f for f in found if f.kind == HARNESS]
    if harness or any(f.kind == CONTRACT for f in found):
        return harness
    return [f for f in found if f.kind == UNDECIDED]


def failure_kind(message: str) -> str:
    """CONTRACT or HARNESS for a failing test, from its exception message (not its traceback, whose source
    lines would name the markers): a contract property when the message says one broke and nothing in it is an
    error (a step whose system raised, a foreign exception or hung call among a race's problems, an undecided
    checker); an error otherwise (a harness crash, a NameError: anything the suites do not report as a broken
    property)."""
    if _CRASHED_STEP in message or _ERROR_PROBLEM.search(message) or _UNDECIDED.search(message):
        return HARNESS
    return CONTRACT if _CONTRACT_MESSAGE.search(message) else HARNESS


def gate_verdict(kinds: Sequence[str]) -> KnownBadVerdict:
    """`fencecheck gate --known-bad`: the failing tests' kinds (`failure_kind`) under the one rule. The gate
    replays the counterexamples afterwards (fencecheck.gate_replay; fencecheck.failures.known_bad_verdict
    judges the replays): a CAUGHT here is only the would-be catch, a contract property failing and no error."""
    found = [Finding(kind, f"failing test {n}") for n, kind in enumerate(kinds, 1)]
    errors = sum(kind == HARNESS for kind in kinds)
    if errors:
        return KnownBadVerdict(ERROR, f"{errors} of {len(kinds)} failing tests failed by an error, not by a property "
                                      f"of the contract")
    if not found:
        return KnownBadVerdict(SURVIVED, "every selected suite passed: nothing they check tells it from the reference")
    return KnownBadVerdict(CAUGHT, f"{len(kinds)} failing tests, each by a property of the contract")


@attrs.frozen
class KnownBadVerdict:
    """What a known-bad runner concluded: `status` (caught / survived / timeout / error), `reason` (one
    paragraph: the property that caught it, or why not) and `warnings` (bounds that did not hold but decide
    nothing: a shrunk program larger than expected, say)."""

    status: str
    reason: str
    warnings: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {self.status!r}")

    @property
    def caught(self) -> bool:
        return self.status == CAUGHT

    def with_warnings(self, warnings: Iterable[str]) -> KnownBadVerdict:
        return attrs.evolve(self, warnings=(*self.warnings, *warnings))


def judge(
    findings: Iterable[Finding],
    *,
    replays_on_variant: bool | None = None,
    passes_on_reference: bool | None = None,
    reproduction: str = "",
    warnings: Iterable[str] = (),
) -> KnownBadVerdict:
    """The one rule (see the module docstring). `replays_on_variant` / `passes_on_reference`: whether the
    reported failure replayed against the variant and passed against the reference (None: not checked, which
    is no catch); `reproduction` says what was replayed, for the reason's text."""
    found = list(findings)
    warned = tuple(warnings)
    errors = errors_in(found)
    if errors:
        return KnownBadVerdict(ERROR, f"failed by an error, not by a property of the contract: {errors[0].text}",
                               warned)
    if not found:
        return KnownBadVerdict(SURVIVED, "no property of the contract failed", warned)
    first = next(f.text for f in found if f.kind == CONTRACT)
    where = f" ({reproduction})" if reproduction else ""
    if replays_on_variant is not True:
        return KnownBadVerdict(ERROR, f"the failure did not replay against the variant{where}: {first}", warned)
    if passes_on_reference is not True:
        return KnownBadVerdict(ERROR, f"the failure's program fails against the reference too{where}: {first}",
                               warned)
    return KnownBadVerdict(CAUGHT, first, warned)


def bound_warning(what: str, value: int, bound: int) -> list[str]:
    """A shrink-size bound as a warning (empty when it holds): the size depends on the shrinkers' time."""
    return [] if value <= bound else [f"{what}: {value} (expected at most {bound}; shrinking is time-capped)"]
