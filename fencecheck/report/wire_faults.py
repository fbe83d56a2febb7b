"""The evidence report's "Wire faults" section: the wire fault kinds each suite exercised (issue 15).

    stateful/<machine>.json             "wireFaults": {"<kind> <Method>": n} (artifacts.write_stateful_summary)
    wire-faults/races.json              {system: {"<kind> <Method>": n}}, the race session's (race_tests/conftest.py)
    wire-faults/parallel-<name>.json    {"seed", "kinds", "system"} of one parallel run under a fault mix
                                        (parallel_tests/test_parallel_reference.py; older files have no system)

A race result file's own `wireFaults` ({"seed", "kinds"}) is checked by the race collector, so a malformed one
is an artifact error like any other. Kept in its own module (records, readers, the warning rule, Markdown and
HTML) like parallel.py, so the shared report modules gain a few lines each.

Rule: a suite that ran (its section was collected) but whose files recorded no fault at all is a warning, never
a failure: the wire's evidence is missing, the contract's is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from fencecheck.plugin.registry import UNNAMED_SYSTEM
from fencecheck.report.html_builder import Safe, el

WIRE_DIR = "wire-faults"
RACES_FILE = f"{WIRE_DIR}/races.json"
PARALLEL_PREFIX = "parallel-"
WIRE_SUITES = ("stateful", "races", "parallel")  # in the order the section shows them
EARLIER_REFERENCE_RUN = "reference"  # parallel-reference.json, written before files named their system: the journal's


@attrs.frozen
class WireFaultEntry:
    """What one suite's run recorded: a stateful machine, one system's races, or one parallel run."""

    suite: str  # stateful | races | parallel
    name: str  # the machine, the races' system, the parallel run
    system: str | None  # the plug-in when the file says or its name shows it, else None
    seed: str | None  # the fault mix's seed; None without a mix (the stateful machines fault by plan)
    kinds: dict[str, int]  # fault events per "<kind> <Method>"; {}: none
    path: str  # the artifact file, relative to the artifacts directory

    def __attrs_post_init__(self) -> None:
        if self.suite not in WIRE_SUITES:
            raise ValueError(f"wire faults {self.name}: unknown suite {self.suite!r} (expected one of {WIRE_SUITES})")


@attrs.frozen
class WireFaultSection:
    entries: tuple[WireFaultEntry, ...]

    def recorded(self, suite: str) -> bool:
        return any(e.kinds for e in self.entries if e.suite == suite)


def missing_suites(section: WireFaultSection | None, ran: Sequence[str]) -> list[str]:
    """Of the suites that `ran` (their sections were collected), those with no wire fault recorded at all."""
    return [suite for suite in WIRE_SUITES if suite in ran and (section is None or not section.recorded(suite))]


def warnings(section: WireFaultSection | None, ran: Sequence[str]) -> list[str]:
    return [f"wire faults: none recorded for the {suite} suite" for suite in missing_suites(section, ran)]


# --- reading -----------------------------------------------------------------------------------------


def fault_kinds(value: Any, where: str) -> dict[str, int]:
    """A `{"<kind> <Method>": count}` object, checked exactly (a count is an int, not a bool)."""
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object of fault kind -> count, got {type(value).__name__}")
    for label, count in value.items():
        if not label or type(count) is not int or count < 0:
            raise ValueError(f"{where}: expected \"<kind> <Method>\": a count >= 0, got {label!r}: {count!r}")
    return dict(value)


def mix_seed(value: Any, where: str) -> str | None:
    """The fault mix's seed as recorded (a string since fencecheck.wire.mix; an int is accepted), or None."""
    if value is None or isinstance(value, str) and value:
        return value
    if type(value) is int:
        return str(value)
    raise ValueError(f"{where}: the seed must be a non-empty string, an int or null, got {value!r}")


def check_race_wire_faults(value: Any) -> None:
    """A race result's `wireFaults` (fencecheck.runners.contest_results): {"seed": str | int | null, "kinds": {...}}."""
    if not isinstance(value, dict) or set(value) != {"seed", "kinds"}:
        raise ValueError("wireFaults: expected an object with exactly the keys seed and kinds")
    mix_seed(value["seed"], "wireFaults.seed")
    fault_kinds(value["kinds"], "wireFaults.kinds")


def races_entries(data: Any, path: str) -> list[WireFaultEntry]:
    if not isinstance(data, dict):
        raise ValueError("expected an object of system -> {fault kind: count}")
    return [WireFaultEntry("races", system, system, None, fault_kinds(kinds, system), path)
            for system, kinds in sorted(data.items())]


