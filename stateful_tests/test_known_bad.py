"""Every registered system's known-bad catalogue through its lockstep state machine: every variant the machine can
show must be caught.

Each system's machine says how it runs its catalogue (`MachineCatalogue`, stateful_tests/known_bad_support.py,
declared beside the machine and named by the plug-in's `SuiteParts.machine_known_bad`): the variants it runs (the
journal's `VARIANTS` and `WIRE_VARIANTS`, the bugs only wire faults show; the lantern's and the gateway's
sequential ones), those out of its reach with why, and the concurrent ones the race suites take. For each system
and variant (parametrized as `[<system>-<variant>]`), the machine runs with `system =
plugin.resolve(<the variant's spec>)` under the selected profile (`ci` by default, with the machine's own budget).
The test passes when the run fails with one of the machine's detections (a `LockstepMismatch`; for the lantern and
the gateway also a stored-invariant failure; a harness crash, or a variant that crashes instead of misbehaving, is
an error), the shrunk program has at most `MAX_SHRUNK_STEPS` operations, and its counterexample file is a true
reproduction: replayed against the variant it fails, replayed against the real reference it passes.

Shrinking happens in two stages. Hypothesis shrinks the machine's choices for at most `SHRINK_SECONDS`
(its own limit is 300 s, most of it spent polishing ids on the emulator); then `minimize` removes
operations from the recorded journal program itself (delta debugging over plain replays, blind to the
machine's rules, bundles and preconditions) until no single operation can go. The minimized program is
written as its own counterexample file (Hypothesis's is kept too) and is the one reported.

Each run writes `artifacts/known_bad/<result_prefix><name>.json` (`<name>.json` for the journal,
`lantern-machine-<name>.json`, `gateway-machine-<name>.json`; fencecheck.report.artifacts.write_known_bad_result):
`secondsToDetection` is the wall time from the start of the machine run to its first lockstep mismatch
(before shrinking); the total including both shrinking stages is printed and recorded as junit properties.

The example database is not used here (`database=None`): a warm database would replay last run's
counterexample at once and hide a loss of reach of the machine's rules. The run is derandomized
(`catalogue_settings`: the same verdict and time on every run of a commit). Everything else (examples, steps,
phases) is the profile's.

The procedure is system-neutral (stateful_tests/known_bad_support.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fencecheck.plugin.suite_parts as suite_parts
from fencecheck.plugin.registry import plugin
from fencecheck.systems.journal.plugin import ReferenceAPI
from known_bad.journal import Variant
from stateful_tests.known_bad_support import (
    TINY,
    MachineCatalogue,
    Target,
    catch,
    judge_target,
    known_bad_machine,
    outside_the_artifacts,
)
from stateful_tests.known_bad_support import minimize as minimize  # where tests/unit has always found it
from tests.fakes.misbehaving_exec import MISBEHAVIOURS, VERDICTS, misbehaving_journal
from tests.systems.journal.machine import JournalMachine

# The gate deselects the catalogue (--without-catalogues) and each test of another system (--only-system: each is
# marked with its system).
pytestmark = pytest.mark.catalogue

CATALOGUED = suite_parts.with_part("machine_known_bad")  # the systems whose machine runs their catalogue


def catalogue_of(name: str) -> MachineCatalogue:
    return suite_parts.load(plugin(name), "machine_known_bad")


def machine_for(v: Variant, api: ReferenceAPI) -> type[JournalMachine]:
    """`JournalMachine` against the variant, timing its first mismatch; it records no transition coverage
    (artifacts/coverage is about the reference). (benchmarks/concurrent_variants.py)"""
    return known_bad_machine(JournalMachine, v.name, api)


def _systems(having: str | None = None) -> list[Any]:
    return [pytest.param(name, marks=pytest.mark.system(name), id=name) for name in CATALOGUED
            if having is None or getattr(catalogue_of(name), having) is not None]


def _variants() -> list[Any]:
    return [pytest.param(name, variant, marks=pytest.mark.system(name), id=f"{name}-{variant}")
            for name in CATALOGUED for variant in catalogue_of(name).run]


@pytest.mark.parametrize("name", _systems())
def test_every_variant_is_run_by_the_machine_or_explained(name):
    catalogue, every = catalogue_of(name), set(plugin(name).known_bad_variants())
    run, out, concurrent = set(catalogue.run), set(catalogue.out_of_reach), set(catalogue.concurrent)
    assert run, f"{name}'s machine runs no variant at all"
    assert run | out | concurrent == every, (
        f"{name}'s MachineCatalogue leaves {sorted(every - run - out - concurrent)} of its catalogue neither run nor "
        f"explained, and names {sorted((run | out | concurrent) - every)} that are not in it: add each to `run`, "
        "`out_of_reach` (with why) or `concurrent`")
    assert not (run & out or run & concurrent or out & concurrent), "a variant is in two of run/out_of_reach/concurrent"
    assert all(len(reason) > 80 for reason in catalogue.out_of_reach.values()), "a variant left out needs a reason"
    assert catalogue.machine.plugin is plugin(name), f"{name}'s MachineCatalogue names another system's machine"


@pytest.mark.parametrize("system_name, name", _variants())
def test_known_bad_variant_is_caught(system_name, name, emulator, project_id, firestore_db, request, record_property):
    target = catalogue_of(system_name).target(plugin(system_name), name)
    catch(target, emulator=emulator, project_id=project_id, db=firestore_db, failing_property=request.node.nodeid,
          record_property=record_property)


@pytest.mark.parametrize("name", _systems(having="name_error"))
def test_a_variant_that_only_raises_name_error_is_an_error_not_a_catch(name, emulator, project_id, firestore_db,
                                                                       tmp_path):
    # Every step of the machine fails (the system raised NameError): a crash, not a broken rule of the contract.
    catalogue = catalogue_of(name)
    target = Target(name="name-error", result_name=f"{catalogue.result_prefix}name-error", rule="none",
                    description="raises NameError", build=catalogue.name_error, machine=catalogue.machine,
                    settings=catalogue.name_error_settings, machine_prefix=catalogue.machine_prefix,
                    detections=catalogue.detections)
    with outside_the_artifacts(tmp_path):
        verdict, crash = judge_target(target, emulator=emulator, project_id=project_id, db=firestore_db,
                                      failing_property="test", record_property=lambda _key, _value: None)
    assert crash is None
    assert verdict.status == "error" and "NameError" in verdict.reason, verdict
    assert json.loads((tmp_path / "known_bad" / f"{target.result_name}.json").read_text())["status"] == "error"


@pytest.mark.system("journal")
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
