"""The parallel suite's section of the evidence report (parallel_tests/, fencecheck.parallel).

    parallel/<run>.json                one property run against the reference (RUN_FORMAT)
    parallel/known_bad/<variant>.json  one concurrent known-bad variant (VARIANT_FORMAT)

Each file is `{"format": ..., <the record's fields in camelCase>}`; the writers below are what the suite
calls, so writer and reader agree on one spelling. Kept in its own module (records, writers, collector,
verdict rules, Markdown and HTML) so the shared report modules only gain a few lines each.

Verdict: a reference run that failed (any classification but "passes"), or had a repetition too contended to
judge (`contendedRepetitions`, fencecheck.checker.definite), fails the run; a concurrent variant
that survived fails it; a variant that timed out or errored is a warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs

from fencecheck.checker.definite import RUN_SHARE_PERCENT
from fencecheck.plugin.registry import UNNAMED_SYSTEM
from fencecheck.report.artifacts import write_json
from fencecheck.report.codec import decode, encode
from fencecheck.report.html_builder import Safe, el

PARALLEL_DIR = "parallel"
KNOWN_BAD_SUBDIR = "known_bad"
RUN_FORMAT = "fencecheck.parallel-run/1"
VARIANT_FORMAT = "fencecheck.parallel-known-bad/1"
VARIANT_STATUSES = ("caught", "survived", "timeout", "error")  # as model.KNOWN_BAD_STATUSES
PASSES = "passes"


# Files written before the lantern had parallel programs name no plug-in (fencecheck.plugin.registry.UNNAMED_SYSTEM's).
EARLIER_PLUGIN = UNNAMED_SYSTEM


@attrs.frozen
class ParallelRun:
    """The parallel property run of one system (`plugin`: journal, lantern) against one implementation
    (`system`: the reference): examples x repetitions, and the shrunk failing case if there was one."""

    name: str
    system: str
    profile: str | None
    examples: int
    repetitions: int  # per example (--parallel-repeat)
    repetitions_run: int  # over every example, shrinking included
    contested_examples: int
    seconds: float
    classification: str = PASSES  # passes | fails sometimes | fails always | fails in prefix
    failed_repetitions: int | None = None  # of the reported failing case
    case_repetitions: int | None = None
    shrunk_branches: int | None = None
    shrunk_ops: int | None = None  # concurrent + prefix calls
    counterexample: str | None = None
    message: str | None = None
    contended_repetitions: int = 0  # too few definite answers to judge (fencecheck.checker.definite): not a pass
    contention: str | None = None  # the first such repetition's message
    plugin: str = EARLIER_PLUGIN  # the system's plug-in (its programs, model and checker)

    _json_derived: ClassVar = ("passed",)

    @property
    def passed(self) -> bool:
        return self.classification == PASSES and self.contended_repetitions == 0


@attrs.frozen
class ParallelVariant:
    """One concurrent known-bad variant of one system (`plugin`: known_bad/journal/concurrent_variants.py,
    known_bad/lantern/variants.py) through the parallel suite."""

    name: str
    rule: str
    status: str  # caught | survived | timeout | error
    seconds_to_detection: float | None = None  # from the start to the first failing case, before shrinking
    examples_to_detection: int | None = None
    classification: str | None = None  # of the shrunk case: fails sometimes | fails always | ...
    failed_repetitions: int | None = None
    repetitions: int | None = None
    shrunk_branches: int | None = None
    shrunk_concurrent_ops: int | None = None
    shrunk_prefix_ops: int | None = None
    counterexample: str | None = None
    failing_property: str | None = None
    warnings: tuple[str, ...] = ()  # bounds that did not hold but decide nothing (fencecheck.checker.known_bad_verdict)
    plugin: str = EARLIER_PLUGIN

    _json_derived: ClassVar = ("caught", "shrunk_steps")

    def __attrs_post_init__(self) -> None:
        if self.status not in VARIANT_STATUSES:
            raise ValueError(f"parallel known-bad {self.name}: unknown status {self.status!r}")

    @property
    def caught(self) -> bool:
        return self.status == "caught"

    @property
    def shrunk_steps(self) -> int | None:
        if self.shrunk_concurrent_ops is None:
            return None
        return self.shrunk_concurrent_ops + (self.shrunk_prefix_ops or 0)


@attrs.frozen
class ParallelSection:
    runs: tuple[ParallelRun, ...] = ()
    variants: tuple[ParallelVariant, ...] = ()

    _json_derived: ClassVar = ("breakdown",)

    @property
    def breakdown(self) -> dict[str, int]:
        counts = Counter(v.status for v in self.variants)
        return {status: counts.get(status, 0) for status in VARIANT_STATUSES}

    @property
    def systems(self) -> tuple[str, ...]:
        """The plug-ins with a run or a variant, in name order."""
        return tuple(sorted({r.plugin for r in self.runs} | {v.plugin for v in self.variants}))

    def missing_runs(self, systems: Sequence[str]) -> list[str]:
        """Of `systems`, those with no run against an implementation in this section."""
        ran = {r.plugin for r in self.runs}
        return [name for name in systems if name not in ran]

    def reasons(self) -> list[str]:
        out = [f"parallel {r.name}: {r.classification} ({r.failed_repetitions}/{r.case_repetitions} repetitions)"
               for r in self.runs if r.classification != PASSES]
        out += [f"parallel {r.name}: contention: {r.contended_repetitions} repetition(s) had fewer than "
                f"{RUN_SHARE_PERCENT}% definite answers; this is not a contract verdict"
                for r in self.runs if r.contended_repetitions]
        out += [f"parallel known-bad {v.name} survived (rule {v.rule})" for v in self.variants
                if v.status == "survived"]
        return out

    def warnings(self) -> list[str]:
        out = [f"parallel known-bad {v.name}: {v.status}" for v in self.variants if v.status in ("timeout", "error")]
        out += [f"parallel known-bad {v.name}: {w}" for v in self.variants for w in v.warnings]
        return out + [f"parallel: no run of the {name}'s programs (not run)" for name in self.missing_runs(
            _parallel_systems())]

    def counterexamples(self) -> list[tuple[str, str, str]]:
        """(kind, source, path) of every counterexample the section names."""
        found = [("parallel", r.name, r.counterexample) for r in self.runs if r.counterexample]
        found += [("parallel", v.name, v.counterexample) for v in self.variants if v.counterexample]
        return found


def _parallel_systems() -> tuple[str, ...]:
    """Every registered system that has parallel programs (its plug-in gives a `parallel` spec)."""
    from fencecheck.plugin.registry import SYSTEM_NAMES, plugin  # found by name through the registry

    return tuple(name for name in SYSTEM_NAMES if plugin(name).parallel is not None)


# --- writing and reading -----------------------------------------------------------------------------


def _file_name(name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).lstrip(".")
    if not safe:
        raise ValueError(f"cannot make a file name from {name!r}")
    return safe + ".json"


def _write(path: Path, data: dict[str, Any]) -> Path:
    return write_json(path, data)  # the report's one atomic writer


def write_parallel_run(artifacts: Path | str, run: ParallelRun) -> Path:
    return _write(Path(artifacts) / PARALLEL_DIR / _file_name(run.name), {"format": RUN_FORMAT, **encode(run)})


def write_parallel_variant(artifacts: Path | str, variant: ParallelVariant) -> Path:
    path = Path(artifacts) / PARALLEL_DIR / KNOWN_BAD_SUBDIR / _file_name(variant.name)
    return _write(path, {"format": VARIANT_FORMAT, **encode(variant)})


def _reader(kind: type, fmt: str):
    def parse(data: Any) -> Any:
        if not isinstance(data, dict) or data.get("format") != fmt:
            raise ValueError(f"not a {fmt} file")
        return decode(kind, {k: v for k, v in data.items() if k != "format"})

    return parse


def collect_parallel(collector: Any) -> ParallelSection | None:
    """The section from `collector` (collect._Collector: `files(glob)` and `read(path, parse)`); None when
    the suite wrote nothing."""
    read_run, read_variant = _reader(ParallelRun, RUN_FORMAT), _reader(ParallelVariant, VARIANT_FORMAT)
    runs = [r for p in collector.files(f"{PARALLEL_DIR}/*.json") if (r := collector.read(p, read_run))]
    variant_files = collector.files(f"{PARALLEL_DIR}/{KNOWN_BAD_SUBDIR}/*.json")
    variants = [v for p in variant_files if (v := collector.read(p, read_variant))]
    if not runs and not variants:
        return None
    return ParallelSection(tuple(sorted(runs, key=lambda r: r.name)), tuple(sorted(variants, key=lambda v: v.name)))


# --- rendering ---------------------------------------------------------------------------------------


def parallel_markdown(section: ParallelSection | None, code: Any, cut: Any) -> list[str]:
    """Lines for evidence.md (`code` and `cut` are render_markdown's helpers)."""
    if section is None:
        return ["**Parallel:** not run"]
    lines = []
    for system in section.systems:
        runs = [r for r in section.runs if r.plugin == system]
        examples = sum(r.examples for r in runs)
        reps = sum(r.repetitions_run for r in runs)
        failing = [f"{r.name} {r.classification}" for r in runs if not r.passed]
        text = f"**Parallel ({system}):** {len(runs)} run(s), {examples} programs, {reps} repetitions"
        if not runs:
            text = f"**Parallel ({system}):** no run"
        elif failing:
            text += "; failing: " + ", ".join(code(f) for f in cut(failing))
        else:
            text += "; all linearizable"
        lines.append(text)
    if section.variants:
        breakdown = ", ".join(f"{n} {k}" for k, n in section.breakdown.items())
        line = f"**Concurrent known-bad:** {len(section.variants)} variants: {breakdown}"
        survived = [v.name for v in section.variants if v.status == "survived"]
        if survived:
            line += "; survived: " + ", ".join(code(n) for n in cut(survived))
        lines.append(line)
    return lines


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _badge(status: str) -> Safe:
    return el("span", status, class_=f"badge b-{status.replace(' ', '-')}")


def _table(headers: Sequence[str], rows: list[Safe]) -> Safe:
    return el("table", el("thead", el("tr", [el("th", h) for h in headers])), el("tbody", rows))


def parallel_html(section: ParallelSection | None) -> Safe:
    """The HTML section (anchor `parallel`)."""
    title = el("h2", "Parallel programs", " ", _badge("not run") if section is None else None)
    if section is None:
        return el("section", title, el("p", "Not run: no artifact files for this section.", class_="not-run"),
                  id="parallel")
    runs = _table(
        ["run", "system", "implementation", "result", "programs", "repetitions", "contested", "seconds", "shrunk",
         "counterexample"],
        [
            el("tr", [el("td", c) for c in (
                r.name, r.plugin, el("code", r.system), _badge("passed" if r.passed else "failed"), r.examples,
                f"{r.repetitions_run} ({r.repetitions} per program)", r.contested_examples, _fmt(r.seconds),
                "—" if r.passed else f"{r.classification}, {r.shrunk_branches} branches, {r.shrunk_ops} ops",
                el("code", r.counterexample) if r.counterexample else "—",
            )])
            for r in section.runs
        ],
    )
    variants = _table(
        ["variant", "system", "rule", "status", "s to detection", "shrunk (branches / concurrent / prefix)",
         "repetitions failed", "counterexample"],
        [
            el("tr", [el("td", c) for c in (
                el("span", v.name, class_="nowrap"), v.plugin, el("code", v.rule), _badge(v.status),
                _fmt(v.seconds_to_detection),
                "—" if v.shrunk_branches is None else
                f"{v.shrunk_branches} / {v.shrunk_concurrent_ops} / {v.shrunk_prefix_ops}",
                "—" if v.repetitions is None else f"{v.failed_repetitions}/{v.repetitions} ({v.classification})",
                el("code", v.counterexample) if v.counterexample else "—",
            )], class_=f"kb-{v.status}")
            for v in section.variants
        ],
    )
    return el(
        "section",
        title,
        el("p", "A sequential prefix, then 2-4 branches released together, each program run on fresh projects "
                "several times and judged by the linearizability checker."),
        runs if section.runs else el("p", "No run against the reference.", class_="muted"),
        el("h3", "Concurrent known-bad variants") if section.variants else None,
        variants if section.variants else None,
        id="parallel",
    )
