"""The lockstep runner's wire steps on the emulator (fencecheck/runners/lockstep.py; its faults in
fencecheck/wire/lockstep.py): a commit-failure step whose commits the proxy rejects, and a lost-response step
("commit applied, response lost") judged against the model's two outcomes. Fake systems (the reference with
one change) show each check can fail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from google.cloud import firestore

from fencecheck.emulator.firestore_io import read_project
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch, replay
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE
from fencecheck.wire import FaultKind
from known_bad.journal import WIRE_VARIANTS, variant
from model.journal import Acquire, CommandRef, Register
from reference.journal.errors import CommandJournalError
from reference.journal.identity import root_path

pytestmark = pytest.mark.emulator

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CMD = CommandRef("test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000",
                 "create_checkout_session", 1, '{"quantity":1}')
HOLDER = "0000000a-1ea5-4000-a000-000000000000"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def wire(wire_session):
    """The session, its proxy's event log read from this test's first event on (the proxy serves the process)."""
    return _Wire(wire_session, len(wire_session.proxy.log.events()))


@attrs.frozen
class _Wire:
    session: Any
    start: int

    def events(self):
        return self.session.proxy.log.events()[self.start:]


def _kinds(wire) -> list[tuple[str, FaultKind, str | None, str | None]]:
    return [(e.method, e.kind, e.upstream_code, e.client_code) for e in wire.events()]


def test_a_commit_failure_step_is_rejected_on_the_wire(firestore_db, wire):
    lockstep = Lockstep(firestore_db, plugin=JOURNAL, wire=wire.session)
    lockstep.check_documents()
    lockstep.run(Register(CMD, at(0), commit_fails=True))  # the model: journal_unavailable, nothing stored
    assert read_project(firestore_db) == {}
    assert _kinds(wire) == [("Commit", FaultKind.REJECT, None, "ALREADY_EXISTS")]
    assert "fencecheckSentinels" not in {p.split("/")[0] for p in _raw_paths(firestore_db)}  # no sentinel needed
    lockstep.run(Register(CMD, at(1)))  # the proxy's rollback freed the transaction's locks; no fault now
    assert len(wire.events()) == 1


def _raw_paths(db) -> list[str]:
    return [doc.reference.path for coll in db.collections() for doc in coll.stream()]


def test_commit_applied_response_lost_follows_the_applied_outcome(firestore_db, wire):
    lockstep = Lockstep(firestore_db, plugin=JOURNAL, wire=wire.session)
    lockstep.check_documents()
    result = lockstep.run(Register(CMD, at(0), response_lost=True))
    assert result is not None and result.outcome == "registered_new"  # applied: the model followed it
    (lost,) = wire.events()
    assert (lost.method, lost.kind, lost.upstream_code, lost.client_code) == (
        "Commit", FaultKind.FAIL_RESPONSE, "OK", "UNAVAILABLE")
    assert root_path(CMD.key_hash) in read_project(firestore_db)
    # the model is in the applied state: the caller's exact retry observes it
    assert lockstep.run(Register(CMD, at(1))).outcome == "registered_existing"
    lockstep.check_project()


def test_a_lost_response_before_any_commit_is_an_ordinary_step(firestore_db, wire):
    lockstep = Lockstep(firestore_db, plugin=JOURNAL, wire=wire.session)
    result = lockstep.run(Acquire(CMD, HOLDER, at(0), response_lost=True))  # not registered: no commit sent
    assert result.code == "command_not_registered"
    assert wire.events() == ()


def _with_register(register) -> Any:
    return attrs.evolve(REFERENCE, register=register, module=None)


def _commits_nothing(db: Any) -> None:
    """One empty read-write transaction: a Commit the wire can lose, and nothing stored."""
    firestore.transactional(lambda transaction: None)(db.transaction())


def test_nothing_applied_and_unavailable_follows_the_not_applied_outcome(firestore_db, wire):
    def register(*, db, clock, **_kwargs):
        clock()
        try:
            _commits_nothing(db)
        except Exception:
            raise CommandJournalError("journal_unavailable") from None

    lockstep = Lockstep(firestore_db, plugin=JOURNAL, system=_with_register(register), wire=wire.session)
    assert lockstep.run(Register(CMD, at(0), response_lost=True)) is None
    assert lockstep.state == lockstep.plugin.initial_state()
    assert lockstep.transitions == {}
    lockstep.check_project()


@pytest.mark.parametrize("answer", ["command_conflict", "registered"])
def test_any_other_answer_to_a_lost_response_is_a_mismatch(firestore_db, wire, answer):
    # a definite error after the commit applied (it treats the lost answer as "not applied"), or, when nothing
    # applied, the model's answer as if it had
    def definite(*, db, clock, **kwargs):
        try:
            return REFERENCE.register(db=db, clock=clock, **kwargs)
        except CommandJournalError:
            raise CommandJournalError("command_conflict") from None

    def claims(*, db, clock, **_kwargs):
        clock()
        try:
            _commits_nothing(db)
        except Exception:
            pass
        return {"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}

    system = _with_register(definite if answer == "command_conflict" else claims)
    lockstep = Lockstep(firestore_db, plugin=JOURNAL, system=system, wire=wire.session)
    with pytest.raises(LockstepMismatch, match="the wire lost the commit's answer") as caught:
        lockstep.run(Register(CMD, at(0), response_lost=True))
    shown = "show the step applied" if answer == "command_conflict" else "show the step not applied"
    assert shown in str(caught.value) and "model allows" in str(caught.value)


def test_documents_of_neither_outcome_are_a_mismatch(firestore_db, wire):
    def register(*, db, clock, **kwargs):
        try:
            REFERENCE.register(db=db, clock=clock, **kwargs)
        finally:
            db.document("checkoutRequests/stray").set({"stray": True})  # and a write no outcome has
        raise AssertionError("unreachable: the wire lost the answer")

    lockstep = Lockstep(firestore_db, plugin=JOURNAL, system=_with_register(register), wire=wire.session,
                        full_check_every=1)
    lockstep.check_documents()
    with pytest.raises(LockstepMismatch, match="neither the model's with the step applied nor without it"):
        lockstep.run(Register(CMD, at(0), response_lost=True))


def test_replay_starts_and_stops_its_own_proxy_for_lost_responses(firestore_db):
    lockstep = replay(firestore_db, [Register(CMD, at(0), response_lost=True), Register(CMD, at(1))])
    assert lockstep.wire is not None and not lockstep.wire.proxy.running
    with pytest.raises(LockstepMismatch):
        replay(firestore_db, [Register(CMD, at(0), response_lost=True)], system=_with_register(
            lambda **kw: (_ for _ in ()).throw(CommandJournalError("command_conflict"))))


def test_replay_rejects_a_commit_failure_step_on_a_proxy_of_its_own(firestore_db):
    """As the machines ran it: a counterexample of an implementation in another process (which refuses the
    client-side CommitFailureClient) replays the same way."""
    lockstep = replay(firestore_db, [Register(CMD, at(0), commit_fails=True), Register(CMD, at(1))])
    assert lockstep.wire is not None and not lockstep.wire.proxy.running
    assert [event.method for event in lockstep.wire.proxy.log.events()] == ["Commit"]


def test_needs_wire_leaves_a_client_without_an_emulator_to_the_client_side_path():
    from types import SimpleNamespace

    from fencecheck.runners.lockstep import needs_wire

    failing, lost = [Register(CMD, at(0), commit_fails=True)], [Register(CMD, at(0), response_lost=True)]
    emulator_client, fake = SimpleNamespace(_emulator_host="localhost:8080"), SimpleNamespace()
    assert needs_wire(JOURNAL, failing, emulator_client) and not needs_wire(JOURNAL, failing, fake)
    assert needs_wire(JOURNAL, lost, fake)  # a lost response has no other path: the fake then fails loudly
    assert not needs_wire(JOURNAL, [Register(CMD, at(0))], emulator_client)


# --- the wire-only known-bad variants (known_bad/journal/wire_variants.py) ---------------------------------


def _wire_off(ops):
    return [attrs.evolve(op, response_lost=False) for op in ops]


@pytest.mark.parametrize("name", [v.name for v in WIRE_VARIANTS])
def test_a_wire_variant_fails_its_witness_only_through_the_wire(firestore_db, emulator, project_id, name):
    v = variant(name)
    replay(firestore_db, v.witness)  # the reference passes it, lost answers and all
    emulator.reset(project_id)
    with pytest.raises(LockstepMismatch, match="the wire lost the commit's answer"):
        replay(firestore_db, v.witness, system=v.build())
    emulator.reset(project_id)
    # without wire faults the same calls, and the same calls with rejected commits, agree with the model
    replay(firestore_db, _wire_off(v.witness), system=v.build())
    emulator.reset(project_id)
    rejected = [attrs.evolve(op, commit_fails=True) for op in _wire_off(v.witness)]
    replay(firestore_db, [*rejected, *_wire_off(v.witness)], system=v.build())


@pytest.mark.parametrize("name", [v.name for v in WIRE_VARIANTS])
def test_a_wire_variant_agrees_when_the_proxy_rejects_its_commits(firestore_db, wire, name):
    v = variant(name)
    rejected = [attrs.evolve(op, commit_fails=True) for op in _wire_off(v.witness)]
    replay(firestore_db, [*rejected, *_wire_off(v.witness)], system=v.build(), wire=wire.session)
    assert {e.kind for e in wire.events()} == {FaultKind.REJECT}
