"""A contest run as evidence: its result record, its files, and one contest end to end.

- `contest_result(run, ...)`: the run as a `ScenarioResult`, the race suites' record (either system);
- `save_result` writes it as a `RESULT_FORMAT` document (the evidence report's input) to
  `<artifacts>/<system>_<scenario>-<repeat>.json`; its `problems` and `promise_problems` are the problems'
  texts, with `problem_kinds` and `promise_problem_kinds` beside them (each text's kind, fencecheck.problems:
  kept apart so the texts read as before); `ScenarioResult.findings()` is everything the run found, structured;
- `save_counterexample` writes a failed run's contest and history to
  `<counterexamples>/race-<system>_<scenario>-<shortid>.json` (`COUNTEREXAMPLE_FORMAT`); `load_saved` reads
  either file back and `recheck` judges it again (pure: the final documents are part of the history);
- `execute_contest`: run (`fencecheck.runners.contest.run_contest`), judge, build the result and save both files.

Both files hold the whole contest (`contest_json`): the setup, every racer's and follower's operation (and
`firstOp` when its first attempt differs), the contest's `facts`, all written with the plug-in's
`ops_to_json` under one `setupHeader`, so `fencecheck replay` can run the same contest again. Version 1 of
these files (the journal's own race runner, and the lantern's `fencecheck.contest-counterexample/1`) did not
record the racers' operations; it is refused with a `CounterexampleError` that says how to regenerate.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from fencecheck.checker.definite import contention_problem, degree_judged, excused_calls, undecided_problem
from fencecheck.checker.history import History
from fencecheck.checker.linearizability import DEFAULT_BUDGET, Verdict, check
from fencecheck.errors import CounterexampleError
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.problems import Problem, as_problems, contention, verdict_problem
from fencecheck.runners.contest import (
    Contest,
    ContestRun,
    Racer,
    RacerRecord,
    answer_label,
    fresh_log,
    qualified_name,
    run_contest,
)
from fencecheck.runners.contest_simulation import setup_state
from fencecheck.wire.mix import FaultMix

RESULT_FORMAT = "fencecheck.race-result/2"
COUNTEREXAMPLE_FORMAT = "fencecheck.race-counterexample/2"
FORMATS = (RESULT_FORMAT, COUNTEREXAMPLE_FORMAT)
OLD_FORMATS = ("fencecheck.race-result/1", "fencecheck.race-counterexample/1", "fencecheck.contest-counterexample/1")
REGENERATE = ("Run the race suite again to regenerate it (.venv/bin/python -m pytest race_tests -n 2; "
              "its results go to artifacts/races/, failed histories to counterexamples/).")


def write_json(path: Path, data: Any) -> Path:
    """Write `data` as indented JSON, atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)
    return path


# --- results ------------------------------------------------------------------------------------------------


