"""The fakes of tests/fakes/ on the emulator: the ordinary journal and lantern agree with their models, step by
step, and the unavailable ones answer unavailable and store nothing, judged as the harness judges any system.

The ordinary fakes are the references with the SDK's own `transactional` as their runner (issue 22,
docs/contention.md). Sequential calls never contend, so here they must be exactly the model's: each step runs
in `fencecheck.runners.lockstep.Lockstep`, which compares every answer (exact types and key order), the clock readings
and the stored documents with the model's and raises `LockstepMismatch` on any difference. The unavailable
fakes race through `fencecheck.runners.contest.run_contest` from an empty project: every caller retries its whole call
and still answers unavailable, nothing is stored, the checker finds nothing wrong, and the run is refused as
evidence for contention (too few definite callers), never passed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fencecheck.runners.contest import MAX_WHOLE_CALL_RETRIES, Contest, Racer, run_contest
from fencecheck.runners.contest_results import contest_result
from fencecheck.runners.lockstep import Lockstep
from fencecheck.systems.gateway.plugin import GATEWAY
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.lantern.plugin import LANTERN
from model.gateway import Begin, JournalRef
from model.journal import Acquire, CommandRef, Complete, Fail, Register
from model.lantern import CreateVenue, DeleteVenue, Extinguish, Light, ReadActive
from tests.fakes import unavailable
from tests.fakes.ordinary_lantern import ORDINARY_LANTERN

pytestmark = pytest.mark.emulator

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOLDER_A = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
HOLDER_B = "886313e1-3b8a-4372-9b90-0c9aee199e5d"
FINGERPRINT = "a" * 64


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def command(n: int) -> CommandRef:
    return CommandRef("test", "firebase_uid", "uid-alice", f"{n:08x}-c0de-4000-8000-000000000000",
                      "create_checkout_session", 1, '{"quantity":1}')


X, Y = command(1), command(2)
BAR = CreateVenue("bar", "Bar Lantern", 52.5200, 13.4050, 150)
AT_BAR = (52.5200, 13.4050)


def run_in_lockstep(lockstep: Lockstep, ops) -> list[str]:
    """The model transition of each step, once the fake answered and stored exactly what it predicts."""
    transitions = [lockstep.run(op).transition for op in ops]
    lockstep.check_project()  # the whole project once more: nothing stored beyond the model's documents
    return transitions


@pytest.mark.system("journal")
def test_the_ordinary_journal_agrees_with_the_model_step_by_step(firestore_db):
    ops = [
        Register(X, at(0)),
        Register(X, at(1)),
        Acquire(X, HOLDER_A, at(2)),
        Acquire(X, HOLDER_B, at(3)),
        Complete(X, HOLDER_A, 1, FINGERPRINT, at(4)),
        Fail(X, HOLDER_A, 1, at(5)),
        Acquire(X, HOLDER_B, at(6)),
        Acquire(Y, HOLDER_A, at(7)),
    ]
    lockstep = Lockstep(firestore_db, plugin=JOURNAL, system=JOURNAL.resolve("tests.fakes.ordinary_journal"))
    assert run_in_lockstep(lockstep, ops) == [
        "register.absent.new", "register.existing.same", "acquire.first", "acquire.active.other_holder",
        "complete.exact", "fail.terminal.conflict", "acquire.terminal.succeeded", "acquire.unregistered",
    ]


@pytest.mark.system("lantern")
def test_the_ordinary_lantern_agrees_with_the_model_step_by_step(firestore_db):
    ops = [
        BAR,
        BAR,
        Light("u1", "l1", "bar", *AT_BAR, now=at(0)),
        Light("u2", "l1", "bar", *AT_BAR, now=at(1)),
        Light("u1", "l2", "bar", *AT_BAR, now=at(2)),
        ReadActive(now=at(3)),
        Extinguish("u2", "l1", now=at(4)),
        Extinguish("u1", "l1", now=at(5)),
        ReadActive(now=at(6)),
        DeleteVenue("bar"),
        Light("u1", "l3", "bar", *AT_BAR, now=at(7)),
    ]
    lockstep = Lockstep(firestore_db, plugin=LANTERN, system=ORDINARY_LANTERN)
    assert run_in_lockstep(lockstep, ops) == [
        "create_venue.new", "create_venue.exists", "light.new", "light.id_taken", "light.guard_held",
        "read_active.clean", "extinguish.not_owner", "extinguish.active", "read_active.clean",
        "delete_venue.deleted", "light.venue_missing",
    ]


GATEWAY_JOURNAL = JournalRef("gw-prod", "merchant-binding-1", "0f8fad5b-d9cb-469f-a165-70867728950e",
                             "stripe_payment_intent", '{"amount":1200,"currency":"usd"}',
                             '{"payment_method":"pm_card_visa"}')
UNAVAILABLE_CONTESTS = {
    "journal": (JOURNAL, unavailable.JOURNAL, [Register(X, at(0)), Acquire(X, HOLDER_A, at(1))]),
    "lantern": (LANTERN, unavailable.LANTERN, [BAR, Light("u1", "l1", "bar", *AT_BAR, now=at(0))]),
    "gateway": (GATEWAY, unavailable.GATEWAY, [Begin(journal=GATEWAY_JOURNAL, now=at(0))] * 2),
}


@pytest.mark.parametrize("system", [pytest.param(name, marks=pytest.mark.system(name))
                                    for name in UNAVAILABLE_CONTESTS])
def test_an_unavailable_fake_answers_unavailable_in_a_contest_and_stores_nothing(system, firestore_db):
    plugin, impl, ops = UNAVAILABLE_CONTESTS[system]
    contest = Contest(f"unavailable_{system}", (), [Racer(f"caller-{i}", op) for i, op in enumerate(ops)])
    run = run_contest(firestore_db, contest, plugin=plugin, implementation=impl)
    assert run.labels() == {plugin.unavailable_code: len(ops)}
    assert [len(record.calls) for record in run.racers] == [1 + MAX_WHOLE_CALL_RETRIES] * len(ops)
    assert run.documents == {}
    assert run.problems == ()  # no foreign exception, every clock read as required, nothing stored anywhere
    assert run.verdict.ok, run.verdict.explain()
    result = contest_result(run)
    assert result.definite_callers == 0 and result.contention is not None and not result.passed
