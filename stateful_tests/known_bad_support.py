"""Catching a known-bad variant with a lockstep state machine, for any system (every registered system's
catalogue, as its machine module's `MachineCatalogue` says: stateful_tests/test_known_bad.py).

`catch(target, ...)` runs the target's machine (a subclass of the system's machine whose `system` is the
variant) under the target's settings, in up to ROUNDS rounds, and passes when a run fails with one of the
target's `detections` (a `LockstepMismatch`; for the lantern also a stored-invariant failure) and its
counterexample file is a true reproduction: replayed against the variant it fails, replayed against the real
reference it passes. A harness crash, or a variant that crashes instead of misbehaving (a step whose system
raised something other than its error type: the mismatch's structured kind is crash, or an exec:
implementation's hang or broken protocol), is an error or a timeout (the one rule: fencecheck.checker.known_bad_verdict,
judging the detections' and the replays' structured problems). A shrunk
program longer than MAX_SHRUNK_STEPS operations is a warning (recorded with the result, and a pytest warning),
not a failure: how far shrinking gets in its capped time depends on the machine's load.

Why rounds: a variant is slow to catch by chance, not by budget. Hypothesis's draws cluster (in 150 CI examples
one malformed-record class came up in 2 examples, another in 30), and `preseeded-next-audit-ignored` was first
caught after 3, 7, 67 and 120 examples under four seeds, so at the profile's 150 it could survive a CI run
by luck alone. A larger `max_examples` is no cure: Hypothesis keeps examples small for longer the larger the
budget (derandomized, `overflow-not-checked` needed 221 examples of 450 against 55 of 150). So a variant
that survives a round runs again, with the profile's settings unchanged, as another machine class (its name
ends in `Round<n>`): another fixed seed (the catalogues run derandomized, `catalogue_settings`). A variant
caught in round 1 costs nothing more.

Shrinking happens in two stages. Hypothesis shrinks the machine's choices for at most SHRINK_SECONDS (its own
limit is 300 s, most of it spent polishing ids on the emulator); then `minimize` removes operations from the
recorded program itself (delta debugging over plain lockstep replays, blind to the machine's rules, bundles
and preconditions) until no single operation can go. The minimized program is written as its own
counterexample file (Hypothesis's is kept too) and is the one reported. A failure only the machine's own
invariant check sees (stored documents equal to the model's, yet breaking an invariant: the model would break
its own invariants) does not fail a plain replay, so it fails the test with that message.

Each run writes `artifacts/known_bad/<result name>.json` once, after every check
(fencecheck.report.artifacts.write_known_bad_result):
`secondsToDetection` is the wall time from the start of the machine run to its first detection (before
shrinking); the total including both shrinking stages is printed and recorded as junit properties.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.internal.conjecture import engine as conjecture_engine

from fencecheck.checker.known_bad_verdict import KnownBadVerdict, bound_warning, judge, run_verdict
from fencecheck.errors import CheckFailed
from fencecheck.plugin.records import SystemPlugin, load_part
from fencecheck.problems import Problem, ProblemKind, harness
from fencecheck.report.artifacts import known_bad_recorder
from fencecheck.runners.counterexamples import write_counterexample
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch, needs_wire, replay
from fencecheck.suites import ENV_ARTIFACTS, artifacts_root
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.wire.session import open_session
from stateful_tests.machine_runner import COUNTEREXAMPLES, ROOT, run_machine

MAX_SHRUNK_STEPS = 12
ROUNDS = 3  # machine runs (each of the profile's examples) before a variant counts as surviving
# Hypothesis has no setting for the time spent shrinking: its engine stops MAX_SHRINKING_SECONDS (300 s)
# after it starts and reports the smallest failing example so far (with a warning that says "five minutes"
# whatever the budget). Here it gets SHRINK_SECONDS; `minimize` (at most MINIMIZE_SECONDS) finishes the job.
# Two seconds: with 10, Hypothesis took its whole budget for most variants (caught in under a second, then ten
# seconds of polishing ids on the emulator), and the journal catalogue's programs came out as short with 2
# (2-5 operations each, same run): `minimize` starts with the failing partition's slice (see there).
SHRINK_SECONDS = float(os.environ.get("FENCECHECK_KNOWN_BAD_SHRINK_SECONDS", "2"))
MINIMIZE_SECONDS = float(os.environ.get("FENCECHECK_KNOWN_BAD_MINIMIZE_SECONDS", "60"))
# Where a machine finds a failure: a lockstep step (both machines) and, where the machine has one, its check
# of the invariants on the stored documents. The first failure's time is the detection time.
CHECKING_METHODS = ("_run", "_check_invariants")


@contextlib.contextmanager
def shrinking_budget(seconds: float) -> Iterator[None]:
    with mock.patch.object(conjecture_engine, "MAX_SHRINKING_SECONDS", seconds):
        yield


def crashed(mismatch: LockstepMismatch) -> bool:
    """The system raised instead of answering (as opposed to answering or storing the wrong thing): the
    mismatch's structured kind is not the contract's."""
    return mismatch.kind is not ProblemKind.CONTRACT


def failing_prefix(ops: Sequence[Any], api: Any, emulator: Any, project_id: str, db: Any, *,
                   plugin: SystemPlugin = JOURNAL):
    """Replay `ops` on the emptied project against `api` as `replay` does: (the operations up to and including
    the first mismatch, the mismatch), or None when every step agrees or the system crashed."""
    emulator.reset(project_id)
    with contextlib.ExitStack() as stack:
        wire = None
        if needs_wire(plugin, ops, db):  # lost responses and rejected commits on a wire proxy of its own
            wire = stack.enter_context(open_session(emulator.host, project_id))
        lockstep = Lockstep(db, plugin=plugin, system=api, wire=wire)
        try:
            lockstep.check_documents()
            for op in ops:
                lockstep.run(op)
            lockstep.check_project()  # as the machine's teardown: a write outside the steps' own keys fails too
        except LockstepMismatch as mismatch:
            return None if crashed(mismatch) else (list(lockstep.ops), mismatch)
        finally:
            emulator.reset(project_id)
    return None


def minimize(ops: Sequence[Any], fails: Callable[[list], list | None], deadline: float, *,
             partition_of: Callable[[Any], str] | None = None) -> list:
    """Delta debugging over a failing program: drop chunks of operations (halves, quarters, ... single ones)
    while the rest still fails (`fails(candidate)` returns the failing prefix, or None). The result is
    1-minimal (no single operation can be removed) unless `deadline` (time.monotonic) passed first.

    With `partition_of` (the plug-in's), the first candidate is the program's slice on the partition of its
    last (failing) operation: no operation reaches across partitions, so that slice usually fails alone, and
    one replay does what halving would take many for (a journal program touches a handful of command keys)."""
    ops = list(ops)
    if partition_of is not None and ops and time.monotonic() < deadline:
        failing_partition = partition_of(ops[-1])
        sliced = [op for op in ops if partition_of(op) == failing_partition]
        if len(sliced) < len(ops):
            ops = fails(sliced) or ops
    chunk = max(1, len(ops) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        start, removed = 0, False
        while start < len(ops) and time.monotonic() < deadline:
            failing = fails(ops[:start] + ops[start + chunk:])
            if failing is not None:
                ops, removed = failing, True
            else:
                start += chunk
        if not removed:
            chunk //= 2
    return ops


def _timed(method: Callable, detections: tuple[type[BaseException], ...]) -> Callable:
    """`method`, recording on its class the time (and example) of the first detection it raises."""

    @functools.wraps(method)
    def timed(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except detections:
            cls = type(self)
            if cls.first_failure_at is None:
                cls.first_failure_at, cls.examples_to_detection = time.monotonic(), cls.examples
            raise

    return timed


def catalogue_settings(machine: settings) -> settings:
    """A catalogue's settings: its system machine's (`machine`), derandomized, without the example database.
    Whether a variant is caught within the budget, and how fast, is then the same on every machine and every
    run of a commit: a variant the machine catches only by luck survives here every time instead of making a CI
    run flaky, and the gate's time does not hang on a lucky draw (random seeds put one journal variant at 38 s
    in one gate and 215 s in the next). The rounds are other fixed seeds; the machines on the references keep
    drawing new ones."""
    return settings(machine, database=None, derandomize=True)


def known_bad_machine(base: type, name: str, api: Any, *, prefix: str = "KnownBad",
                      detections: tuple[type[BaseException], ...] = (LockstepMismatch,), round_: int = 1) -> type:
    """`base` (a lockstep machine) against the variant `api`, timing its first detection; it records no
    transition coverage (artifacts/coverage is about the reference). Named `<prefix><Name>` (the variant's
    name in title case; `Round<n>` appended after round 1: Hypothesis derandomizes by the class, so the name
    gives each round its own programs), which names its counterexample files."""

    class KnownBad(base):
        system = api
        first_failure_at: ClassVar[float | None] = None
        examples: ClassVar[int] = 0
        examples_to_detection: ClassVar[int | None] = None

        def __init__(self) -> None:
            super().__init__()
            type(self).examples += 1
            # the parent's, without coverage (and every read-back done before the next step, as it always was);
            # the same wire session, so the wire rules run against the variant too
            self.lockstep = Lockstep(self.db, plugin=self.plugin, system=self.system, epoch=self.lockstep.epoch,
                                     wire=self.lockstep.wire)

    for method in CHECKING_METHODS:
        if hasattr(base, method):
            setattr(KnownBad, method, _timed(getattr(base, method), detections))
    suffix = f"Round{round_}" if round_ > 1 else ""
    KnownBad.__name__ = KnownBad.__qualname__ = (
        prefix + "".join(part.title() for part in re.split("[-_]", name)) + suffix
    )
    return KnownBad


def load_counterexample(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"counterexample_{path.stem.replace('-', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reproduction_checks(path: Path, api: Any, emulator: Any, project_id: str, db: Any, *,
                        plugin: SystemPlugin = JOURNAL,
                        ) -> tuple[tuple[Problem, ...] | None, tuple[Problem, ...] | None, str | None]:
    """(what the file's replay against the variant found, what its program found against the reference, what
    went wrong or None); None: not replayed. Each found problem is the mismatch's, of its kind."""
    module = load_counterexample(path)
    if module.SYSTEM != api:
        return None, None, f"{path.name} names {plugin.spec_of(module.SYSTEM)!r}, not the variant"
    try:
        emulator.reset(project_id)
        try:
            module.test_replay(db)
        except CheckFailed as mismatch:
            on_variant = mismatch.problems
        else:
            return (), None, f"{path.name} passes against the variant: not a reproduction"
        emulator.reset(project_id)
        try:
            replay(db, module.OPS, plugin=plugin)
        except CheckFailed as error:
            return on_variant, error.problems, f"{path.name} fails against the real reference too:\n{error}"
    finally:
        emulator.reset(project_id)
    return on_variant, (), None