@attrs.frozen
class ScenarioResult:
    """One race run's record, either system's (`contest_result`); `to_json` is the head of its result file."""

    scenario: str
    repeat: int
    width: int
    race_seconds: float
    total_seconds: float
    outcomes: dict[str, int]  # final answer per caller
    first_outcomes: dict[str, int]  # first attempt's answer per caller
    callers: int
    definite_callers: int
    definite_share: float  # callers with a definite answer after <= max whole-call retries
    whole_call_retries: int
    retried_callers: int
    calls: int  # calls in the history (race, retries and after-calls)
    attempts: int  # transaction attempts, summed over every call
    aborts: int
    max_attempts: int  # most transaction attempts one call needed
    verdict: str
    checker_ms: float
    checker_steps: int
    problems: tuple[Problem, ...]  # the harness's and the system's structural findings, each of its kind
    promise_problems: tuple[Problem, ...]  # the seed's specific promise (contract findings)
    explanation: str | None = None
    counterexample: str | None = None
    project_id: str | None = None
    key_hash: str | None = None  # always None since format 2 (kept so the record's keys stay the same)
    lock_timeouts: int | None = None  # emulator-wide, during this run (shared by parallel workers)
    # Racing callers left indefinite with the model's own unavailable answer (fencecheck.checker.definite): they
    # count with the definite ones for the share.
    contract_unavailable_callers: int = 0
    # Too few definite callers for the verdict to mean anything (fencecheck.checker.definite): never a pass.
    contention: str | None = None
    # A contended run raced again at lower degrees (`LOWER_DEGREES`): the highest one judged, its verdict and
    # its findings (None, None, (): not needed, or no lower degree could be judged either).
    judged_width: int | None = None
    judged_verdict: str | None = None
    judged_problems: tuple[Problem, ...] = ()
    # The scenario's promise and the contest's expectations the run did not meet while some caller went
    # unanswered: the definite answers do not imply them, so they are contention, not contract findings.
    undecided: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return (
            self.verdict == "ok" and not self.problems and not self.promise_problems and self.contention is None
        )

    @property
    def degree(self) -> str | None:
        """For a contended run, the degree its contest was judged at (`fencecheck.checker.definite.degree_judged`)."""
        if self.contention is None:
            return None
        return degree_judged(self.width, self.judged_width, self.judged_verdict,
                             [p.text for p in self.judged_problems])

    def findings(self) -> tuple[Problem, ...]:
        """Everything the run found wrong, each of its kind: the checker's verdict (illegal: contract; unknown),
        the problems, the promise's and contention; empty when it passed. What the suites assert and the
        known-bad judge decides from."""
        verdict = verdict_problem(self.verdict, self.explanation)
        found = [*([verdict] if verdict is not None else []), *self.problems]
        found += [attrs.evolve(p, text=f"promise: {p.text}") for p in self.promise_problems]
        # a contract finding at a lower degree is one (an error there is an error): "contended at 24" alone is not
        found += [attrs.evolve(p, text=f"at {self.judged_width} callers: {p.text}") for p in self.judged_findings()]
        return (*found, *([contention(self.contention)] if self.contention is not None else []))

    def judged_findings(self) -> tuple[Problem, ...]:
        """What the run at the lower degree found: its verdict's problem and its problems (empty: none run)."""
        verdict = None if self.judged_verdict is None else verdict_problem(self.judged_verdict)
        return (*([verdict] if verdict is not None else []), *self.judged_problems)

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self, recurse=False)
        # Texts as they always were, for people and the report; each list's kinds beside it, in the same order.
        out["problems"] = [p.text for p in self.problems]
        out["problem_kinds"] = [p.kind.value for p in self.problems]
        out["promise_problems"] = [p.text for p in self.promise_problems]
        out["promise_problem_kinds"] = [p.kind.value for p in self.promise_problems]
        out["judged_problems"] = [p.text for p in self.judged_problems]
        out["judged_problem_kinds"] = [p.kind.value for p in self.judged_problems]
        out["undecided"] = list(self.undecided)
        out["outcomes"], out["first_outcomes"] = dict(self.outcomes), dict(self.first_outcomes)
        out["format"] = RESULT_FORMAT
        return out


