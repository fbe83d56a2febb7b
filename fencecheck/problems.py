"""What a run found wrong, as structured values: a `Problem` is its `ProblemKind` and its text.

The kind is set where the problem is created (the contest runner, the parallel engine, the lockstep runner, the
process protocol client, the checker's verdict, the suites' assertions) and travels with it: to the known-bad
judge (`fencecheck.checker.known_bad_verdict.judge`), to the race result files, and through a failing test's JUnit
record to `fencecheck gate --known-bad`. Nothing reads a kind back from a message's text.

Kinds:

    contract     a property of the contract broke (an answer, the stored documents, an invariant, an illegal
                 history, a scenario's promise, the clock read other than once)
    contention   too few definite answers for the verdict to mean anything (fencecheck.checker.definite)
    unknown      the checker could not decide within its budget
    crash        the implementation raised something other than the system's error, or its process died
    hang         a call never returned, or no answer came in time
    protocol     an `exec:` implementation broke the process protocol (a malformed answer, an id not in flight,
                 an extra key, a wrong hello)
    harness      the harness itself failed (a broken barrier, a wire proxy that let a commit through, a request
                 the harness got wrong, a failing test that says nothing structured)

A plug-in's structural checks return plain strings: each is a contract finding (`as_problems`). The core is
system-neutral: this module imports nothing of fencecheck.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs


class ProblemKind(enum.Enum):
    CONTRACT = "contract"
    CONTENTION = "contention"
    UNKNOWN = "unknown"
    CRASH = "crash"
    HANG = "hang"
    PROTOCOL = "protocol"
    HARNESS = "harness"


# Kinds that make a run no evidence about the contract whatever else it found.
ERROR_KINDS = frozenset({ProblemKind.CRASH, ProblemKind.PROTOCOL, ProblemKind.HARNESS})
# Kinds that decide nothing by themselves: the run neither failed the contract nor broke.
UNDECIDED_KINDS = frozenset({ProblemKind.UNKNOWN, ProblemKind.CONTENTION})


@attrs.frozen
class Problem:
    """One thing a run found wrong. `kind` accepts the enum or its value ("contract")."""

    kind: ProblemKind = attrs.field(converter=ProblemKind)
    text: str

    def __str__(self) -> str:
        return self.text

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "text": self.text}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Problem:
        return cls(data["kind"], str(data["text"]))


def contract(text: str) -> Problem:
    return Problem(ProblemKind.CONTRACT, text)


def contention(text: str) -> Problem:
    return Problem(ProblemKind.CONTENTION, text)


def unknown(text: str) -> Problem:
    return Problem(ProblemKind.UNKNOWN, text)


def crash(text: str) -> Problem:
    return Problem(ProblemKind.CRASH, text)


def hang(text: str) -> Problem:
    return Problem(ProblemKind.HANG, text)


def protocol(text: str) -> Problem:
    return Problem(ProblemKind.PROTOCOL, text)


def harness(text: str) -> Problem:
    return Problem(ProblemKind.HARNESS, text)


def as_problems(found: Iterable[Problem | str]) -> tuple[Problem, ...]:
    """Problems as they are, and a plug-in's or scenario's plain string as the contract finding it reports."""
    return tuple(item if isinstance(item, Problem) else contract(item) for item in found)


def verdict_problem(status: str, explanation: str | None = None) -> Problem | None:
    """The checker's verdict as a problem: illegal is a contract finding, unknown undecided, ok none. The text is
    the verdict and the first line of its explanation."""
    if status == "ok":
        return None
    first = (explanation or "").strip().splitlines()[:1]
    text = f"checker: {status}" + (f" ({first[0]})" if first else "")
    return contract(text) if status == "illegal" else unknown(text)


def kind_of_exception(error: BaseException) -> ProblemKind:
    """The kind of an exception that escaped an implementation's call: the `problem_kind` it carries (a process
    protocol failure says crash, hang or protocol; a harness refusal says harness), else a crash."""
    kind = getattr(error, "problem_kind", None)
    return kind if isinstance(kind, ProblemKind) else ProblemKind.CRASH


def exception_problem(where: str, error: BaseException, *, limit: int = 500) -> Problem:
    """`<where>: raised <Type>: <message> (only the system's error may escape)`, of the exception's kind."""
    said = f"{type(error).__name__}: {error}"[:limit]
    return Problem(kind_of_exception(error), f"{where}: raised {said} (only the system's error may escape)")


def problems_in(error: BaseException) -> tuple[Problem, ...]:
    """The structured problems a failing test's exception carries (`fencecheck.errors.CheckFailed` and its
    subclasses, `LockstepMismatch` among them): looked for on the exception, its chain of causes and,
    for an exception group (Hypothesis's several or flaky failures), on every member. Empty when none carries
    any: the test failed by something the suites do not report as a finding."""
    found: list[Problem] = []
    for each in _exceptions(error, set()):
        carried = getattr(each, "problems", None)
        if isinstance(carried, tuple) and all(isinstance(p, Problem) for p in carried):
            found += carried
    return tuple(dict.fromkeys(found))


def _exceptions(error: BaseException | None, seen: set[int]) -> Iterator[BaseException]:
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        for member in getattr(error, "exceptions", ()) if isinstance(error, BaseExceptionGroup) else ():
            yield from _exceptions(member, seen)
        error = error.__cause__  # an explicit `raise ... from`: a handled exception's context says nothing


def decided(problems: Iterable[Problem]) -> bool:
    """Some problem decides the run: a contract finding or an error, not only an undecided checker or contention."""
    return any(p.kind not in UNDECIDED_KINDS for p in problems)


# The JUnit property under which a failing test records its problems' kinds (`kinds_of`): written by
# fencecheck.suites.pytest_plugin, read back by fencecheck.report.failures for the gate. Here, beside the kinds, so the
# writer (a runner's) and the reader (the report's) share it without the lower importing the higher.
KINDS_PROPERTY = "fencecheck_problem_kinds"


def kinds_of(problems: Iterable[Problem]) -> tuple[str, ...]:
    """The problems' kinds as their values, each once, in order: how files and JUnit records carry them."""
    return tuple(dict.fromkeys(p.kind.value for p in problems))


__all__ = [
    "ERROR_KINDS",
    "KINDS_PROPERTY",
    "UNDECIDED_KINDS",
    "Problem",
    "ProblemKind",
    "as_problems",
    "contention",
    "contract",
    "crash",
    "decided",
    "exception_problem",
    "hang",
    "harness",
    "kind_of_exception",
    "kinds_of",
    "problems_in",
    "protocol",
    "unknown",
    "verdict_problem",
]