def _run_round(machine: type, target: Target, *, emulator: Any, project_id: str, db: Any) -> BaseException | None:
    """One run of `machine` under the target's settings: the detection it failed with, or None. Anything else
    it raises (the harness crashed, Hypothesis found the failure flaky) propagates: an error, not a detection."""
    try:
        with shrinking_budget(SHRINK_SECONDS):
            run_machine(machine, settings=target.settings, emulator=emulator, project_id=project_id, db=db)
    except target.detections as error:
        return error
    except AssertionError as error:
        if "reachable transitions never exercised" not in str(error):  # full-coverage profiles only
            raise
    return None


# A run that is no evidence about anything (the runners' own tests): a few examples, no shrinking.
TINY = settings(max_examples=3, stateful_step_count=6, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck), phases=[Phase.generate])


@contextlib.contextmanager
def outside_the_artifacts(directory: Path) -> Iterator[None]:
    """Known-bad results, machine summaries and counterexamples go to `directory`, not the report's."""
    with mock.patch.dict(os.environ, {ENV_ARTIFACTS: str(directory)}), \
            mock.patch(f"{__name__}.COUNTEREXAMPLES", directory), \
            mock.patch("stateful_tests.machine_runner.COUNTEREXAMPLES", directory):
        yield


@attrs.frozen
class Target:
    """One known-bad variant to catch: how it is named and built, and the machine that must catch it."""

    name: str  # the variant's name, in messages and the machine's class name
    result_name: str  # artifacts/known_bad/<result_name>.json
    rule: str
    description: str
    build: Callable[[], Any]  # the variant's implementation
    machine: type  # the system's lockstep machine (its `plugin` says which system)
    settings: settings  # the profile's (database=None: see the catalogue tests)
    machine_prefix: str = "KnownBad"
    detections: tuple[type[BaseException], ...] = (LockstepMismatch,)