def contest_result(
    run: ContestRun,
    *,
    repeat: int = 0,
    problems: Sequence[Problem | str] = (),
    promise_problems: Sequence[Problem | str] = (),
    counterexample: str | None = None,
    project_id: str | None = None,
    lock_timeouts: int | None = None,
) -> ScenarioResult:
    """The run as the race suite's result record. `problems`: the caller's structural findings (the system's
    invariants on the stored documents), added to the run's own; `promise_problems`: the scenario's. A plain
    string among them is a contract finding (`fencecheck.problems.as_problems`)."""
    records = run.racers
    calls = [call for record in (*records, *run.followers) for call in record.calls]  # attempts: every call
    definite = sum(1 for record in records if record.definite)

    def excused_records(ids: frozenset[int]) -> int:
        return sum(1 for r in records if not r.definite and r.calls and r.calls[-1].call_id in ids)

    unavailable_ids = excused_calls(run.history, run.verdict, run.initial_state,
                                    answered=lambda ids: definite + excused_records(ids), callers=len(records),
                                    budget=DEFAULT_BUDGET)
    excused = excused_records(unavailable_ids)
    expected = (*run.expectation_problems, *promise_problems)
    # A promise or expectation is implied only by answers: with a caller unanswered (it may or may not have
    # applied) and the checker finding the stored documents explained, missing it accuses nobody.
    unanswered = (any(not r.definite and not (r.calls and r.calls[-1].call_id in unavailable_ids) for r in records)
                  or any(not r.definite for r in run.followers))
    undecided = tuple(str(p) for p in expected) if unanswered and run.verdict.status != "illegal" else ()
    share = contention_problem(definite + excused, len(records))
    return ScenarioResult(
        scenario=run.name,
        repeat=repeat,
        width=run.contest.width,
        race_seconds=round(run.race_seconds, 4),
        total_seconds=round(run.total_seconds, 4),
        outcomes=dict(sorted(run.labels().items())),
        first_outcomes=dict(sorted(Counter(answer_label(r.calls[0].outcome) for r in records if r.calls).items())),
        callers=len(records),
        definite_callers=definite,
        definite_share=definite / len(records),
        whole_call_retries=sum(record.retries for record in records),
        retried_callers=sum(1 for record in records if record.retries),
        calls=len(run.history.calls),
        attempts=sum(call.transaction_attempts for call in calls),
        aborts=sum(call.aborts for call in calls),
        max_attempts=max((call.transaction_attempts for call in calls), default=0),
        verdict=run.verdict.status,
        checker_ms=round(run.checker_seconds * 1000, 3),
        checker_steps=run.verdict.steps,
        problems=(*run.problems, *as_problems(problems),
                  *as_problems(() if undecided else run.expectation_problems)),
        promise_problems=() if undecided else as_problems(promise_problems),
        explanation=None if run.verdict.ok else run.verdict.explain(),
        counterexample=counterexample,
        project_id=project_id,
        key_hash=None,
        lock_timeouts=lock_timeouts,
        contract_unavailable_callers=excused,
        contention=_with_callers(share or undecided_problem(undecided), records, run.history, lock_timeouts),
        undecided=undecided,
    )


CONTENTION_DOC = "docs/contention.md"
SHOWN_CALLERS = 6  # of the unanswered callers, in a contention message


def _with_callers(problem: str | None, records: Sequence[RacerRecord], history: History,
                  lock_timeouts: int | None) -> str | None:
    """A contention message the implementer can act on: per unanswered caller its whole calls, the transaction
    attempts it logged and the seconds it spent; the emulator's lock timeouts during the run; where to read."""
    if problem is None:
        return None
    unanswered = [record for record in records if not record.definite]

    def seconds(record: RacerRecord) -> float:  # its calls' time in the history (a hung call: not counted)
        return sum((c.completed_at - c.invoked_at) / 1e9 for c in history.calls
                   if c.caller == record.racer.name and c.completed_at is not None)

    shown = [f"{r.racer.name}: {len(r.calls)} whole call(s), {sum(c.transaction_attempts for c in r.calls)} "
             f"transaction attempt(s) logged, {seconds(r):.1f} s" for r in unanswered[:SHOWN_CALLERS]]
    more = len(unanswered) - len(shown)
    locks = "not known" if lock_timeouts is None else str(lock_timeouts)
    return (f"{problem}. Unanswered callers ({'; '.join(shown)}{f'; {more} more' if more > 0 else ''}); emulator "
            f"lock timeouts during the run: {locks}. The emulator waits ~2 s on every lock conflict: retrying an "
            f"abort at once inside one call convoys; {CONTENTION_DOC} gives the retry pattern that gets through")


