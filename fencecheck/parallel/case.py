"""One generated case: a parallel program run R times, each time on a fresh emulator project, and judged.

Why repetitions: a race that a buggy implementation loses only under one interleaving shows up in some runs
and not in others. The case fails if any repetition fails, and its classification says how:

    passes            every repetition passed
    fails sometimes   some repetitions failed, some passed: a race (the interleaving decides)
    fails always      every repetition failed: a logic bug, or a race this program always loses
    fails in prefix   a prefix call already disagreed with the model: a sequential bug, no race needed
    too contended     none failed, but some had too few definite answers to judge (not a pass)

A failed repetition's evidence is a history the checker proved not linearizable (or a broken invariant): a
bug in the implementation whatever the timing, never an artefact of it. Indefinite answers
(`journal_unavailable`, transport errors) never fail a repetition by themselves; the checker lets such a
call have applied or not. A repetition in which fewer than 90% of the branch calls got a definite answer
(`fencecheck.checker.definite`) is `contention`: it shows nothing about the contract, so it is neither a failure of
the case (nothing to shrink, never a catch) nor a pass (`CaseResult.contended`; the reference's suite fails
on it, naming contention).

Repetitions run concurrently, each in its own project (`ProjectSource`): they share nothing, and the
emulator's ~2 s lock timeout is spent waiting, not computing, so R repetitions take about as long as one.

A failing case can be saved as a counterexample (`save_counterexample`): the program, the classification and
the failing repetition's history and verdict. `replay_parallel(path, db)` runs the saved program again on
an empty project; `recheck_parallel(path)` runs the checker again on the saved history.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.history import History
from fencecheck.checker.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.emulator.discovery import new_run_token, project_id_for
from fencecheck.emulator.lifecycle import close_client
from fencecheck.parallel.execute import CONTENTION, OK, PREFIX, Repetition, run_once
from fencecheck.parallel.program import V1_SYSTEM, ParallelProgram
from fencecheck.plugin.records import SystemPlugin
from fencecheck.problems import Problem
from fencecheck.wire.mix import FaultMix

COUNTEREXAMPLE_FORMAT = "fencecheck.parallel-counterexample/1"
PASSES, FAILS_SOMETIMES, FAILS_ALWAYS, FAILS_IN_PREFIX = "passes", "fails sometimes", "fails always", "fails in prefix"
CONTENDED = "too contended"  # no repetition failed the contract, but some had too few answers to judge
CLASSIFICATIONS = (PASSES, FAILS_SOMETIMES, FAILS_ALWAYS, FAILS_IN_PREFIX, CONTENDED)
DEFAULT_REPEAT = 5
# The final replay of a shrunk failure gets this many more rounds of R repetitions while it keeps passing:
# a race lost one time in five is then seen again with probability 1 - 0.8^15 (96 %), not 67 %.
FINAL_ROUNDS = 3


class ProjectSource:
    """Fresh emulator projects: a new id per repetition (`demo-fc-<token>-<tag>-<n>`), its data deleted and
    its client closed afterwards. Thread-safe."""

    def __init__(self, emulator: Any, tag: str = "par") -> None:
        self.emulator = emulator
        self.tag = tag
        self._token = new_run_token()
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def new(self) -> tuple[str, Any]:
        with self._lock:
            project_id = project_id_for(self._token, self.tag, next(self._counter))
        return project_id, self.emulator.client(project_id)

    def release(self, project_id: str, client: Any) -> None:
        close_client(client)
        self.emulator.reset(project_id)


@attrs.frozen(eq=False)
class CaseResult:
    program: ParallelProgram
    repetitions: tuple[Repetition, ...]
    seconds: float
    system: str = "reference"

    @property
    def failures(self) -> tuple[Repetition, ...]:
        """Repetitions that failed the contract (contention is no such failure: see `contended`)."""
        return tuple(r for r in self.repetitions if not r.passed and r.status != CONTENTION)

    @property
    def contended(self) -> tuple[Repetition, ...]:
        """Repetitions with too few definite answers to judge: not a pass, not a failure of the contract."""
        return tuple(r for r in self.repetitions if r.status == CONTENTION)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def findings(self) -> tuple[Problem, ...]:
        """Everything the repetitions found wrong, each of its kind (fencecheck.problems), contention included
        (it is no pass); empty when every repetition passed."""
        return tuple(problem for repetition in self.repetitions for problem in repetition.findings())

    @property
    def classification(self) -> str:
        failures = self.failures
        if not failures:
            return CONTENDED if self.contended else PASSES
        if any(r.status == PREFIX for r in failures):
            return FAILS_IN_PREFIX
        judged = len(self.repetitions) - len(self.contended)
        return FAILS_ALWAYS if len(failures) == judged else FAILS_SOMETIMES

    @property
    def evidence(self) -> Repetition | None:
        """The failing repetition to show: an illegal history first (the strongest evidence), then the rest."""
        order = {"prefix": 0, "illegal": 1, "broken": 2, "unknown": 3}
        failures = sorted(self.failures, key=lambda r: order.get(r.status, 9))
        return failures[0] if failures else None

    def summary(self) -> str:
        counts = f"{len(self.failures)}/{len(self.repetitions)} repetitions failed"
        if self.contended:
            counts += f", {len(self.contended)} too contended to judge"
        lines = [f"parallel program {self.classification} against {self.system} ({counts}; {self.program.size})"]
        lines.append(self.program.describe())
        evidence = self.evidence
        if evidence is not None:
            lines.append(f"failing repetition ({evidence.status}, project {evidence.project_id}):")
            lines += [f"  {line}" for line in evidence.explain().splitlines()]
        for repetition in self.contended[:1]:
            lines.append(f"contended repetition (project {repetition.project_id}): {repetition.contention}")
        return "\n".join(lines)


def _repeat(
    count: int, run: Callable[[], Repetition], *, concurrent: bool
) -> list[Repetition]:
    if not concurrent or count == 1:
        return [run() for _ in range(count)]
    results: list[Repetition | None] = [None] * count
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            results[index] = run()
        except BaseException as error:  # re-raised below, in the caller's thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,), name=f"repetition-{i}", daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


def run_case(
    projects: ProjectSource,
    program: ParallelProgram,
    *,
    system: Any = None,
    repeat: int = DEFAULT_REPEAT,
    final: bool = False,
    concurrent: bool = True,
    budget: int = DEFAULT_BUDGET,
    wire_mix: FaultMix | None = None,
) -> CaseResult:
    """Run `program` `repeat` times, each on a fresh project. `final` (the replay Hypothesis reports) keeps
    going, up to FINAL_ROUNDS more rounds of `repeat`, while every repetition passes. `system`: an
    implementation of the program's system (its reference when None). `wire_mix`: the branch calls go
    through the wire under this fault mix, derived per program and repetition (`Repetition.wire_seed`)."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    started = time.perf_counter()
    numbers = itertools.count()
    program_key = hashlib.sha256(repr(program).encode()).hexdigest()[:12] if wire_mix is not None else ""

    def once() -> Repetition:
        mix = None if wire_mix is None else wire_mix.derive(f"{program_key}-{next(numbers)}")
        project_id, db = projects.new()
        try:
            return run_once(db, program, system=system, project_id=project_id, budget=budget, wire_mix=mix)
        finally:
            projects.release(project_id, db)

    repetitions = _repeat(repeat, once, concurrent=concurrent)
    rounds = 0
    while final and rounds < FINAL_ROUNDS and all(r.status in (OK, CONTENTION) for r in repetitions):
        repetitions += _repeat(repeat, once, concurrent=concurrent)
        rounds += 1
    return CaseResult(program, tuple(repetitions), time.perf_counter() - started,
                      system_label(program.plugin, system))


