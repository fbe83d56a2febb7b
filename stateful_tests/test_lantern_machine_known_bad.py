"""The lantern's known-bad catalogue (known_bad.lantern) through `LanternMachine`: every variant a sequential
program can show must be caught.

For each variant whose `concurrent` flag is False (parametrized by name), `LanternMachine` runs with `system =
LANTERN.resolve(variant.system_spec)` under the selected profile (`ci` by default, with the machine's own
budget). The test passes when the run fails with a `LockstepMismatch` or a stored-invariant failure
(`InvariantViolated`), the program, shrunk by Hypothesis and then by delta debugging, has at most
MAX_SHRUNK_STEPS operations, and its counterexample file (which names the variant) fails when replayed
against the variant and passes against the reference. The procedure, and what is timed and recorded, is the
journal catalogue's (stateful_tests/known_bad_support.py); results go to
`artifacts/known_bad/lantern-machine-<name>.json` (the seed scenarios of tests/emulator/test_lantern_known_bad.py
write `lantern-<name>.json`).

The concurrent variants are out of a sequential machine's reach by definition (the race suites take them).
The sequential variants it cannot show either are listed in OUT_OF_SEQUENTIAL_REACH with the reason; a test
keeps that list and the catalogue in step, so a new variant is either run here or explained.

As in the journal's catalogue the example database is not used (`database=None`): a warm database would
replay last run's counterexample at once and hide a loss of reach of the machine's rules.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import settings

from fencecheck.lockstep import LockstepMismatch
from fencecheck.plugins.lantern import LANTERN
from known_bad.crashing import lantern_name_error
from known_bad.lantern import VARIANTS, variant
from stateful_tests.known_bad_support import (
    TINY,
    Target,
    catalogue_settings,
    catch,
    judge_target,
    outside_the_artifacts,
)
from stateful_tests.lantern_machine import InvariantViolated, LanternMachine, machine_settings

pytestmark = [pytest.mark.system("lantern"), pytest.mark.catalogue]  # the gate deselects both (--only-system)

SEQUENTIAL = tuple(v for v in VARIANTS if not v.concurrent)
OUT_OF_SEQUENTIAL_REACH = {
    "finding_4_guard_cleared_after_commit": (
        "the variant deletes the user's guard by a separate write right after the extinguish commits. Run "
        "sequentially that write always succeeds, and the stored documents, answers and update times are "
        "exactly the reference's (an extinguish succeeds only for a stored-active lantern, which its user's guard "
        "always names). Only a failure between the commit and the delete strands the guard, and the lantern "
        "plug-in injects no failed write (no lantern operation carries commit_fails); InjectFault stranded_guard "
        "writes the damage on both sides alike. tests/emulator/test_lantern_known_bad.py catches it with a client "
        "whose guard delete fails."
    ),
}
RUN_HERE = tuple(v.name for v in SEQUENTIAL if v.name not in OUT_OF_SEQUENTIAL_REACH)


def test_every_sequential_variant_is_run_here_or_explained():
    sequential = {v.name for v in SEQUENTIAL}
    assert set(OUT_OF_SEQUENTIAL_REACH) <= sequential, "an explained variant is not a sequential one of the catalogue"
    assert set(RUN_HERE) | set(OUT_OF_SEQUENTIAL_REACH) == sequential
    assert RUN_HERE, "the machine runs no variant at all"
    assert all(len(reason) > 80 for reason in OUT_OF_SEQUENTIAL_REACH.values()), "a variant left out needs a reason"


@pytest.mark.parametrize("name", RUN_HERE)
def test_lantern_variant_is_caught_by_the_machine(name, emulator, project_id, firestore_db, request,
                                                  record_property):
    v = variant(name)
    target = Target(
        name=name,
        result_name=f"lantern-machine-{name}",
        rule=v.rule,
        description=v.description,
        build=lambda: LANTERN.resolve(v.system_spec),
        machine=LanternMachine,
        settings=catalogue_settings(machine_settings()),
        machine_prefix="KnownBadLantern",
        detections=(LockstepMismatch, InvariantViolated),
    )
    catch(target, emulator=emulator, project_id=project_id, db=firestore_db, failing_property=request.node.nodeid,
          record_property=record_property)


def test_a_variant_that_only_raises_name_error_is_an_error_not_a_catch(emulator, project_id, firestore_db,
                                                                       tmp_path):
    target = Target(name="name-error", result_name="lantern-machine-name-error", rule="none",
                    description="raises NameError", build=lantern_name_error, machine=LanternMachine,
                    settings=settings(TINY, max_examples=5), machine_prefix="KnownBadLantern",
                    detections=(LockstepMismatch, InvariantViolated))
    with outside_the_artifacts(tmp_path):
        verdict, crash = judge_target(target, emulator=emulator, project_id=project_id, db=firestore_db,
                                      failing_property="test", record_property=lambda _key, _value: None)
    assert crash is None
    assert verdict.status == "error" and "NameError" in verdict.reason, verdict
    assert json.loads((tmp_path / "known_bad" / "lantern-machine-name-error.json").read_text())["status"] == "error"
