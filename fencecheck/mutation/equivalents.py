"""The mutants triaged by hand as equivalent: kept in a TOML file the plug-in names (`MutationTargets.equivalents`,
`"package:file.toml"`), each with why no test can tell it from the reference, and marked equivalent (never run,
Ignored in the report, left out of the score) when its id, file, line, operator and code still match.

An entry names its mutant by id (`fencecheck mutate --list`) and says where it is: file, line, cosmic-ray
operator and the original code on that line. An id is a hash of the operator's occurrence in the file, so an edit
above the line can give the same id to another mutant: an entry whose place no longer matches is stale, applied
to nothing, and reported (`stale`), so a triage never silently covers a mutant it did not look at.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from importlib import resources

import attrs

from fencecheck.errors import UsageError
from fencecheck.mutation.mutants import Mutant
from fencecheck.plugin.records import MutationTargets

BY_TRIAGE = "equivalent by triage: "
FIELDS = ("id", "file", "line", "operator", "code", "why")


@attrs.frozen
class Triaged:
    """One equivalent mutant found by hand: where it is, and `why` it cannot change behaviour."""

    id: str
    file: str
    line: int
    operator: str
    code: str
    why: str

    def matches(self, mutant: Mutant) -> bool:
        lines = mutant.original.splitlines()
        source_line = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        return (mutant.id == self.id and mutant.module == self.file and mutant.start[0] == self.line
                and mutant.operator == self.operator and self.code in source_line)


def load(targets: MutationTargets) -> tuple[Triaged, ...]:
    """The entries of the plug-in's equivalents file (none when it names no file)."""
    if targets.equivalents is None:
        return ()
    package, colon, name = targets.equivalents.partition(":")
    if not colon or not name.endswith(".toml"):
        raise UsageError(f"MutationTargets.equivalents {targets.equivalents!r}: expected \"package:file.toml\", "
                         "a TOML file inside an importable package")
    try:
        text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as error:
        raise UsageError(f"MutationTargets.equivalents {targets.equivalents!r} cannot be read ({error}): name a "
                         "file that ships inside the package") from None
    entries = tomllib.loads(text).get("equivalent", [])
    found = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or sorted(entry) != sorted(FIELDS):
            raise UsageError(f"{targets.equivalents}: equivalent entry {number} must have exactly the keys "
                             f"{', '.join(FIELDS)}")
        found.append(Triaged(**entry))
    return tuple(found)


def apply(mutants: Sequence[Mutant], entries: Iterable[Triaged]) -> tuple[list[Mutant], list[Triaged]]:
    """The mutants with each matching entry's mutant marked equivalent, and the entries that matched none of
    the mutants of their file and operator (stale). Entries for files or operators not among `mutants` are
    neither: that run did not make those mutants."""
    by_id = {entry.id: entry for entry in entries}
    made = {(mutant.module, mutant.operator) for mutant in mutants}
    marked, used = [], set()
    for mutant in mutants:
        entry = by_id.get(mutant.id)
        if entry is not None and entry.matches(mutant) and not mutant.compile_error:
            mutant = attrs.evolve(mutant, equivalent=BY_TRIAGE + entry.why)
            used.add(entry.id)
        marked.append(mutant)
    stale = [entry for entry in by_id.values() if entry.id not in used and (entry.file, entry.operator) in made]
    return marked, stale


def describe_stale(entry: Triaged) -> str:
    return (f"the equivalent-mutant entry {entry.id} ({entry.file}:{entry.line}, {entry.operator}, `{entry.code}`) "
            "matches no mutant now: the source moved; triage that line again and update the entry")