REFERENCE_LABEL = "reference"


def system_label(plugin: SystemPlugin, system: Any = None) -> str:
    """What a counterexample names as its implementation: "reference" (the plug-in's own, None included), or
    the spec the plug-in resolves (`plugin.spec_of`: a module, `known_bad.<system>:<variant>`)."""
    if system is None or system is plugin.reference:
        return REFERENCE_LABEL
    spec = plugin.spec_of(system)
    return REFERENCE_LABEL if spec in (None, REFERENCE_LABEL, plugin.spec_of(plugin.reference)) else spec


def resolve_system(plugin: SystemPlugin, label: str) -> Any:
    """The implementation a counterexample names (see `system_label`)."""
    return plugin.resolve(None if label == REFERENCE_LABEL else label)


# --- counterexamples ---------------------------------------------------------------------------------


def counterexample_document(result: CaseResult) -> dict[str, Any]:
    evidence = result.evidence
    size = result.program.size
    data: dict[str, Any] = {
        "format": COUNTEREXAMPLE_FORMAT,
        "system": result.system,
        "classification": result.classification,
        "failedRepetitions": len(result.failures),
        "repetitions": len(result.repetitions),
        "statuses": [r.status for r in result.repetitions],
        "size": {"branches": size.branches, "concurrentOps": size.concurrent_ops, "prefixOps": size.prefix_ops},
        "program": result.program.to_json(),
        "description": result.program.describe(),
        "failure": None,
        "history": None,
    }
    if evidence is not None:
        data["failure"] = {"status": evidence.status, "projectId": evidence.project_id,
                           "explanation": evidence.explain()}
        if evidence.history is not None:
            data["history"] = evidence.history.to_json()
    return data


