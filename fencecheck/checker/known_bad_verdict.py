"""One judge of known-bad variants, shared by every runner: the stateful catalogues, the lantern race and
seed-scenario catalogues, the parallel catalogue, and `fencecheck gate --known-bad` with its replays.

Every runner hands `judge` the structured problems it saw (`fencecheck.problems.Problem`: each of a kind set
where the problem was created, never parsed from a message), the problems its replay of the failure against
the variant showed and the problems the same program showed against the reference. The rule, in this order:

1. nothing found: **survived** (nothing the runner checks tells the variant from the reference);
2. any crash, protocol or harness problem: **error**, whatever else was found (a run that crashed, whose
   implementation broke the process protocol, or whose harness failed is no evidence);
3. a hang (a call that never returned): **timeout** (the runner gave up before the run decided);
4. no contract finding: **error**. An `unknown` checker alone decided nothing; contention alone (too few
   definite answers, fencecheck.checker.definite) decided nothing either: it is an error too, never survived (the
   variant did not pass) and never caught (nothing of the contract failed). An undecided checker or contention
   BESIDE a contract finding blocks nothing: a broken invariant needs no checker, a proven illegal history no
   definite share;
5. the replay against the variant must itself show a contract finding, under rules 2-4 (a replay that crashed,
   hung, stayed undecided, or merely "failed" does not confirm a catch; not replayed, or a replay that found
   nothing, is an error);
6. the same program must show no problem at all against the reference (not run: an error);
7. then **caught**, with the first contract finding as its reason.

Bounds on how small a shrunk counterexample is, or how quickly it was found, depend on how much time the
shrinkers got (the machine's load): they never decide the status, they are `warnings` on the verdict.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from fencecheck.problems import ERROR_KINDS, Problem, ProblemKind

CAUGHT, SURVIVED, TIMEOUT, ERROR = "caught", "survived", "timeout", "error"
STATUSES = (CAUGHT, SURVIVED, TIMEOUT, ERROR)  # the one list: the report (KNOWN_BAD_STATUSES) takes it from here


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


def undecisive(problems: Iterable[Problem], what: str = "the run") -> tuple[str, str] | None:
    """(status, reason) when `problems` cannot stand for a contract failure (rules 2-4 of the module doc:
    an error, a hang, or nothing but an undecided checker or contention); None when a contract finding stands.
    `what` names whose problems they are in the reason. Empty problems are not judged here."""
    found = list(problems)
    error = next((p for p in found if p.kind in ERROR_KINDS), None)
    if error is not None:
        return ERROR, f"{what} failed by {_kind_text(error.kind)}, not by a property of the contract: {error.text}"
    hang = next((p for p in found if p.kind is ProblemKind.HANG), None)
    if hang is not None:
        return TIMEOUT, f"{what} hung: a call never returned, so nothing was decided: {hang.text}"
    if any(p.kind is ProblemKind.CONTRACT for p in found):
        return None
    undecided = next((p for p in found if p.kind is ProblemKind.UNKNOWN), None)
    if undecided is not None:
        return ERROR, f"{what} decided nothing: the checker could not decide and no property failed: {undecided.text}"
    contended = found[0]
    return ERROR, (f"{what} decided nothing: too contended to judge (contention, not a property of the "
                   f"contract): {contended.text}")


def _kind_text(kind: ProblemKind) -> str:
    return {ProblemKind.CRASH: "a crash", ProblemKind.PROTOCOL: "a broken process protocol",
            ProblemKind.HARNESS: "a harness error"}.get(kind, kind.value)


def run_verdict(problems: Iterable[Problem], warnings: Iterable[str] = ()) -> KnownBadVerdict | None:
    """What a run's own problems decide before any replay (rules 1-4): survived, error or timeout; None when a
    contract finding awaits its replays (a would-be catch)."""
    found = list(problems)
    if not found:
        return KnownBadVerdict(SURVIVED, "no property of the contract failed", tuple(warnings))
    decided = undecisive(found)
    return None if decided is None else KnownBadVerdict(*decided, tuple(warnings))


def judge(
    problems: Iterable[Problem],
    *,
    replay: Iterable[Problem] | None = None,
    reference: Iterable[Problem] | None = None,
    reproduction: str = "",
    warnings: Iterable[str] = (),
) -> KnownBadVerdict:
    """The one rule (see the module docstring). `problems`: what the run found against the variant; `replay`:
    what replaying its failure against the variant found; `reference`: what the same program found against the
    reference (None: not run, which is no catch; empty: it passed); `reproduction` says what was replayed, for
    the reason's text."""
    found = list(problems)
    warned = tuple(warnings)
    early = run_verdict(found, warned)
    if early is not None:
        return early
    first = next(p.text for p in found if p.kind is ProblemKind.CONTRACT)
    where = f" ({reproduction})" if reproduction else ""
    replayed = None if replay is None else list(replay)
    if not replayed:
        return KnownBadVerdict(ERROR, f"the failure did not replay against the variant{where}: {first}", warned)
    decided = undecisive(replayed, f"its replay against the variant{where}")
    if decided is not None:
        return KnownBadVerdict(decided[0], f"{decided[1]} (the run found: {first})", warned)
    if reference is None:
        return KnownBadVerdict(ERROR, f"the failure's program was not run against the reference{where}: {first}",
                               warned)
    against = list(reference)
    if against:
        return KnownBadVerdict(ERROR, f"the failure's program fails against the reference too{where}: {first} "
                                      f"(against the reference, {against[0].kind.value}: {against[0].text})", warned)
    return KnownBadVerdict(CAUGHT, first, warned)


def bound_warning(what: str, value: int, bound: int) -> list[str]:
    """A shrink-size bound as a warning (empty when it holds): the size depends on the shrinkers' time."""
    return [] if value <= bound else [f"{what}: {value} (expected at most {bound}; shrinking is time-capped)"]


__all__ = [
    "CAUGHT",
    "ERROR",
    "STATUSES",
    "SURVIVED",
    "TIMEOUT",
    "KnownBadVerdict",
    "bound_warning",
    "judge",
    "run_verdict",
    "undecisive",
]