def contest_json(plugin: SystemPlugin, contest: Contest) -> dict[str, Any]:
    """The contest as saved: `setupHeader` (when the plug-in writes one), `setup`, `racers` and `followers`
    (`name`, `op`, and `firstOp` when the first attempt differs) and `facts`; every operation written by one
    `plugin.ops_to_json` call, so the header names them all."""
    callers = contest.callers
    firsts = [racer for racer in callers if racer.first_op is not None]
    ops = [*contest.setup, *(racer.op for racer in callers), *(racer.first_op for racer in firsts)]
    header, entries = plugin.ops_to_json(ops)
    setup, rest = entries[: len(contest.setup)], entries[len(contest.setup):]
    plain, first = rest[: len(callers)], dict(zip((r.name for r in firsts), rest[len(callers):], strict=True))

    def racer_json(racer: Racer, entry: Any) -> dict[str, Any]:
        out = {"name": racer.name, "op": entry}
        if racer.name in first:
            out["firstOp"] = first[racer.name]
        return out

    shown = [racer_json(racer, entry) for racer, entry in zip(callers, plain, strict=True)]
    out: dict[str, Any] = {"setupHeader": header} if header else {}
    out.update(setup=setup, racers=shown[: contest.width], followers=shown[contest.width:],
               facts=dict(contest.facts))
    return out


def contest_from_json(plugin: SystemPlugin, data: Mapping[str, Any], *, scenario: str | None = None) -> Contest:
    """The contest a saved file holds (`contest_json`), called `scenario` (default: the file's `scenario`, the
    run's qualified name, less its `<system>_` prefix); a malformed one raises KeyError, TypeError or
    ValueError."""
    header = data.get("setupHeader", {})

    def racers(key: str) -> list[Racer]:
        out = []
        for entry in data[key]:
            (op,) = plugin.ops_from_json(header, [entry["op"]])
            first = plugin.ops_from_json(header, [entry["firstOp"]])[0] if "firstOp" in entry else None
            out.append(Racer(str(entry["name"]), op, first_op=first))
        return out

    setup = plugin.ops_from_json(header, data["setup"])
    everyone = [*racers("racers"), *racers("followers")]
    clocks = [now for op in (*setup, *(r.op for r in everyone)) if (now := plugin.clock_of(op)) is not None]
    facts = data.get("facts", {})
    if not isinstance(facts, dict):
        raise ValueError("facts must be a JSON object")
    name = scenario if scenario is not None else str(data.get("scenario", "unknown")).removeprefix(f"{plugin.name}_")
    return Contest(name, setup, racers("racers"), followers=racers("followers"),
                   epoch=min(clocks, default=None), facts=facts)


def saved_format(data: Any, where: str) -> str:
    """The format of a saved race file; an old version is a `CounterexampleError` saying how to regenerate."""
    found = data.get("format") if isinstance(data, dict) else type(data).__name__
    if found in OLD_FORMATS:
        raise CounterexampleError(f"{where}: a saved race of format {found!r}, which this fencecheck no longer "
                                  f"reads (expected {' or '.join(FORMATS)}). {REGENERATE}")
    if found not in FORMATS:
        raise CounterexampleError(f"{where}: not a saved race (format {found!r}; expected "
                                  f"{' or '.join(FORMATS)}).")
    return found


def state_after_setup(plugin: SystemPlugin, data: Mapping[str, Any]) -> Any:
    """The model state after a saved contest's setup (what its history is checked from)."""
    return setup_state(plugin, plugin.ops_from_json(data.get("setupHeader", {}), data["setup"]))


def _racers_json(records: Sequence[RacerRecord]) -> list[dict[str, Any]]:
    return [
        {
            "caller": record.racer.name,
            "calls": [call.call_id for call in record.calls],
            "answers": [answer_label(call.outcome) for call in record.calls],
            "transactionAttempts": [call.transaction_attempts for call in record.calls],
            "aborts": [call.aborts for call in record.calls],
            "looks": [call.looks for call in record.calls],
        }
        for record in records
    ]