@attrs.frozen
class MachineCatalogue:
    """How a system's lockstep machine runs that system's known-bad catalogue (stateful_tests/test_known_bad.py):
    what its plug-in's `SuiteParts.machine_known_bad` names, declared beside the machine.

    `run` and `out_of_reach` and `concurrent` split the catalogue (`known_bad_variants`) between them: a test keeps
    them in step with it, so a new variant is either run by the machine or explained."""

    machine: type  # the system's lockstep machine (its `plugin` says which system)
    # the machine's settings under the selected profile (catalogue_settings wraps them)
    machine_settings: Callable[[], settings]
    run: tuple[str, ...]  # the variants the machine must catch
    # the sequential variants it cannot show, each with why (what catches it instead)
    out_of_reach: Mapping[str, str] = attrs.field(factory=dict)
    concurrent: tuple[str, ...] = ()  # out of a sequential machine's reach by definition: the race suites' to catch
    result_prefix: str = ""  # artifacts/known_bad/<result_prefix><name>.json
    machine_prefix: str = "KnownBad"
    detections: tuple[type[BaseException], ...] = (LockstepMismatch,)
    # () -> an implementation whose calls raise NameError: a crash must be an error, never a catch (None: none)
    name_error: Callable[[], Any] | None = None
    name_error_settings: settings = TINY

    def target(self, plugin: SystemPlugin, name: str, *, settings_: settings | None = None) -> Target:
        """The `Target` of variant `name` of `plugin`'s catalogue (its spec: `known_bad_variants`), with the rule and
        description its catalogue module (`SuiteParts.catalogue`) gives it."""
        spec = plugin.known_bad_variants()[name]
        v = load_part(plugin.suites.catalogue).variant(name) if plugin.suites.catalogue else None
        return Target(name=name, result_name=f"{self.result_prefix}{name}", rule=getattr(v, "rule", "none"),
                      description=getattr(v, "description", spec), build=lambda: plugin.resolve(spec),
                      machine=self.machine, settings=settings_ or catalogue_settings(self.machine_settings()),
                      machine_prefix=self.machine_prefix, detections=self.detections)