def counterexample_name(result: CaseResult, digest: str) -> str:
    """`parallel-<label>-<id>.json` for the journal's programs (as before other systems had any),
    `parallel-<system>-<label>-<id>.json` for another system's: label is `reference` or the variant's name."""
    # Only letters, digits, _ and -: a spec may be a command line (`journal:exec:node path/main.js`).
    label = re.sub(r"[^A-Za-z0-9_]+", "-", result.system.rpartition(":")[2]).strip("-")[:60] or "implementation"
    system = result.program.system
    if system == V1_SYSTEM:
        return f"parallel-{label}-{digest[:10]}.json"
    return f"parallel-{system}-{label}-{digest[:10]}.json"


def save_counterexample(result: CaseResult, directory: Path | str) -> Path:
    """`<directory>/<counterexample_name>` (the id is a digest of the program and system, so the same shrunk
    program lands in the same file)."""
    data = counterexample_document(result)
    digest = hashlib.sha256(json.dumps([data["system"], data["program"]], sort_keys=True).encode()).hexdigest()
    path = Path(directory) / counterexample_name(result, digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


@attrs.frozen(eq=False)
class SavedCounterexample:
    program: ParallelProgram
    system: str  # the implementation: "reference" or its spec
    classification: str
    history: History | None
    data: dict[str, Any]

    @property
    def plugin(self) -> SystemPlugin:
        return self.program.plugin


def load_counterexample(path: Path | str) -> SavedCounterexample:
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("format") != COUNTEREXAMPLE_FORMAT:
        raise ValueError(f"{path}: not a parallel counterexample (format {COUNTEREXAMPLE_FORMAT!r})")
    program = ParallelProgram.from_json(data["program"])
    history = History.from_json(data["history"]) if data.get("history") is not None else None
    if history is not None and history.system != program.system:
        raise ValueError(f"{path}: the history is the {history.system}'s, the program the {program.system}'s")
    return SavedCounterexample(program, data["system"], data["classification"], history, data)


def replay_parallel(
    path: Path | str, db: Any, *, system: Any = None, budget: int = DEFAULT_BUDGET
) -> Repetition:
    """Run a saved counterexample's program once more on `db` (a client for an EMPTY project), against the
    system the file names (or `system`); returns the repetition (`.passed`, `.status`, `.explain()`).

    One run may pass where the saved one failed: a race is lost only under some interleavings. Replay a few
    times (each on its own empty project), or use `replay_parallel_case` with an emulator."""
    saved = load_counterexample(path)
    implementation = resolve_system(saved.plugin, saved.system) if system is None else system
    return run_once(db, saved.program, system=implementation, budget=budget)


def replay_parallel_case(
    path: Path | str, emulator: Any, *, repeat: int = DEFAULT_REPEAT, system: Any = None
) -> CaseResult:
    """Run a saved counterexample's program `repeat` times, each on a fresh project of `emulator`."""
    saved = load_counterexample(path)
    implementation = resolve_system(saved.plugin, saved.system) if system is None else system
    return run_case(ProjectSource(emulator, "replay"), saved.program, system=implementation, repeat=repeat)


def recheck_parallel(path: Path | str, *, budget: int = DEFAULT_BUDGET) -> Verdict | None:
    """The checker's verdict on a saved counterexample's history again, from the model state after its
    prefix (pure; None when the failure was in the prefix and no race history was saved)."""
    saved = load_counterexample(path)
    if saved.history is None:
        return None
    state, _results = saved.program.prefix_state()
    return check(saved.history, plugin=saved.plugin, initial_state=state, budget=budget)
