"""The known-bad catalogue through the lockstep state machine: every variant must be caught.

For each variant of `known_bad.journal.VARIANTS` (parametrized by name), `JournalMachine` runs with
`system = variant.build()` under the selected profile (`ci` by default). The test passes when the run
fails with a `LockstepMismatch` (a harness crash, or a variant that crashes instead of misbehaving, is an
error), the shrunk program has at most `MAX_SHRUNK_STEPS` operations, and its counterexample file is a true
reproduction: replayed against the variant it fails, replayed against the real reference it passes.

Shrinking happens in two stages. Hypothesis shrinks the machine's choices for at most `SHRINK_SECONDS`
(its own limit is 300 s, most of it spent polishing ids on the emulator); then `minimize` removes
operations from the recorded journal program itself (delta debugging over plain replays, blind to the
machine's rules, bundles and preconditions) until no single operation can go. The minimized program is
written as its own counterexample file (Hypothesis's is kept too) and is the one reported.

Each run writes `artifacts/known_bad/<name>.json` (fencecheck.report.artifacts.write_known_bad_result):
`secondsToDetection` is the wall time from the start of the machine run to its first lockstep mismatch
(before shrinking); the total including both shrinking stages is printed and recorded as junit properties.

The example database is not used here (`database=None`): a warm database would replay last run's
counterexample at once and hide a loss of reach of the machine's rules. Everything else (examples, steps,
phases, derandomization) is the profile's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

import pytest
from hypothesis import settings
from hypothesis.internal.conjecture import engine as conjecture_engine

from fencecheck import hypothesis_profiles
from fencecheck.counterexamples import write_counterexample
from fencecheck.lockstep import Lockstep, LockstepMismatch, ReferenceAPI, replay
from fencecheck.report.artifacts import write_known_bad_result
from known_bad.journal import VARIANTS, Variant, variant
from model.journal import Operation
from stateful_tests.journal_machine import COUNTEREXAMPLES, T0, JournalMachine, run_machine

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"
MAX_SHRUNK_STEPS = 12
# Hypothesis has no setting for the time spent shrinking: its engine stops MAX_SHRINKING_SECONDS (300 s)
# after it starts and reports the smallest failing example so far (with a warning that says "five minutes"
# whatever the budget). Here it gets SHRINK_SECONDS; `minimize` (at most MINIMIZE_SECONDS) finishes the job.
SHRINK_SECONDS = float(os.environ.get("FENCECHECK_KNOWN_BAD_SHRINK_SECONDS", "10"))
MINIMIZE_SECONDS = float(os.environ.get("FENCECHECK_KNOWN_BAD_MINIMIZE_SECONDS", "60"))


@contextlib.contextmanager
def shrinking_budget(seconds: float) -> Iterator[None]:
    with mock.patch.object(conjecture_engine, "MAX_SHRINKING_SECONDS", seconds):
        yield


def _crashed(mismatch: LockstepMismatch) -> bool:
    """The system raised instead of answering (as opposed to answering or storing the wrong thing)."""
    return "the reference raised" in str(mismatch).split("model state after")[0]


def failing_prefix(ops: Sequence[Operation], api: ReferenceAPI, emulator: Any, project_id: str, db: Any):
    """Replay `ops` on the emptied project against `api` as `replay` does: (the operations up to and including
    the first mismatch, the mismatch), or None when every step agrees or the system crashed."""
    emulator.reset(project_id)
    lockstep = Lockstep(db, system=api)
    try:
        lockstep.check_documents()
        for op in ops:
            lockstep.run(op)
        lockstep.check_project()  # as the machine's teardown: a write outside the steps' own keys fails too
    except LockstepMismatch as mismatch:
        return None if _crashed(mismatch) else (list(lockstep.ops), mismatch)
    finally:
        emulator.reset(project_id)
    return None


def minimize(ops: Sequence[Operation], fails: Callable[[list], list | None], deadline: float) -> list:
    """Delta debugging over a failing program: drop chunks of operations (halves, quarters, ... single ones)
    while the rest still fails (`fails(candidate)` returns the failing prefix, or None). The result is
    1-minimal (no single operation can be removed) unless `deadline` (time.monotonic) passed first."""
    ops = list(ops)
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


def machine_for(v: Variant, api: ReferenceAPI) -> type[JournalMachine]:
    """`JournalMachine` against the variant, timing its first mismatch; it records no transition coverage
    (artifacts/coverage is about the reference)."""

    class KnownBad(JournalMachine):
        system = api
        first_failure_at: ClassVar[float | None] = None
        examples: ClassVar[int] = 0
        examples_to_detection: ClassVar[int | None] = None

        def __init__(self) -> None:
            super().__init__()
            type(self).examples += 1
            self.lockstep = Lockstep(self.db, system=self.system, epoch=T0)  # as the parent's, without coverage

        def _run(self, op, **kwargs):
            try:
                return super()._run(op, **kwargs)
            except LockstepMismatch:
                cls = type(self)
                if cls.first_failure_at is None:
                    cls.first_failure_at, cls.examples_to_detection = time.monotonic(), cls.examples
                raise

    KnownBad.__name__ = KnownBad.__qualname__ = "KnownBad" + "".join(part.title() for part in v.name.split("-"))
    return KnownBad


def _load_counterexample(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"counterexample_{path.stem.replace('-', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_reproduction(path: Path, api: ReferenceAPI, emulator: Any, project_id: str, db: Any) -> str | None:
    """None when the file replays as a failure against the variant and passes against the reference."""
    module = _load_counterexample(path)
    if module.SYSTEM != api:
        return f"{path.name} names {getattr(module.SYSTEM, 'module', None)!r}, not the variant"
    try:
        emulator.reset(project_id)
        try:
            module.test_replay(db)
        except LockstepMismatch:
            pass
        else:
            return f"{path.name} passes against the variant: not a reproduction"
        emulator.reset(project_id)
        try:
            replay(db, module.OPS)
        except LockstepMismatch as error:
            return f"{path.name} fails against the real reference too:\n{error}"
    finally:
        emulator.reset(project_id)
    return None


@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_known_bad_variant_is_caught(name, emulator, project_id, firestore_db, request, record_property):
    v = variant(name)
    prop = request.node.nodeid

    def record(status: str, *, seconds=None, steps=None, counterexample=None) -> None:
        write_known_bad_result(
            ARTIFACTS, name=name, rule=v.rule, status=status, seconds_to_detection=seconds, shrunk_steps=steps,
            counterexample=counterexample, failing_property=prop,
        )

    try:
        api = v.build()
    except Exception:
        record("error")
        raise
    machine = machine_for(v, api)
    run_settings = settings(hypothesis_profiles.machine_settings(), database=None)
    started = time.monotonic()
    try:
        with shrinking_budget(SHRINK_SECONDS):
            run_machine(machine, settings=run_settings, emulator=emulator, project_id=project_id, db=firestore_db)
    except LockstepMismatch as error:
        failure: LockstepMismatch | None = error
    except AssertionError as error:
        if "reachable transitions never exercised" not in str(error):  # full-coverage profiles only
            record("error")
            raise
        failure = None
    except Exception:
        record("error")  # the harness crashed (or Hypothesis found the failure flaky): not a detection
        raise
    else:
        failure = None
    total = time.monotonic() - started
    if failure is None:
        record("survived")
        pytest.fail(
            f"known-bad variant {name} SURVIVED {machine.examples} examples ({total:.1f} s): rule {v.rule} went "
            f"unchecked by the lockstep machine ({v.description})",
            pytrace=False,
        )
    if _crashed(failure):
        record("error")
        pytest.fail(f"known-bad variant {name} crashed instead of misbehaving:\n{failure}", pytrace=False)

    detection = (machine.first_failure_at or time.monotonic()) - started
    programs = [program for program in (machine.final_programs or [machine.last_program]) if program]
    assert programs, f"{name}: Hypothesis reported a failure but no program was recorded"
    shrunk = min(programs, key=len)

    def fails(candidate: list) -> list | None:
        found = failing_prefix(candidate, api, emulator, project_id, firestore_db)
        return None if found is None else found[0]

    minimizing = time.monotonic()
    found = failing_prefix(shrunk, api, emulator, project_id, firestore_db)
    assert found is not None, f"{name}: Hypothesis's shrunk program does not fail on replay:\n{failure}"
    program = minimize(found[0], fails, minimizing + MINIMIZE_SECONDS)
    replayed = failing_prefix(program, api, emulator, project_id, firestore_db)
    assert replayed is not None and replayed[0] == program, f"{name}: the minimized program does not fail"
    path = write_counterexample(
        COUNTEREXAMPLES,
        program,
        machine=machine.__name__,
        failure=f"(known-bad variant {name}: Hypothesis shrank the program to {len(shrunk)} operations, delta "
        f"debugging to {len(program)})\nLockstepMismatch: {replayed[1]}",
        system_module=api.module,
    )
    minimized_in, total = time.monotonic() - minimizing, time.monotonic() - started
    relative = path.relative_to(ROOT).as_posix()
    record("caught", seconds=round(detection, 2), steps=len(program), counterexample=relative)
    for key, value in (
        ("secondsToDetection", round(detection, 2)),
        ("secondsTotal", round(total, 2)),
        ("examplesToDetection", machine.examples_to_detection),
        ("hypothesisShrunkSteps", len(shrunk)),
        ("shrunkSteps", len(program)),
    ):
        record_property(key, value)
    print(
        f"\n{name}: caught after {detection:.1f} s ({machine.examples_to_detection} examples); Hypothesis shrank "
        f"to {len(shrunk)} steps ({machine.examples} examples), minimized to {len(program)} in {minimized_in:.1f} s; "
        f"{total:.1f} s in all; {relative}"
    )

    assert len(program) <= MAX_SHRUNK_STEPS, (
        f"{name}: the shrunk program has {len(program)} operations (at most {MAX_SHRUNK_STEPS}):\n{replayed[1]}"
    )
    problem = _check_reproduction(path, api, emulator, project_id, firestore_db)
    assert problem is None, problem
