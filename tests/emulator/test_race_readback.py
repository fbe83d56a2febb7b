"""The contest runner (the journal's races) and a parallel program run read back the whole project after the
race: a write outside the contested key (here `strays/x`, from the reference plus one extra write) fails the
run, naming the path; a parallel run whose branch calls mostly got no definite answer is judged `contention`,
never ok."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest

import reference
from fencecheck.parallel import CONTENDED, BranchCall, CaseResult, ParallelProgram, run_once
from fencecheck.parallel.execute import BROKEN, CONTENTION, OK
from fencecheck.problems import ProblemKind, contract
from fencecheck.runners.contest import Ids, run_contest
from fencecheck.runners.contest_results import contest_result
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE, ReferenceAPI
from model.journal import Acquire, CommandRef, Register
from reference import CommandJournalError
from tests.systems.journal.races import BY_NAME

pytestmark = pytest.mark.emulator

T0 = datetime(2026, 1, 1, tzinfo=UTC)
X = CommandRef("test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000",
               "create_checkout_session", 1, '{"quantity":1}')
HOLDERS = ("0000000a-1ea5-4000-a000-000000000000", "0000000b-1ea5-4000-a000-000000000000")
STRAY = "strays/x"

JournalProgram = functools.partial(ParallelProgram, system="journal")


def _acquire_then(extra) -> ReferenceAPI:
    """The reference, except that every acquire also runs `extra(db)` once the reference answered (or
    instead of answering, when `extra` raises)."""

    def acquire(*, db: Any, **kwargs: Any) -> Any:
        output = reference.acquire_commerce_command_lease(db=db, **kwargs)
        extra(db)
        return output

    return attrs.evolve(REFERENCE, acquire=acquire, module=None)


def _stray_write(db: Any) -> None:
    db.document(STRAY).set({"by": "acquire"})


def _unavailable(_db: Any) -> None:
    raise CommandJournalError("journal_unavailable")


def _two_way_race():
    plan = BY_NAME["distinct_holder_first_acquire"].plan(Ids(7))
    return attrs.evolve(plan, callers=plan.callers[:2]).contest()


def _program() -> ParallelProgram:
    at = T0 + timedelta(seconds=5)
    return JournalProgram((Register(X, T0),), tuple((BranchCall(Acquire(X, holder, at)),) for holder in HOLDERS))


def test_a_write_outside_the_raced_key_fails_the_journal_race(firestore_db):
    run = run_contest(firestore_db, _two_way_race(), plugin=JOURNAL, implementation=_acquire_then(_stray_write))
    assert run.verdict.ok  # the answers and the key are the model's
    assert contract(f"{STRAY}: stored outside every command key") in run.problems, run.problems


def test_the_reference_race_has_nothing_outside_its_key(firestore_db):
    run = run_contest(firestore_db, _two_way_race(), plugin=JOURNAL)
    assert run.verdict.ok and run.problems == ()


def test_the_journal_plugins_structural_invariants_judge_a_contest(firestore_db):
    """What the checker cannot know is the plug-in's (`contest_expectations`): here the contest's expected
    terminal event count, which no first-acquire race meets. Every caller answered, so the miss is a contract
    finding of the result; the run itself keeps it apart from its structural problems."""
    contest = attrs.evolve(_two_way_race(), facts={"terminalEvents": 1})
    run = run_contest(firestore_db, contest, plugin=JOURNAL)
    assert run.verdict.ok, run.verdict.explain()  # the answers and the stored content are the model's
    h = contest.racers[0].op.command.key_hash
    missed = f"{h[:8]}: 0 terminal events stored, 1 expected"
    assert run.problems == () and run.expectation_problems == (missed,)
    result = contest_result(run)
    assert result.undecided == () and result.problems == (contract(missed),) and not result.passed


def test_a_write_outside_the_contested_keys_fails_a_parallel_program(firestore_db):
    repetition = run_once(firestore_db, _program(), system=_acquire_then(_stray_write))
    assert repetition.verdict is not None and repetition.verdict.ok  # the answers and the key are the model's
    assert repetition.status == BROKEN, repetition.explain()
    assert any(p.text.startswith(f"{STRAY}: stored outside every command key") and p.kind is ProblemKind.CONTRACT
               for p in repetition.problems)


def test_the_reference_passes_the_same_program(firestore_db):
    repetition = run_once(firestore_db, _program())
    assert repetition.status == OK, repetition.explain()


def test_a_parallel_program_whose_calls_are_all_unavailable_is_contention_not_ok(firestore_db):
    repetition = run_once(firestore_db, _program(), system=_acquire_then(_unavailable))
    assert repetition.verdict is not None and repetition.verdict.ok  # indefinite calls: the checker cannot object
    assert repetition.status == CONTENTION and not repetition.passed
    assert repetition.contention.startswith("contention: only 0 of 2 callers had a definite answer (0%, needs 90%)")
    assert "not a contract verdict" in repetition.explain()
    case = CaseResult(_program(), (repetition,), 0.0)
    assert case.classification == CONTENDED and not case.failed and case.contended == (repetition,)
