"""The known-bad catalogue through the lockstep state machine: every variant must be caught.

For each variant of `known_bad.journal.VARIANTS` and `WIRE_VARIANTS` (the bugs only wire faults show:
known_bad/journal/wire_variants.py; parametrized by name), `JournalMachine` runs with
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
counterexample at once and hide a loss of reach of the machine's rules. The run is derandomized
(`catalogue_settings`: the same verdict and time on every run of a commit). Everything else (examples, steps,
phases) is the profile's.

The procedure is system-neutral (stateful_tests/known_bad_support.py); the lantern's catalogue runs through
it too (stateful_tests/test_lantern_machine_known_bad.py).
"""

from __future__ import annotations

import json

import pytest

from fencecheck import hypothesis_profiles
from fencecheck.plugins.journal import ReferenceAPI
from known_bad.crashing import journal_name_error
from known_bad.journal import VARIANTS, WIRE_VARIANTS, Variant, variant
from stateful_tests.journal_machine import JournalMachine
from stateful_tests.known_bad_support import (
    TINY,
    Target,
    catalogue_settings,
    catch,
    judge_target,
    known_bad_machine,
    outside_the_artifacts,
)
from stateful_tests.known_bad_support import minimize as minimize  # where tests/unit has always found it
from tests.fakes.misbehaving_exec import MISBEHAVIOURS, VERDICTS, misbehaving_journal

pytestmark = [pytest.mark.system("journal"), pytest.mark.catalogue]  # the gate deselects both (--only-system)


def machine_for(v: Variant, api: ReferenceAPI) -> type[JournalMachine]:
    """`JournalMachine` against the variant, timing its first mismatch; it records no transition coverage
    (artifacts/coverage is about the reference)."""
    return known_bad_machine(JournalMachine, v.name, api)


@pytest.mark.parametrize("name", [v.name for v in (*VARIANTS, *WIRE_VARIANTS)])
def test_known_bad_variant_is_caught(name, emulator, project_id, firestore_db, request, record_property):
    v = variant(name)
    target = Target(
        name=name,
        result_name=name,
        rule=v.rule,
        description=v.description,
        build=v.build,
        machine=JournalMachine,
        settings=catalogue_settings(hypothesis_profiles.machine_settings()),
    )
    catch(target, emulator=emulator, project_id=project_id, db=firestore_db, failing_property=request.node.nodeid,
          record_property=record_property)


def test_a_variant_that_only_raises_name_error_is_an_error_not_a_catch(emulator, project_id, firestore_db,
                                                                       tmp_path):
    # Every step of the machine fails (the system raised NameError): a crash, not a broken rule of the contract.
    target = Target(name="name-error", result_name="name-error", rule="none", description="raises NameError",
                    build=journal_name_error, machine=JournalMachine, settings=TINY)
    with outside_the_artifacts(tmp_path):
        verdict, crash = judge_target(target, emulator=emulator, project_id=project_id, db=firestore_db,
                                      failing_property="test", record_property=lambda _key, _value: None)
    assert crash is None
    assert verdict.status == "error" and "NameError" in verdict.reason, verdict
    assert json.loads((tmp_path / "known_bad" / "name-error.json").read_text())["status"] == "error"


@pytest.mark.parametrize("how", sorted(MISBEHAVIOURS))
def test_an_exec_implementation_that_crashes_hangs_or_breaks_the_protocol_is_no_catch(how, emulator, project_id,
                                                                                      firestore_db, tmp_path):
    # Its first step fails: a crash with a multi-line message (its stderr tail), a call that is never answered, a
    # malformed answer. The step's mismatch says which (its structured kind): an error or a timeout, never caught.
    with misbehaving_journal(how) as system:
        target = Target(name=f"exec-{how}", result_name=f"exec-{how}", rule="none", description=f"exec: {how}",
                        build=lambda: system, machine=JournalMachine, settings=TINY)
        with outside_the_artifacts(tmp_path):
            verdict, crash = judge_target(target, emulator=emulator, project_id=project_id, db=firestore_db,
                                          failing_property="test", record_property=lambda _key, _value: None)
    assert crash is None
    assert verdict.status == VERDICTS[MISBEHAVIOURS[how]] and "ImplementationFailure" in verdict.reason, verdict
