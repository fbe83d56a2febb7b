"""What failed in a gate run, said where people look: the gate's terminal output and the evidence report
(evidence.json's `failedTests` and `systemUnderTest`, evidence.md's and evidence.html's "What failed").

For each failing test: the property it broke (the first lines of its failure message: a lockstep mismatch's
step, the transition the model expected and the answer it got; a race's scenario and verdict) and the
counterexample files its failure text names, each with the `fencecheck replay` command that replays it.

Everything comes from the suites' JUnit XML (`<artifacts>/junit/<suite>.xml`, the tests' own failure text),
because that is the one artifact every suite writes into the gate's `--artifacts` directory; so
`fencecheck report` finds the same failures again when it re-renders. The system the suites ran against
(`gate --known-bad`) is only known to the gate: it keeps it in `<artifacts>/failures.json`.

What each failure IS comes from the same files, structured: the project's pytest plug-in records the kinds of
the problems a failing test's exception carries (`fencecheck.errors.CheckFailed`, `LockstepMismatch` among
them: contract, crash, hang, ...) as the test's JUnit property `fencecheck_problem_kinds`
(`fencecheck.problems.KINDS_PROPERTY`). A failing test without one failed by something no suite
reports as a finding (a harness crash, a NameError in a test, a fixture's error): its kind is harness. Nothing is
read from the message's text to decide it; the text is only shown.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

import attrs

from fencecheck.checker.known_bad_verdict import CAUGHT, SURVIVED, KnownBadVerdict, judge, run_verdict
from fencecheck.problems import KINDS_PROPERTY, Problem, ProblemKind

PROJECT_ROOT = Path(__file__).resolve().parents[2]
JUNIT_DIR = "junit"
SIDECAR = "failures.json"
SIDECAR_FORMAT = "fencecheck.gate-failures/2"  # /1 had one `kind` per failure and true/false replays
MAX_SUMMARY_LINES = 3
MAX_LINE = 300
MAX_SHOWN = 8  # evidence.md stays short enough for a pull-request comment
_COUNTEREXAMPLE = re.compile(r"(?:[^\s'\"`(),;:]*/)?counterexamples/[\w.-]+\.(?:py|json)")
_QUALIFIED = re.compile(r"^(?:[A-Za-z_]\w*\.)+([A-Z]\w*:)")  # a module-qualified exception name
# Where a failure message stops saying what broke and starts showing context.
_CONTEXT = ("model state after the step", "program:", "assert ", "Failing test case", "Falsifying example")


@attrs.frozen
class Replay:
    """`gate --known-bad` replaying one counterexample (`failedTests[].replays[]`): the kinds of the problems its
    replay against the variant found (`variant_kinds`: it must show a contract finding) and those its program
    found against the reference (`reference_kinds`: it must show none); None: not found out, `problem` says why
    (the file could not be replayed)."""

    counterexample: str
    variant_kinds: tuple[str, ...] | None
    reference_kinds: tuple[str, ...] | None
    problem: str | None = None

    def variant_problems(self) -> tuple[Problem, ...] | None:
        return _problems(self.variant_kinds, f"{self.counterexample} replayed against the variant")

    def reference_problems(self) -> tuple[Problem, ...] | None:
        return _problems(self.reference_kinds, f"{self.counterexample} run against the reference")


def _problems(kinds: Sequence[str] | None, where: str) -> tuple[Problem, ...] | None:
    return None if kinds is None else tuple(Problem(kind, f"{where}: {kind}") for kind in kinds)


@attrs.frozen
class Failure:
    """One failing test of the run (a record of the evidence report: `failedTests[]`)."""

    suite: str
    test: str  # classname::name, as the JUnit file has it
    summary: tuple[str, ...]  # the failing property
    counterexamples: tuple[str, ...]  # relative to the project root when inside it
    # The kinds of the problems the test's exception carried (fencecheck.problems: "contract", "crash", ...), as
    # its JUnit record has them; a test that recorded none failed by the harness ("harness").
    kinds: tuple[str, ...] = (ProblemKind.HARNESS.value,)
    replays: tuple[Replay, ...] = ()  # gate --known-bad: its counterexamples replayed (fencecheck.gate.replay)

    _json_derived: ClassVar = ("replay_commands",)

    @property
    def replay_commands(self) -> tuple[str, ...]:
        return tuple(replay_command(path) for path in self.counterexamples)

    def problems(self) -> tuple[Problem, ...]:
        """The failure's problems for the one rule: one per recorded kind, named by the test and its property."""
        return tuple(Problem(kind, f"{self.test}: {self.summary[0]}") for kind in self.kinds)

    @property
    def contract(self) -> bool:
        return ProblemKind.CONTRACT.value in self.kinds


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
        line = _QUALIFIED.sub(r"\1", line)  # fencecheck.runners.lockstep.LockstepMismatch: -> LockstepMismatch:
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
                kinds=recorded_kinds(case),
            )
        )
    return failures