def parallel_entry(data: Any, path: str, name: str, systems: Sequence[str]) -> WireFaultEntry:
    if not isinstance(data, dict) or not {"seed", "kinds"} <= set(data) <= {"seed", "kinds", "system"}:
        raise ValueError("expected an object with the keys seed, kinds and (optionally) system")
    system = data.get("system")
    if system is None:  # an older file: the run's name shows its system, or it is the journal's reference
        system = UNNAMED_SYSTEM if name == EARLIER_REFERENCE_RUN else next(
            (s for s in systems if name.startswith(f"{s}-")), None)
    elif not isinstance(system, str) or system not in systems:
        raise ValueError(f"system: expected one of {list(systems)}, got {system!r}")
    return WireFaultEntry("parallel", name, system, mix_seed(data["seed"], "seed"), fault_kinds(data["kinds"], "kinds"),
                          path)


def collect_wire_faults(
    collector: Any, stateful: Mapping[str, tuple[str, dict[str, int]]], systems: Sequence[str]
) -> WireFaultSection | None:
    """The section from `collector` (collect._Collector) and the stateful machines already read
    (`{machine: (path, wire_faults)}`); None when no suite wrote anything to show."""
    entries = [WireFaultEntry("stateful", machine, None, None, dict(kinds), path)
               for machine, (path, kinds) in sorted(stateful.items())]
    for file in collector.files(RACES_FILE):
        where = collector.relative(file)
        entries += collector.read(file, lambda data, w=where: races_entries(data, w)) or []
    for file in collector.files(f"{WIRE_DIR}/{PARALLEL_PREFIX}*.json"):
        name, where = file.stem[len(PARALLEL_PREFIX):], collector.relative(file)
        entry = collector.read(file, lambda data, n=name, w=where: parallel_entry(data, w, n, systems))
        entries += [entry] if entry is not None else []
    return WireFaultSection(tuple(entries)) if entries else None


# --- rendering ---------------------------------------------------------------------------------------


def _kinds_text(kinds: Mapping[str, int]) -> str:
    return ", ".join(f"{label} {count}" for label, count in sorted(kinds.items())) or "none"


def _label(entry: WireFaultEntry) -> str:
    return f"{entry.name} ({entry.system})" if entry.suite == "parallel" and entry.system else entry.name


def wire_markdown(section: WireFaultSection | None, ran: Sequence[str], code: Any, cut: Any) -> list[str]:
    """Lines for evidence.md (`code` and `cut` are render_markdown's helpers)."""
    missing = missing_suites(section, ran)
    if section is None:
        return ["**Wire faults:** none recorded" + (f" (by {', '.join(missing)})" if missing else "")]
    lines = ["", "**Wire faults:**", ""]  # a list: blank lines around it, so no line after joins its last item
    for suite in WIRE_SUITES:
        entries = [e for e in section.entries if e.suite == suite]
        if suite in missing:
            lines.append(f"- {suite}: none recorded")
        shown = [f"{code(_label(e))} {_kinds_text(e.kinds)}" + (f" (seed {code(e.seed)})" if e.seed else "")
                 for e in entries if e.kinds]
        if shown:
            lines.append(f"- {suite}: " + "; ".join(cut(shown)))
    return [*lines, ""]


def wire_html(section: WireFaultSection | None, ran: Sequence[str]) -> Safe:
    """The HTML section (anchor `wire-faults`)."""
    missing = missing_suites(section, ran)
    title = el("h2", "Wire faults")
    intro = el("p", "Faults the wire proxy put on the suites' calls (fencecheck/wire/): each makes its call "
                    "definite or indefinite, as docs/wire-faults.md describes.")
    notes = [el("p", f"{suite}: none recorded.", class_="not-run") for suite in missing]
    if section is None:
        return el("section", title, intro, notes or el("p", "None recorded.", class_="muted"), id="wire-faults")
    rows = [
        el("tr", [el("td", c) for c in (
            e.suite, e.name, e.system or "—", el("code", e.seed) if e.seed else "—", _kinds_text(e.kinds),
            el("code", e.path),
        )])
        for e in section.entries
    ]
    table = el("table", el("thead", el("tr", [el("th", h) for h in
                                               ("suite", "run", "system", "mix seed", "fault kinds", "file")])),
               el("tbody", rows))
    return el("section", title, intro, notes or None, table, id="wire-faults")
