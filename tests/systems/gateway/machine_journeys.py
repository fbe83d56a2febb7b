"""GatewayMachine.deep_journey on the emulator: each journey reaches the rows it is there for, so the thorough
profile exercises them (the six rows its other rules missed) and the ci catalogue meets the hazards of the
four variants that were not yet reliable (stateful_tests/test_known_bad.py, `[gateway-...]`). The rule is
called directly, as Hypothesis would with the given draws, on a machine bound to a project of its own.

The journeys drive the implementation under test (the machine's own, `configured_implementation`: the reference,
or what `fencecheck gate --known-bad` / `--system` names), so each is one more contract test of it; a journey that
disagrees with the model writes its program as a counterexample, which the gate replays. The tests that a journey
catches its catalogue variant are the known-bad catalogue's (marked catalogue).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from fencecheck.runners.lockstep import LockstepMismatch
from fencecheck.systems.gateway.plugin import GATEWAY
from known_bad.gateway import variant
from stateful_tests.machine_runner import write_counterexamples
from tests.systems.gateway import machine as gateway_machine
from tests.systems.gateway.machine import STRIPE, X402, GatewayMachine

pytestmark = pytest.mark.system("gateway")  # deselected by --only-system <another>

LONG = timedelta(seconds=60)
# (journey, verdict, fenced, reported, receipt, claimed, retry, gap) -> rows that must fire
JOURNEYS = [
    (("reconcile", "SETTLED", True, True, "fits", False, True, LONG), {"trl.from_abandoned", "ase.commit.reconcile",
                                                                       "ase.retry_committed"}),
    (("reconcile", "FAILED", False, True, "fits", False, True, LONG), {"ase.unknown.unfenced", "ase.retry_unknown"}),
    (("reconcile", "FAILED", True, False, "flipped", False, False, LONG), {"ase.receipt"}),
    (("reconcile", "UNKNOWN", True, True, "fits", False, False, LONG), {"ase.continues"}),
    (("owner", "FAILED", True, True, "fits", False, True, LONG), {"ase.release.provider_owner",
                                                                  "ase.retry_released"}),
    (("manual", "FAILED", True, False, "fits", False, True, LONG), {"mt.release", "mt.retry_released"}),
    (("manual", "SETTLED", True, True, "fits", True, True, LONG), {"mt.commit", "mt.retry_committed"}),
    (("late_provider", "SETTLED", True, True, "fits", False, False, timedelta(seconds=119)), {"tpi.first"}),
    (("recovery", "SETTLED", True, True, "fits", False, True, LONG), {"claim.recovery", "rcr.consumed",
                                                                     "rcr.retry_consumed"}),
    (("unbound", "SETTLED", True, True, "fits", False, False, LONG, "deadline_earlier"), {"rcr.unbound",
                                                                                         "rcr.consumed"}),
    (("early_reconcile", "SETTLED", True, False, "fits", False, False, LONG), {"trl.submission_active"}),
    (("reconcile", "FAILED", True, False, "fits", False, False, LONG), {"tpi.abandoned", "ase.release.reconcile"}),
    (("at_deadline", "FAILED", True, True, "fits", False, False, LONG), {"csw.other", "mt.release_late"}),
]
# The variant each hazard's journey must catch: a lockstep mismatch on the journey's decisive call.
CATCHES = [
    ("unfenced_release_after_reconciliation", ("reconcile", "FAILED", False, True, "fits", False, False, LONG)),
    ("manual_trusts_claimed_verification", ("manual", "SETTLED", True, False, "fits", True, False, LONG)),
    ("uncapped_provider_lease", ("late_provider", "SETTLED", True, False, "fits", False, False, LONG)),
    ("unknown_evidence_releases", ("owner", "UNKNOWN", True, True, "fits", False, False, LONG)),
    ("unknown_evidence_releases", ("reconcile", "UNKNOWN", False, False, "fits", False, False, LONG)),
    ("lease_equality_active", ("recovery", "SETTLED", True, False, "fits", False, False, LONG)),
    ("reconcile_overwrites_active_submission", ("early_reconcile", "SETTLED", True, False, "fits", False, False,
                                                timedelta(milliseconds=1))),
    ("abandoned_intent_resubmitted", ("reconcile", "FAILED", True, False, "fits", False, False, LONG)),
    ("release_at_the_deadline", ("at_deadline", "FAILED", True, False, "fits", False, False, LONG)),
    ("close_any_elapsed_state", ("at_deadline", "FAILED", True, False, "fits", False, False, LONG)),
    ("caller_outcome_decides", ("owner", "FAILED", True, True, "fits", False, False, LONG)),
    ("unbound_deadline_accepted", ("unbound", "SETTLED", True, True, "fits", False, False, LONG, "deadline_later")),
]


@pytest.fixture
def bound(emulator, project_id, firestore_db, monkeypatch):
    monkeypatch.setattr(gateway_machine, "event", lambda _value: None)  # Hypothesis's, only inside a test
    def bind(system=None):  # None: the implementation under test
        machine_class = type("GatewayJourney", (GatewayMachine,), {"system": system or GatewayMachine.system})
        machine_class.emulator, machine_class.project_id, machine_class.db = emulator, project_id, firestore_db
        return machine_class()

    return bind


@pytest.mark.parametrize(("draws", "rows"), JOURNEYS, ids=[f"{d[0]}-{d[1]}-{i}" for i, (d, _) in enumerate(JOURNEYS)])
def test_a_journey_reaches_its_rows(bound, draws, rows):
    machine = bound()
    try:
        for base in (STRIPE, X402):
            ref = machine.deep_journey(base, *draws)
            assert ref.operation_id not in (STRIPE.operation_id, X402.operation_id)  # a fresh journal each time
        machine.lockstep.check_project()  # as the machine's teardown: nothing stored outside the steps' journals
    except LockstepMismatch as mismatch:  # the implementation disagreed: its program is the counterexample
        write_counterexamples(type(machine), [list(machine.lockstep.ops)], mismatch)
        raise
    fired = set(machine.lockstep.transitions)
    assert rows <= fired, f"missing {sorted(rows - fired)}; fired {sorted(fired)}"


@pytest.mark.catalogue  # every variant on purpose: deselected by --without-catalogues
@pytest.mark.parametrize(("name", "draws"), CATCHES, ids=[f"{n}-{d[0]}" for n, d in CATCHES])
def test_a_journey_catches_its_variant(bound, name, draws):
    machine = bound(GATEWAY.resolve(variant(name).system_spec))
    with pytest.raises(LockstepMismatch):
        machine.deep_journey(STRIPE, *draws)