def result_document(result: ScenarioResult, run: ContestRun, *, ids_seed: int | None = None) -> dict[str, Any]:
    """The JSON saved per run: the result record, the system and implementation, the contest, each racer's
    calls and the full history (final documents included); `idsSeed` when the contest's ids came from one;
    `wireFaults` (`seed`: the fault mix's, or null; `kinds`: fault events per "kind Method") when its calls
    went through wire lanes."""
    out = result.to_json()
    out["system"] = run.plugin.name
    out["implementation"] = run.plugin.spec_of(run.implementation)
    if ids_seed is not None:
        out["idsSeed"] = ids_seed
    out.update(contest_json(run.plugin, run.contest))
    out["callerAttempts"] = _racers_json(run.racers)
    out["afterAttempts"] = _racers_json(run.followers)
    out["history"] = run.history.to_json()
    if run.wire_faults or run.wire_seed is not None:  # absent: a run without wire lanes, as before
        out["wireFaults"] = {"seed": run.wire_seed, "kinds": dict(run.wire_faults)}
    return out


def save_result(result: ScenarioResult, run: ContestRun, directory: Path, *, ids_seed: int | None = None) -> Path:
    """`<directory>/<system>_<scenario>-<repeat>.json` (the name is `result.scenario`, i.e. `run.name`)."""
    return write_json(directory / f"{result.scenario}-{result.repeat}.json",
                      result_document(result, run, ids_seed=ids_seed))


def save_counterexample(run: ContestRun, directory: Path) -> Path:
    """`<directory>/race-<system>_<scenario>-<shortid>.json`: the contest, history (final documents included),
    system, implementation and the verdict with its explanation; `recheck(path)` judges it again. The short id
    is a digest of contest and history, so one history always lands in one file."""
    contest = contest_json(run.plugin, run.contest)
    history = run.history.to_json()
    digest = hashlib.sha256(json.dumps([contest, history], sort_keys=True, default=str).encode()).hexdigest()
    data = {
        "format": COUNTEREXAMPLE_FORMAT,
        "scenario": run.name,
        "system": run.plugin.name,
        "implementation": run.plugin.spec_of(run.implementation),
        "verdict": run.verdict.status,
        "explanation": run.verdict.explain(),
        **contest,
        "history": history,
    }
    return write_json(directory / f"race-{run.name}-{digest[:10]}.json", data)


