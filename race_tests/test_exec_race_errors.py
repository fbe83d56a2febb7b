"""The race runner of the known-bad catalogues (race_tests/race_known_bad.py) against `exec:` journal implementations
that misbehave at their first call (tests/fakes/misbehaving_exec.py): a crash with a multi-line message (its stderr
tail), a call never answered, a malformed answer. The journal's identical-registrations scenario has no setup, so
its racers reach the implementation first; each racer's problem has the kind it was found as, and the one judge
calls the variant an error or a timeout, never caught (a line-bound text rule once read the crash as a broken
structural invariant)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fencecheck.runners.contest import Ids
from race_tests.race_known_bad import judge_variant
from tests.fakes.misbehaving_exec import MISBEHAVIOURS, VERDICTS, misbehaving_journal
from tests.systems.journal.races import BY_NAME

pytestmark = [pytest.mark.system("journal"), pytest.mark.catalogue]  # the gate deselects both (--only-system)

SCENARIO = BY_NAME["identical_registrations"]


@pytest.mark.parametrize("how", sorted(MISBEHAVIOURS))
def test_an_exec_implementation_that_crashes_hangs_or_breaks_the_protocol_is_no_catch(
    how: str, emulator: Any, project_id: str, firestore_db: Any, tmp_path: Path,
) -> None:
    assert SCENARIO.contest(Ids(1)).setup == ()  # the racers make the implementation's first calls
    with misbehaving_journal(how) as system:
        judged = judge_variant(SCENARIO, system, reference=None, db=firestore_db, emulator=emulator,
                               project_id=project_id, counterexamples=tmp_path)
    assert judged.verdict.status == VERDICTS[MISBEHAVIOURS[how]], judged.verdict
    assert "ImplementationFailure" in judged.verdict.reason and len(judged.runs) == 1, judged.verdict