def recorded_kinds(case: ElementTree.Element) -> tuple[str, ...]:
    """The problem kinds a JUnit test case recorded (`KINDS_PROPERTY`); harness when it recorded none (or one this
    fencecheck does not know: the record is not to be trusted)."""
    known = {kind.value for kind in ProblemKind}
    for element in case.iter("property"):
        if element.get("name") == KINDS_PROPERTY:
            kinds = tuple(kind for kind in (element.get("value") or "").split(",") if kind)
            if kinds and set(kinds) <= known:
                return kinds
    return (ProblemKind.HARNESS.value,)


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


def save_sidecar(artifacts: Path, system: str | None, failures: Sequence[Failure], *, known_bad: bool = False) -> Path:
    """`system`: the implementation the suites ran against (None: the references); `known_bad`: it is a variant of
    a known-bad catalogue (`gate --known-bad`), whose run has a known-bad verdict, not any other `--system`."""
    path = artifacts / SIDECAR
    data = {"format": SIDECAR_FORMAT, "system": system, "knownBad": bool(system) and known_bad,
            "failures": [attrs.asdict(f) for f in failures]}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def load_replays(artifacts: Path, failures: Sequence[Failure]) -> list[Failure]:
    """`failures` (from the JUnit files) with the replays the gate recorded for them in its sidecar."""
    try:
        data = json.loads((artifacts / SIDECAR).read_text(encoding="utf-8"))
        recorded = {(f["suite"], f["test"]): tuple(_replay(r) for r in f.get("replays", ()))
                    for f in data["failures"]} if data.get("format") == SIDECAR_FORMAT else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        recorded = {}
    return [attrs.evolve(f, replays=recorded.get((f.suite, f.test), f.replays)) for f in failures]