def catch(target: Target, *, emulator: Any, project_id: str, db: Any, failing_property: str,
          record_property: Callable[[str, Any], None]) -> None:
    """Run the target's machine against the variant; pass when it is caught with a true reproduction (see the
    module docstring), fail otherwise. Writes the known-bad result once, after every check."""
    verdict, crash = judge_target(target, emulator=emulator, project_id=project_id, db=db,
                                  failing_property=failing_property, record_property=record_property)
    for warning in verdict.warnings:
        warnings.warn(f"known-bad variant {target.name}: {warning}", KnownBadWarning, stacklevel=2)
    if crash is not None:
        raise crash
    if not verdict.caught:
        pytest.fail(f"known-bad variant {target.name} {verdict.status.upper()}: {verdict.reason}", pytrace=False)


class KnownBadWarning(UserWarning):
    """A bound that did not hold but decides nothing (a shrunk program longer than expected)."""


def judge_target(target: Target, *, emulator: Any, project_id: str, db: Any, failing_property: str,
                 record_property: Callable[[str, Any], None]) -> tuple[KnownBadVerdict, BaseException | None]:
    """Run the target's machine against the variant and judge it (fencecheck.checker.known_bad_verdict); writes the
    known-bad result once, from the verdict. Returns the verdict and the exception when the harness (or the
    variant, outside a lockstep step) crashed, which the caller re-raises after the result is written."""
    record = known_bad_recorder(artifacts_root(ROOT), name=target.result_name, rule=target.rule,
                                failing_property=failing_property)
    fields: dict[str, Any] = {}
    crash: BaseException | None = None
    try:
        verdict = _judge(target, fields, emulator=emulator, project_id=project_id, db=db,
                         record_property=record_property)
    except Exception as error:
        verdict, crash = judge([harness(f"the harness crashed: {type(error).__name__}: {error}")]), error
    found = f"{failing_property}: {verdict.reason.splitlines()[0]}" if verdict.caught else None
    record(verdict.status, found=found, warnings=verdict.warnings, **fields)
    return verdict, crash


