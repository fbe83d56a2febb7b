"""The evidence report's "Mutation" section: what `fencecheck mutate` measured of the suites (issue 24), read from
the Stryker reports it wrote into the artifacts directory:

    mutation/<system>/mutation-report.json    Stryker's mutation-testing-report-schema (fencecheck.mutation.stryker)

Per system and file: the score (killed / every judged mutant that compiles and is not equivalent: a timeout is
never a kill; an error, a crash, is left out as Stryker leaves out a RuntimeError, and counted beside it), the
count of each status, and every survivor with its diff. A mutation run is made apart from
the gate (it takes hours), so its reports are read whatever their age, and the section says when each was
written. It never changes the verdict: it measures the suites, not the system.

Kept in its own module (records, reader, Markdown and HTML) like wire_faults.py.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

from fencecheck.checker.known_bad_verdict import CAUGHT, TIMEOUT
from fencecheck.checker.known_bad_verdict import SURVIVED as SURVIVED_
from fencecheck.mutation.stryker import STRYKER_STATUS
from fencecheck.mutation.stryker import schema as stryker_schema
from fencecheck.report.html_builder import Safe, el

MUTATION_REPORTS = "mutation/*/mutation-report.json"
KILLED, SURVIVED = STRYKER_STATUS[CAUGHT], STRYKER_STATUS[SURVIVED_]
# A judged mutant that compiles and is not equivalent (errors left out), as outcomes.Outcome.counted says.
COUNTED = tuple(STRYKER_STATUS[status] for status in (CAUGHT, SURVIVED_, TIMEOUT))
MAX_SURVIVORS_MD = 8


@attrs.frozen
class MutationFile:
    system: str
    path: str  # the mutated file, from the project root
    statuses: dict[str, int]  # Stryker status -> mutants

    @property
    def killed(self) -> int:
        return self.statuses.get(KILLED, 0)

    @property
    def counted(self) -> int:
        return sum(self.statuses.get(status, 0) for status in COUNTED)

    def score_text(self) -> str:
        return f"{100 * self.killed / self.counted:.1f}% ({self.killed}/{self.counted})" if self.counted else "-"


@attrs.frozen
class Survivor:
    system: str
    path: str
    id: str
    mutator: str
    line: int
    diff: str


@attrs.frozen
class MutationSection:
    files: tuple[MutationFile, ...]
    survivors: tuple[Survivor, ...]
    written: dict[str, str]  # system -> when its report was written (UTC, ISO 8601)


def _known_statuses() -> list[str]:
    """Stryker's mutant statuses, from its schema (read when a report is read, not when this module loads)."""
    mutant = stryker_schema()["properties"]["files"]["additionalProperties"]["properties"]["mutants"]["items"]
    return mutant["properties"]["status"]["enum"]


def _system_entries(data: Any, system: str) -> tuple[list[MutationFile], list[Survivor]]:
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise ValueError("expected a Stryker report: an object with `files`")
    files, survivors = [], []
    for path, entry in sorted(data["files"].items()):
        statuses: dict[str, int] = {}
        for mutant in entry["mutants"]:
            status = mutant["status"]
            if status not in _known_statuses():
                raise ValueError(f"{path}: unknown mutant status {status!r}")
            statuses[status] = statuses.get(status, 0) + 1
            if status == SURVIVED:
                survivors.append(Survivor(system, path, str(mutant["id"]), str(mutant["mutatorName"]),
                                          int(mutant["location"]["start"]["line"]), str(mutant.get("description", ""))))
        files.append(MutationFile(system, path, dict(sorted(statuses.items()))))
    return files, survivors


def collect_mutation(collector: Any) -> MutationSection | None:
    """The section from `collector` (collect._Collector); None when no mutation report is in the artifacts."""
    files: list[MutationFile] = []
    survivors: list[Survivor] = []
    written = {}
    for path in sorted(collector.artifacts.glob(MUTATION_REPORTS)):  # any age: see the module docstring
        system = path.parent.name
        found = collector.read(path, lambda data, s=system: _system_entries(data, s))
        if found is not None:
            files += found[0]
            survivors += found[1]
            written[system] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))
    return MutationSection(tuple(files), tuple(survivors), written) if files else None


def _statuses_text(statuses: dict[str, int]) -> str:
    return ", ".join(f"{count} {status}" for status, count in statuses.items())


def mutation_markdown(section: MutationSection | None, code: Any) -> list[str]:
    """Lines for evidence.md (`code` is render_markdown's helper)."""
    if section is None:
        return ["**Mutation:** not run (fencecheck mutate --system S writes it)"]
    lines = ["", "**Mutation** (fencecheck mutate; score: killed / killed, survived and timed out; errors and "
             "equivalents left out, counted beside it):", ""]
    lines += [f"- {f.system} {code(f.path)}: {f.score_text()}; {_statuses_text(f.statuses)}" for f in section.files]
    shown = [f"{code(s.path)}:{s.line} {s.mutator} ({code(s.id)})" for s in section.survivors[:MAX_SURVIVORS_MD]]
    if shown:
        more = len(section.survivors) - len(shown)
        lines.append("- survivors: " + "; ".join(shown) + (f"; … and {more} more (see evidence.html)" if more else ""))
    return [*lines, ""]


def mutation_html(section: MutationSection | None) -> Safe:
    """The HTML section (anchor `mutation`): scores per system and file, and every survivor with its diff."""
    title = el("h2", "Mutation")
    intro = el("p", "What fencecheck mutate measured of the suites: each mutant of a reference (cosmic-ray's "
                    "operators) judged as gate --known-bad judges a variant. Score: killed / every mutant that "
                    "compiles and is not equivalent; a timeout or an error is never a kill.")
    if section is None:
        return el("section", title, intro, el("p", "Not run.", class_="not-run"), id="mutation")
    written = el("p", "Reports written: " + ", ".join(f"{s} {w}" for s, w in section.written.items()),
                 class_="muted")
    rows = [el("tr", [el("td", c) for c in (f.system, el("code", f.path), f.score_text(),
                                            _statuses_text(f.statuses))]) for f in section.files]
    table = el("table", el("thead", el("tr", [el("th", h) for h in ("system", "file", "score", "mutants")])),
               el("tbody", rows))
    survivors = [el("details", el("summary", f"{s.system} {s.path}:{s.line} {s.mutator} ({s.id})"),
                    el("pre", s.diff)) for s in section.survivors]
    heading = el("h3", f"Survivors ({len(section.survivors)})")
    return el("section", title, intro, written, table, heading,
              survivors or el("p", "None.", class_="muted"), id="mutation")
