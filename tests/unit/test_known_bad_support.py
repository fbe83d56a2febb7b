"""stateful_tests/known_bad_support.py without an emulator: the machines it derives for a variant (their
names, which name the counterexample files) and how the first detection is timed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fencecheck.runners.lockstep import LockstepMismatch
from fencecheck.systems.lantern.plugin import LANTERN
from known_bad.journal import VARIANTS as JOURNAL_VARIANTS
from stateful_tests.known_bad_support import known_bad_machine
from tests.systems.lantern.story import T0


class Detected(AssertionError):
    """A second kind of detection (the lantern machine's invariant failure stands for it)."""


WIRE = object()  # the machine's wire session (fencecheck.wire.WireSession), kept for the variant


class FakeMachine:
    """What known_bad_machine needs of a lockstep machine, and two checking methods that fail on demand."""

    plugin = LANTERN
    db = None

    def __init__(self) -> None:
        self.lockstep = SimpleNamespace(epoch=T0, wire=WIRE)

    def _run(self, outcome, *, flag=False):
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome, flag

    def _check_invariants(self):
        raise Detected("INV-2")


def test_journal_machines_keep_their_names():
    # Counterexample files of the journal's catalogue are named after these: unchanged by the generalization.
    v = JOURNAL_VARIANTS[0]
    machine = known_bad_machine(FakeMachine, v.name, object())
    assert machine.__name__ == "KnownBad" + "".join(part.title() for part in v.name.split("-"))
    assert known_bad_machine(FakeMachine, "wrong-holder-finishes", object()).__name__ == "KnownBadWrongHolderFinishes"


def test_lantern_variant_names_become_class_names():
    machine = known_bad_machine(FakeMachine, "finding_13_blind_decrement_deleted_venue", object(),
                                prefix="KnownBadLantern")
    assert machine.__name__ == "KnownBadLanternFinding13BlindDecrementDeletedVenue"


def test_the_machine_drives_the_variant_without_coverage():
    api = object()
    machine = known_bad_machine(FakeMachine, "x", api)
    instance = machine()
    assert machine.system is api and instance.lockstep.system is api
    assert instance.lockstep.plugin is LANTERN and instance.lockstep.epoch == T0
    assert instance.lockstep._coverage is None
    assert instance.lockstep.wire is WIRE  # the wire rules run against the variant too
    assert machine.examples == 1


def test_the_first_detection_is_timed_and_nothing_else():
    machine = known_bad_machine(FakeMachine, "x", object(), detections=(LockstepMismatch, Detected))
    instance = machine()
    assert instance._run("lit", flag=True) == ("lit", True)  # calls pass through, keywords too
    with pytest.raises(ValueError):
        instance._run(ValueError("a crash of the harness"))
    assert machine.first_failure_at is None
    with pytest.raises(Detected):
        instance._check_invariants()
    first = machine.first_failure_at
    assert first is not None and machine.examples_to_detection == 1
    machine()
    with pytest.raises(LockstepMismatch):
        instance._run(LockstepMismatch("later"))
    assert machine.first_failure_at == first and machine.examples_to_detection == 1


def test_detections_are_the_targets_own():
    machine = known_bad_machine(FakeMachine, "x", object())  # the journal's: a LockstepMismatch only
    with pytest.raises(Detected):
        machine()._check_invariants()
    assert machine.first_failure_at is None