def _sidecar(artifacts: Path) -> dict:
    try:
        data = json.loads((artifacts / SIDECAR).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == SIDECAR_FORMAT else {}


def load_system(artifacts: Path) -> str | None:
    """The system the gate ran the suites against (None: the reference, or no gate record)."""
    system = _sidecar(artifacts).get("system")
    return system if isinstance(system, str) else None


def load_known_bad(artifacts: Path) -> bool:
    """Whether that system is a known-bad variant (`gate --known-bad`); False for the reference, another
    `--system` and a sidecar from before it said."""
    data = _sidecar(artifacts)  # read once
    return data.get("knownBad") is True and isinstance(data.get("system"), str)


# --- rendering -----------------------------------------------------------------------------------------


def _replay(data: dict) -> Replay:
    def kinds(value: object) -> tuple[str, ...] | None:
        return None if value is None else tuple(str(kind) for kind in value)  # type: ignore[union-attr]

    return Replay(data["counterexample"], kinds(data["variant_kinds"]), kinds(data["reference_kinds"]),
                  data.get("problem"))


def known_bad_verdict(failures: Sequence[Failure]) -> KnownBadVerdict:
    """What `gate --known-bad` concluded, under the one rule (fencecheck.checker.known_bad_verdict.judge): the failing
    tests' recorded problems first (any error among them decides), then each contract failure's counterexamples
    as the gate replayed them (`Failure.replays`): each replay must show a contract finding against the variant
    and nothing against the reference. The first that does not hold decides."""
    early = would_be_catch(failures)
    if early is not None:
        return early
    shown = [f for f in failures if f.contract]
    found = [p for f in failures for p in f.problems()]
    for failure in shown:
        if not failure.counterexamples:
            return judge(found, reproduction=f"no counterexample to replay for {failure.test}")
        replays = {replay.counterexample: replay for replay in failure.replays}
        for path in failure.counterexamples:
            replay = replays.get(path, Replay(path, None, None, "not replayed"))
            why = f"; {replay.problem}" if replay.problem else ""
            verdict = judge(failure.problems(), replay=replay.variant_problems(),
                            reference=replay.reference_problems(), reproduction=f"{path}{why}")
            if not verdict.caught:
                return verdict
    return KnownBadVerdict(CAUGHT, f"{len(shown)} failing tests, each by a property of the contract; each "
                                   f"counterexample still fails by one against the variant and passes against the "
                                   f"reference")


def would_be_catch(failures: Sequence[Failure]) -> KnownBadVerdict | None:
    """The verdict the failing tests' own problems decide before any replay (survived, error, timeout:
    fencecheck.checker.known_bad_verdict.run_verdict); None for a would-be catch, whose counterexamples are replayed."""
    early = run_verdict([p for f in failures for p in f.problems()])
    if early is not None and early.status == SURVIVED:
        return attrs.evolve(early, reason="every selected suite passed: nothing they check tells it from the "
                                          "reference")
    return early


def _kinds_text(kinds: Sequence[str]) -> str:
    return ", ".join(kinds) if kinds else "nothing"


def replay_lines(replay: Replay) -> list[str]:
    """How the gate says what one replay found, by the kinds of its problems."""
    if replay.problem is not None:
        return [f"  replay of {replay.counterexample}: could not be replayed ({replay.problem})"]
    variant, reference = replay.variant_kinds or (), replay.reference_kinds or ()
    if variant == (ProblemKind.CONTRACT.value,):
        on_variant = "still fails (contract)"
    elif variant:
        on_variant = f"fails by {_kinds_text(variant)}" + (
            "" if ProblemKind.CONTRACT.value in variant else " (not a property of the contract)")
    else:
        on_variant = "passes (does not replay)"
    on_reference = f"fails too ({_kinds_text(reference)})" if reference else "passes"
    return [f"  replay against the variant: {on_variant}", f"  replay against the reference: {on_reference}"]


def kind_text(failure: Failure) -> str:
    kinds = set(failure.kinds)
    if kinds <= {ProblemKind.CONTRACT.value}:
        return "a property of the contract"
    return f"{_kinds_text(failure.kinds)}: an error, not a property of the contract"


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


def system_note(known_bad: bool) -> str:
    """How the report says what the system under test is."""
    return ("a variant of a known-bad catalogue: fencecheck gate --known-bad" if known_bad
            else "named by fencecheck gate --system")


def markdown_section(failures: Sequence[Failure], system: str | None = None, *, known_bad: bool = False) -> str:
    """evidence.md's "What failed" section (empty when nothing failed and the system is the reference). A known-bad
    variant's run has a known-bad verdict (caught, survived, ...); any other implementation's has none: its
    verdict is the run's, like the reference's."""
    if not failures and not system:
        return ""
    lines = ["**What failed:**" if failures else "**What failed:** nothing"]
    if system:
        lines.append(f"- system under test: {_md(system)} ({system_note(known_bad)})")
    if system and known_bad:
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
