"""What failed in a gate run, said where people look: the gate's terminal output and the evidence report
(evidence.json's `failedTests` and `systemUnderTest`, evidence.md's and evidence.html's "What failed").

For each failing test: the property it broke (the first lines of its failure message: a lockstep mismatch's
step, the transition the model expected and the answer it got; a race's scenario and verdict) and the
counterexample files its failure text names, each with the `fencecheck replay` command that replays it.

Everything comes from the suites' JUnit XML (`<artifacts>/junit/<suite>.xml`, the tests' own failure text),
because that is the one artifact every suite writes into the gate's `--artifacts` directory; so
`fencecheck report` finds the same failures again when it re-renders. The system the suites ran against
(`gate --known-bad`) is only known to the gate: it keeps it in `<artifacts>/failures.json`.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

import attrs

from .known_bad_verdict import CAUGHT, CONTRACT, ERROR, KnownBadVerdict, contract, failure_kind, gate_verdict, judge

PROJECT_ROOT = Path(__file__).resolve().parent.parent
JUNIT_DIR = "junit"
SIDECAR = "failures.json"
SIDECAR_FORMAT = "fencecheck.gate-failures/1"
MAX_SUMMARY_LINES = 3
MAX_LINE = 300
MAX_SHOWN = 8  # evidence.md stays short enough for a pull-request comment
_COUNTEREXAMPLE = re.compile(r"(?:[^\s'\"`(),;:]*/)?counterexamples/[\w.-]+\.(?:py|json)")
_QUALIFIED = re.compile(r"^(?:[A-Za-z_]\w*\.)+([A-Z]\w*:)")  # a module-qualified exception name
# Where a failure message stops saying what broke and starts showing context.
_CONTEXT = ("model state after the step", "program:", "assert ", "Failing test case", "Falsifying example")


@attrs.frozen
class Replay:
    """`gate --known-bad` replaying one counterexample (`failedTests[].replays[]`): against the variant it must
    still fail (`replays_on_variant`), against the reference pass (`passes_on_reference`); None: not found out,
    `problem` says why (the file could not be replayed)."""

    counterexample: str
    replays_on_variant: bool | None
    passes_on_reference: bool | None
    problem: str | None = None

    @property
    def holds(self) -> bool:
        return self.replays_on_variant is True and self.passes_on_reference is True


@attrs.frozen
class Failure:
    """One failing test of the run (a record of the evidence report: `failedTests[]`)."""

    suite: str
    test: str  # classname::name, as the JUnit file has it
    summary: tuple[str, ...]  # the failing property
    counterexamples: tuple[str, ...]  # relative to the project root when inside it
    kind: str = "error"  # "contract" (a property of the contract broke) or "error" (fencecheck.known_bad_verdict)
    replays: tuple[Replay, ...] = ()  # gate --known-bad: its counterexamples replayed (fencecheck.gate_replay)

    _json_derived: ClassVar = ("replay_commands",)

    @property
    def replay_commands(self) -> tuple[str, ...]:
        return tuple(replay_command(path) for path in self.counterexamples)


def replay_command(path: str) -> str:
    return f".venv/bin/python -m fencecheck replay {path}"


def exception_text(element: ElementTree.Element) -> str:
    """The exception's message: pytest prefixes its lines with "E" in the element text (the `message`
    attribute is cut after a few lines); a pytest.fail(pytrace=False) text has no such lines."""
    text = element.text or ""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ") or line == "E"]
    return "\n".join(lines) if lines else (element.get("message") or text)


def summarize(text: str) -> tuple[str, ...]:
    """The first lines of a failure message, up to where it starts showing context."""
    lines = []
    for raw in text.strip().splitlines():
        line = raw.strip()
        if not line:
            if lines:
                break
            continue
        if lines and line.startswith(_CONTEXT):
            break
        line = _QUALIFIED.sub(r"\1", line)  # fencecheck.lockstep.LockstepMismatch: -> LockstepMismatch:
        lines.append(line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…")
        if len(lines) == MAX_SUMMARY_LINES:
            break
    return tuple(lines) or ("(no failure message)",)


def _shown_path(found: str, root: Path) -> str:
    path = Path(found)
    if path.is_absolute():
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return str(path)
    return path.as_posix()


def counterexample_paths(text: str, root: Path = PROJECT_ROOT) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_shown_path(found, root) for found in _COUNTEREXAMPLE.findall(text)))


def from_junit(xml_text: str, suite: str, root: Path = PROJECT_ROOT) -> list[Failure]:
    failures = []
    for case in ElementTree.fromstring(xml_text).iter("testcase"):
        element = case.find("failure")
        if element is None:
            element = case.find("error")
        if element is None:
            continue
        whole = f"{element.get('message') or ''}\n{element.text or ''}"
        message = exception_text(element)
        failures.append(
            Failure(
                suite=suite,
                test=f"{case.get('classname', '')}::{case.get('name', '')}",
                summary=summarize(message),
                counterexamples=counterexample_paths(whole, root),
                kind=failure_kind(message),
            )
        )
    return failures


def collect(artifacts: Path, suites: Iterable[str], root: Path = PROJECT_ROOT) -> list[Failure]:
    """Failures of the named suites, from their JUnit files (a suite without one contributes none)."""
    found: list[Failure] = []
    for suite in suites:
        path = artifacts / JUNIT_DIR / f"{suite}.xml"
        try:
            found += from_junit(path.read_text(encoding="utf-8"), suite, root)
        except (OSError, ElementTree.ParseError):
            continue  # the report lists an unreadable JUnit file as an artifact error already
    return found


# --- the gate's sidecar: the system under test ---------------------------------------------------------


def save_sidecar(artifacts: Path, system: str | None, failures: Sequence[Failure]) -> Path:
    path = artifacts / SIDECAR
    data = {"format": SIDECAR_FORMAT, "system": system, "failures": [attrs.asdict(f) for f in failures]}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def load_replays(artifacts: Path, failures: Sequence[Failure]) -> list[Failure]:
    """`failures` (from the JUnit files) with the replays the gate recorded for them in its sidecar."""
    try:
        data = json.loads((artifacts / SIDECAR).read_text(encoding="utf-8"))
        recorded = {(f["suite"], f["test"]): tuple(Replay(**r) for r in f.get("replays", ()))
                    for f in data["failures"]} if data.get("format") == SIDECAR_FORMAT else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        recorded = {}
    return [attrs.evolve(f, replays=recorded.get((f.suite, f.test), f.replays)) for f in failures]


def load_system(artifacts: Path) -> str | None:
    """The system the gate ran the suites against (None: the reference, or no gate record)."""
    try:
        data = json.loads((artifacts / SIDECAR).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    system = data.get("system") if isinstance(data, dict) and data.get("format") == SIDECAR_FORMAT else None
    return system if isinstance(system, str) else None


# --- rendering -----------------------------------------------------------------------------------------


def known_bad_verdict(failures: Sequence[Failure]) -> KnownBadVerdict:
    """What `gate --known-bad` concluded from its failing tests under the one rule: every failure a property of
    the contract (fencecheck.known_bad_verdict.gate_verdict), and every counterexample of them replayed: still
    failing against the variant, passing against the reference (`Failure.replays`)."""
    first = gate_verdict([failure.kind for failure in failures])
    if first.status != CAUGHT:
        return first
    return replayed_verdict(failures)


def replayed_verdict(failures: Sequence[Failure]) -> KnownBadVerdict:
    """The contract failures' replays judged (fencecheck.known_bad_verdict.judge): the first that does not
    hold (or a failure with no counterexample, or one not replayed) makes the verdict an error."""
    shown = [f for f in failures if f.kind == CONTRACT]
    for failure in shown:
        finding = contract(f"{failure.test}: {failure.summary[0]}")
        if not failure.counterexamples:
            return KnownBadVerdict(ERROR, f"no counterexample to replay: {finding.text}")
        replays = {replay.counterexample: replay for replay in failure.replays}
        for path in failure.counterexamples:
            replay = replays.get(path, Replay(path, None, None, "not replayed"))
            why = f"; {replay.problem}" if replay.problem else ""
            verdict = judge([finding], replays_on_variant=replay.replays_on_variant,
                            passes_on_reference=replay.passes_on_reference, reproduction=f"{path}{why}")
            if not verdict.caught:
                return verdict
    return KnownBadVerdict(CAUGHT, f"{len(shown)} failing tests, each by a property of the contract; each "
                                   f"counterexample still fails against the variant and passes against the reference")


def replay_lines(replay: Replay) -> list[str]:
    """How the gate says what one replay found."""
    if replay.problem is not None:
        return [f"  replay of {replay.counterexample}: could not be replayed ({replay.problem})"]
    variant = "still fails" if replay.replays_on_variant else "passes (does not replay)"
    reference = "passes" if replay.passes_on_reference else "fails too"
    return [f"  replay against the variant: {variant}", f"  replay against the reference: {reference}"]


def kind_text(failure: Failure) -> str:
    return "a property of the contract" if failure.kind == CONTRACT else "an error, not a property of the contract"


def terminal_lines(failures: Sequence[Failure], system: str | None = None) -> list[str]:
    lines = [f"system under test: {system}"] if system else []
    for failure in failures:
        lines.append(f"FAILED [{failure.suite}] {failure.test} ({kind_text(failure)})")
        lines += [f"  property: {failure.summary[0]}", *(f"            {line}" for line in failure.summary[1:])]
        for path, command in zip(failure.counterexamples, failure.replay_commands, strict=True):
            lines += [f"  counterexample: {path}", f"  replay: {command}"]
            for replay in failure.replays:
                if replay.counterexample == path:
                    lines += replay_lines(replay)
        if not failure.counterexamples:
            lines.append("  counterexample: none written (see the suite's output above)")
    return lines


def _md(text: str) -> str:
    """Inline code that survives backticks, one line, no HTML for the renderer."""
    text = text.replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def markdown_section(failures: Sequence[Failure], system: str | None = None) -> str:
    """evidence.md's "What failed" section (empty when nothing failed and the system is the reference)."""
    if not failures and not system:
        return ""
    lines = ["**What failed:**" if failures else "**What failed:** nothing"]
    if system:
        lines.append(f"- system under test: {_md(system)} (not the reference: `fencecheck gate --known-bad`)")
        verdict = known_bad_verdict(failures)
        lines.append(f"- known-bad verdict: **{verdict.status}** ({verdict.reason})")
    for failure in failures[:MAX_SHOWN]:
        lines.append(f"- {failure.suite}: {_md(failure.test)} ({kind_text(failure)})")
        lines.append("  - property: " + " / ".join(_md(line) for line in failure.summary))
        for path, command in zip(failure.counterexamples, failure.replay_commands, strict=True):
            lines.append(f"  - counterexample {_md(path)}, replay: {_md(command)}")
            for replay in failure.replays:
                if replay.counterexample == path:
                    lines += [f"    - {line.strip()}" for line in replay_lines(replay)]
    if len(failures) > MAX_SHOWN:
        lines.append(f"- … and {len(failures) - MAX_SHOWN} more (see the JUnit files)")
    return "\n".join(lines) + "\n"