def load_saved(path: Path | str) -> tuple[SystemPlugin, History, Any]:
    """A saved contest (counterexample or result file): its plug-in, its history and the checker's initial
    state (the setup stepped through the model). An old or foreign format is a `CounterexampleError`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    saved_format(data, str(path))
    plugin = plugin_named(data["system"])
    return plugin, History.from_json(data["history"]), state_after_setup(plugin, data)


def recheck(path: Path | str, *, budget: int = DEFAULT_BUDGET) -> Verdict:
    """Judge a saved contest again (pure: its stored final documents are part of the history)."""
    plugin, history, initial = load_saved(path)
    return check(history, plugin=plugin, initial_state=initial, budget=budget)


# --- one contest, end to end --------------------------------------------------------------------------------


def execute_contest(
    db: Any,
    contest: Contest,
    *,
    plugin: SystemPlugin,
    implementation: Any = None,
    structural: Callable[[ContestRun], Sequence[Problem | str]] = lambda _run: (),
    promise: Callable[[ContestRun], Sequence[Problem | str]] = lambda _run: (),
    repeat: int = 0,
    ids_seed: int | None = None,
    artifacts_dir: Path | None = None,
    counterexamples_dir: Path | None = None,
    emulator: Any = None,
    project_id: str | None = None,
    budget: int = DEFAULT_BUDGET,
    new_log: Callable[[int, int], Any] = fresh_log,
    wire_mix: FaultMix | None = None,
) -> tuple[ScenarioResult, ContestRun]:
    """Run and judge `contest`; `structural(run)` and `promise(run)` add the caller's and the scenario's
    findings (the plug-in's own `contest_problems` are the run's already); `ids_seed` is saved with the
    result. Saves the result in `artifacts_dir` (None: not saved, e.g. for a run against a known-bad
    implementation, which is no evidence about the reference) and, when the verdict is not ok, the history
    in `counterexamples_dir`. `wire_mix`: the racers' calls go through the wire under this fault mix, derived
    for this contest and repeat (`FaultMix.derive`: its seed is saved with the result)."""
    mix = None if wire_mix is None else wire_mix.derive(f"{qualified_name(plugin, contest.scenario)}-{repeat}")
    run, lock_timeouts = _counting_lock_timeouts(emulator, lambda: run_contest(
        db, contest, plugin=plugin, implementation=implementation, budget=budget, new_log=new_log, wire_mix=mix))
    counterexample = None
    if not run.verdict.ok and counterexamples_dir is not None:
        counterexample = str(save_counterexample(run, counterexamples_dir))
    result = contest_result(
        run,
        repeat=repeat,
        problems=structural(run),
        promise_problems=promise(run),
        counterexample=counterexample,
        project_id=project_id,
        lock_timeouts=lock_timeouts,
    )
    if result.contention is not None and result.verdict != "illegal":
        if emulator is not None and project_id is not None:
            result = attrs.evolve(result, **_judge_lower(
                db, contest, plugin=plugin, implementation=implementation, structural=structural, promise=promise,
                emulator=emulator, project_id=project_id, budget=budget, wire_mix=mix,
                counterexamples_dir=counterexamples_dir))
    if artifacts_dir is not None:
        save_result(result, run, artifacts_dir, ids_seed=ids_seed)
    return result, run


def _counting_lock_timeouts(emulator: Any, race: Callable[[], ContestRun]) -> tuple[ContestRun, int | None]:
    """`race()`'s run and the emulator's lock timeouts during it (None: no emulator handle, or its log unread)."""
    before = emulator.lock_timeout_count() if emulator is not None else None
    run = race()
    after = emulator.lock_timeout_count() if emulator is not None else None
    return run, None if before is None or after is None else after - before


LOWER_DEGREES = (12, 8, 4)  # a contended contest is raced again at each below its width, until one is judged


def _judge_lower(db: Any, contest: Contest, *, plugin: SystemPlugin, implementation: Any,
                 structural: Callable[[ContestRun], Sequence[str]], promise: Callable[[ContestRun], Sequence[str]],
                 emulator: Any, project_id: str, budget: int, wire_mix: FaultMix | None,
                 counterexamples_dir: Path | None) -> dict[str, Any]:
    """The highest of `LOWER_DEGREES` below the contest's width at which its first racers' run can be judged
    (enough definite answers), as `ScenarioResult` fields: its width, verdict and findings. Each run starts
    from an empty project (`emulator.reset`). {} when none could be judged."""
    for width in (w for w in LOWER_DEGREES if w < contest.width):
        emulator.reset(project_id)
        run, lock_timeouts = _counting_lock_timeouts(emulator, functools.partial(
            run_contest, db, contest.narrowed(width), plugin=plugin, implementation=implementation, budget=budget,
            wire_mix=wire_mix))
        narrowed = contest_result(run, problems=structural(run), promise_problems=promise(run),
                                  lock_timeouts=lock_timeouts)
        if narrowed.contention is not None:
            continue
        if not run.verdict.ok and counterexamples_dir is not None:
            save_counterexample(run, counterexamples_dir)
        return {"judged_width": width, "judged_verdict": narrowed.verdict,
                "judged_problems": (*narrowed.problems, *narrowed.promise_problems)}  # Problems, of their kinds
    return {}


__all__ = [
    "COUNTEREXAMPLE_FORMAT",
    "FORMATS",
    "LOWER_DEGREES",
    "OLD_FORMATS",
    "RESULT_FORMAT",
    "ScenarioResult",
    "contest_from_json",
    "contest_json",
    "contest_result",
    "execute_contest",
    "load_saved",
    "recheck",
    "result_document",
    "save_counterexample",
    "save_result",
    "saved_format",
    "state_after_setup",
    "write_json",
]
