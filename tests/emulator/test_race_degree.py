"""A race too contended to judge at its degree is raced again at lower degrees (issue 22): the result names
the highest degree judged and its verdict, and is never a pass. Here a journal answers `journal_unavailable`,
writing nothing, to every holder after the eighth: at 24 and 12 callers too few are definite, at 8 all are."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import reference
from fencecheck.runners.contest import Ids
from fencecheck.runners.contest_results import execute_contest
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE
from reference import CommandJournalError
from tests.systems.journal.races import BY_NAME

pytestmark = [pytest.mark.emulator, pytest.mark.system("journal")]

SCENARIO = BY_NAME["distinct_holder_first_acquire"]


def _answering_only(holders: set[str]) -> Any:
    """The reference, except that an acquire by any holder not in `holders` is unavailable and writes nothing."""

    def acquire(*, lease_id: str, clock: Any, **kwargs: Any) -> Any:
        if lease_id not in holders:
            clock()  # once, as every call must
            raise CommandJournalError("journal_unavailable")
        return reference.acquire_commerce_command_lease(lease_id=lease_id, clock=clock, **kwargs)

    return attrs.evolve(REFERENCE, acquire=acquire, module=None)


def test_a_contended_race_is_judged_at_the_highest_lower_degree_and_never_passes(
        emulator, project_id, firestore_db) -> None:
    contest = SCENARIO.contest(Ids(11))
    first_eight = {racer.op.lease_id for racer in contest.racers[:8]}
    result, run = execute_contest(firestore_db, contest, plugin=JOURNAL, implementation=_answering_only(first_eight),
                                  promise=SCENARIO.promise, emulator=emulator, project_id=project_id)
    assert run.contest.width == 24 and result.definite_callers == 8
    assert result.contention is not None and not result.passed
    assert (result.judged_width, result.judged_verdict, result.judged_problems) == (8, "ok", ())
    assert result.degree == "contended at 24, judged at 8: ok"
    # the message says what each unanswered caller did, and where the retry pattern is written
    assert "holder-08: 3 whole call(s)" in result.contention and "docs/contention.md" in result.contention
    assert result.to_json()["judged_width"] == 8


def test_a_race_judged_at_no_degree_says_so(emulator, project_id, firestore_db) -> None:
    result, _run = execute_contest(firestore_db, SCENARIO.contest(Ids(12)), plugin=JOURNAL,
                                   implementation=_answering_only(set()), promise=SCENARIO.promise,
                                   emulator=emulator, project_id=project_id)
    assert result.definite_callers == 0 and not result.passed
    assert result.judged_width is None and result.degree == "contended at 24, judged at no lower degree"


def test_a_race_nobody_answered_is_contention_and_accuses_nobody(emulator, project_id, firestore_db) -> None:
    """complete_versus_fail with every complete and fail unavailable, nothing written: the contract allows it,
    so the expected terminal event and the seed's promise ("the lifecycle is terminal") are undecided, not
    broken (issue 22, point 2)."""
    scenario = BY_NAME["complete_versus_fail"]

    def unavailable(*, clock: Any, **_kwargs: Any) -> Any:
        clock()  # once, as every call must
        raise CommandJournalError("journal_unavailable")

    silent_terminals = attrs.evolve(REFERENCE, complete=unavailable, fail=unavailable, module=None)
    result, _run = execute_contest(firestore_db, scenario.contest(Ids(13)), plugin=JOURNAL,
                                   implementation=silent_terminals, promise=scenario.promise)
    assert result.verdict == "ok" and result.definite_callers == 0
    assert result.problems == () and result.promise_problems == (), (result.problems, result.promise_problems)
    assert any("terminal events stored, 1 expected" in found for found in result.undecided), result.undecided
    assert any("the lifecycle is not terminal" in found for found in result.undecided), result.undecided
    assert result.contention is not None and not result.passed