def _problems_of(failure: BaseException) -> tuple[Problem, ...]:
    """A detection's structured problems (a LockstepMismatch's, an invariant check's ContractFailure); a
    detection that carries none is the harness's failure, not evidence."""
    if isinstance(failure, CheckFailed):
        return failure.problems
    return (harness(f"a detection without a structured finding: {type(failure).__name__}: {failure}"),)


def _judge(target: Target, fields: dict[str, Any], *, emulator: Any, project_id: str, db: Any,
           record_property: Callable[[str, Any], None]) -> KnownBadVerdict:
    name = target.name
    plugin: SystemPlugin = target.machine.plugin
    api = target.build()
    started = time.monotonic()
    failure: BaseException | None = None
    earlier_examples = 0  # run in the rounds before this one
    for round_ in range(1, ROUNDS + 1):
        machine = known_bad_machine(target.machine, name, api, prefix=target.machine_prefix,
                                    detections=target.detections, round_=round_)
        failure = _run_round(machine, target, emulator=emulator, project_id=project_id, db=db)
        if failure is not None:
            break
        earlier_examples += machine.examples
    total = time.monotonic() - started
    if failure is None:
        return attrs.evolve(
            judge([]),
            reason=f"{earlier_examples} examples in {ROUNDS} rounds ({total:.1f} s): rule {target.rule} went "
            f"unchecked by the lockstep machine ({target.description})",
        )
    detection = (machine.first_failure_at or time.monotonic()) - started
    fields["seconds"] = round(detection, 2)
    found = _problems_of(failure)
    early = run_verdict(found)
    if early is not None:  # a crash, a hang, a broken process protocol: nothing to replay
        return early

    examples_to_detection = earlier_examples + (machine.examples_to_detection or machine.examples)
    programs = [program for program in (machine.final_programs or [machine.last_program]) if program]
    if not programs:
        return judge(found, reproduction="Hypothesis reported a failure but no program was recorded")
    shrunk = min(programs, key=len)

    def fails(candidate: list) -> list | None:
        found = failing_prefix(candidate, api, emulator, project_id, db, plugin=plugin)
        return None if found is None else found[0]

    minimizing = time.monotonic()
    failing = failing_prefix(shrunk, api, emulator, project_id, db, plugin=plugin)
    if failing is None:
        return judge(found, reproduction=f"Hypothesis's shrunk program of {len(shrunk)} operations, replayed in "
                                         f"lockstep")
    program = minimize(failing[0], fails, minimizing + MINIMIZE_SECONDS, partition_of=plugin.partition_of)
    replayed = failing_prefix(program, api, emulator, project_id, db, plugin=plugin)
    if replayed is None or replayed[0] != program:
        return judge(found, reproduction="the minimized program")
    path = write_counterexample(
        COUNTEREXAMPLES,
        program,
        machine=machine.__name__,
        failure=f"(known-bad variant {name}: Hypothesis shrank the program to {len(shrunk)} operations, delta "
        f"debugging to {len(program)})\nLockstepMismatch: {replayed[1]}",
        system_module=plugin.spec_of(api),
        plugin=plugin,
    )
    minimized_in, total = time.monotonic() - minimizing, time.monotonic() - started
    relative = path.relative_to(ROOT).as_posix()
    fields.update(steps=len(program), counterexample=relative)
    for key, value in (
        ("secondsToDetection", round(detection, 2)),
        ("secondsTotal", round(total, 2)),
        ("examplesToDetection", examples_to_detection),
        ("roundOfDetection", round_),
        ("hypothesisShrunkSteps", len(shrunk)),
        ("shrunkSteps", len(program)),
    ):
        record_property(key, value)
    print(
        f"\n{name}: caught after {detection:.1f} s ({examples_to_detection} examples, round {round_}); Hypothesis "
        f"shrank to {len(shrunk)} steps ({machine.examples} examples), minimized to {len(program)} in "
        f"{minimized_in:.1f} s; "
        f"{total:.1f} s in all; {relative}"
    )
    on_variant, on_reference, problem = reproduction_checks(path, api, emulator, project_id, db, plugin=plugin)
    return judge(
        replayed[1].problems,
        replay=on_variant,
        reference=on_reference,
        reproduction=problem or relative,
        # Delta debugging stops at MINIMIZE_SECONDS: how small the program got depends on the machine's load.
        warnings=bound_warning("the shrunk program's length", len(program), MAX_SHRUNK_STEPS),
    )
