"""The lockstep harness's read-back on the emulator: what each check reads, and that a stray write is caught.

`Lockstep.check_documents` (after every step) reads back only the step's command key; `check_project` (the
first check, every `full_check_every` operations, the state machine's teardown, the end of `replay`) reads
the whole project. These tests make writes a correct journal never makes, either through the client
between steps or from a tiny fake system (the real reference plus one stray write), and check that each is
reported: on the step's own key at once, anywhere else by the next whole-project read-back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import reference
from fencecheck.emulator.firestore_io import SENTINEL_PATH, ensure_sentinel, read_project
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE, ReferenceAPI
from fencecheck.systems.journal.store import key_of, read_key_scope
from model.journal import Acquire, CommandRef, FaultKind, InjectFault, Register
from reference.journal.identity import audit_path, lifecycle_path, root_path
from tests.systems.journal.machine import JournalMachine

pytestmark = pytest.mark.emulator

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def command(n: int) -> CommandRef:
    return CommandRef("test", "firebase_uid", "uid-alice", f"{n:08x}-c0de-4000-8000-000000000000",
                      "create_checkout_session", 1, '{"quantity":1}')


X, Y, Z = command(1), command(2), command(3)
HOLDER = "0000000a-1ea5-4000-a000-000000000000"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _rewrite(db: Any, path: str) -> None:
    """Rewrite a document with its own content, through another: the emulator keeps the update time of a write
    that changes nothing, so an identical `set` alone would leave no trace to find."""
    ref = db.document(path)
    data = ref.get().to_dict()
    ref.set({**data, "stray": True})
    ref.set(data)


def _stray_writes(db: Any) -> dict[str, Callable[[], None]]:
    """Writes no step on X makes, each outside X's documents (Y is registered and leased, revision 2)."""
    y = Y.key_hash

    def rewrite_unchanged() -> None:  # same content, new update time
        _rewrite(db, root_path(y))

    def change_field() -> None:
        db.document(lifecycle_path(y)).update({"fenceEpoch": 7})

    def copy_audit(path: str) -> Callable[[], None]:
        return lambda: db.document(path).set(db.document(audit_path(y, 2)).get().to_dict())

    return {
        "top-level document": lambda: db.document("strays/one").set({"n": 1}),
        "another key's root rewritten unchanged": rewrite_unchanged,
        "another key's lifecycle changed": change_field,
        "another key's next audit": copy_audit(audit_path(y, 3)),
        "another key's audit far ahead": copy_audit(audit_path(y, 9)),
        "a document below another key's root": lambda: db.document(f"{root_path(y)}/lifecycle/previous").set({"n": 1}),
        "another key's root deleted": lambda: db.document(root_path(y)).delete(),
    }


STRAYS = list(_stray_writes(None))


def _lockstep_with_y_leased(db: Any, **kwargs: Any) -> Lockstep:
    lockstep = Lockstep(db, epoch=T0, **kwargs, plugin=JOURNAL)
    lockstep.check_documents()
    for op in (Register(X, at(0)), Register(Y, at(0)), Acquire(Y, HOLDER, at(1))):
        lockstep.run(op)
    return lockstep


# --- what is read -----------------------------------------------------------------------------------------


def test_the_scope_of_a_key_and_the_project_read_back_every_document(firestore_db):
    db = firestore_db
    x, y = X.key_hash, Y.key_hash
    inside = [
        root_path(x),
        lifecycle_path(x),
        f"{root_path(x)}/lifecycle/previous",
        f"{lifecycle_path(x)}/deeper/doc",
        f"{root_path(x)}/other/doc",
        audit_path(x, 1),
        audit_path(x, 12),
        f"auditEvents/commerce_command_{x}_extra",
        f"{audit_path(x, 1)}/below/doc",
    ]
    outside = [root_path(y), lifecycle_path(y), audit_path(y, 1), f"checkoutRequests/{x}x", "strays/top",
               f"auditEvents/commerce_command_{x}", f"{lifecycle_path(Z.key_hash)}"]  # the last: an orphan
    for path in inside + outside:
        db.document(path).set({"path": path})
    ensure_sentinel(db)

    assert sorted(read_key_scope(db, x)) == sorted(inside)
    assert all(key_of(path) == x for path in inside)
    assert [key_of(path) for path in outside] == [y, y, y, None, None, None, Z.key_hash]
    project = read_project(db)
    assert sorted(project) == sorted(inside + outside)  # the orphan lifecycle too; the sentinel left out
    assert SENTINEL_PATH not in project
    assert project[root_path(x)].data == {"path": root_path(x)} and len(project[root_path(x)].update_time) == 2


def test_the_whole_project_read_back_is_reused_only_until_the_next_operation(firestore_db):
    """`stored_project` (the lantern machine's invariant check) hands over the last whole-project read-back
    instead of reading again, but never once an operation was applied after it."""
    lockstep = _lockstep_with_y_leased(firestore_db, full_check_every=None)
    lockstep.check_project()
    checked = set(lockstep.stored_project())
    assert checked == set(read_project(firestore_db))
    firestore_db.document("strays/one").set({"n": 1})  # no operation: the read-back stands for the store
    assert set(lockstep.stored_project()) == checked
    lockstep.run(Register(X, at(2)))  # an operation (read back by key only): the project is read again
    assert set(lockstep.stored_project()) == checked | {"strays/one"}


# --- a stray write outside the step's key ------------------------------------------------------------------


@pytest.mark.parametrize("stray", STRAYS)
def test_a_write_outside_the_steps_key_is_caught_by_the_whole_project_check(firestore_db, stray):
    lockstep = _lockstep_with_y_leased(firestore_db, full_check_every=None)
    _stray_writes(firestore_db)[stray]()
    lockstep.run(Register(X, at(2)))  # reads back X only: passes
    lockstep.run(Register(Z, at(2)))
    with pytest.raises(LockstepMismatch, match="whole-project read-back") as caught:
        lockstep.check_project()
    assert "at step 5" in str(caught.value)


@pytest.mark.parametrize("stray", STRAYS)
def test_the_periodic_whole_project_check_catches_it_within_full_check_every_operations(firestore_db, stray):
    lockstep = _lockstep_with_y_leased(firestore_db, full_check_every=5)  # after the first check: 3 operations
    _stray_writes(firestore_db)[stray]()
    lockstep.run(Register(X, at(2)))
    with pytest.raises(LockstepMismatch, match="whole-project read-back") as caught:
        lockstep.run(Register(Z, at(2)))  # the 5th operation since the first (whole-project) check
    assert "at step 5" in str(caught.value)


def test_a_stray_write_on_a_key_is_caught_when_that_key_is_next_touched(firestore_db):
    lockstep = _lockstep_with_y_leased(firestore_db, full_check_every=None)
    _stray_writes(firestore_db)["another key's root rewritten unchanged"]()
    lockstep.run(Register(X, at(2)))
    with pytest.raises(LockstepMismatch, match="rewritten although its content did not change .*after step 3"):
        lockstep.run(Register(Y, at(2)))  # read-only: Y's root must keep the update time seen after step 3


@pytest.mark.parametrize("stray", ["another key's next audit", "another key's lifecycle changed",
                                   "another key's root rewritten unchanged"])
def test_a_fault_never_erases_a_stray_write_unseen(firestore_db, stray):
    """InjectFault rewrites its key: that key is read back (against the model before the fault) first."""
    lockstep = _lockstep_with_y_leased(firestore_db, full_check_every=None)
    _stray_writes(firestore_db)[stray]()
    lockstep.run(Register(X, at(2)))
    with pytest.raises(LockstepMismatch, match=r"before the next operation, fault\(extra_field") as caught:
        lockstep.run(InjectFault(Y, FaultKind.EXTRA_FIELD))
    assert "at step 4" in str(caught.value)  # reported at the step before the fault


# --- a stray write on the step's own key: caught at that step ----------------------------------------------


def _with_stray(write: Callable[[Any, str], None]) -> ReferenceAPI:
    """The reference, except that registration also makes `write(db, key_hash)` once it returned."""

    def register(*, db: Any, **kwargs: Any) -> Any:
        output = reference.register_commerce_command(db=db, **kwargs)
        write(db, X.key_hash if kwargs["command_id"] == X.command_id else Y.key_hash)
        return output

    return attrs.evolve(REFERENCE, register=register, module=None)


ON_OWN_KEY = {
    "the next audit": lambda db, h: db.document(audit_path(h, 2)).set({"eventType": "stray"}),
    "a lifecycle": lambda db, h: db.document(lifecycle_path(h)).set({"state": "leased"}),
    "the root rewritten unchanged": lambda db, h: _rewrite(db, root_path(h)),
}


@pytest.mark.parametrize("name", list(ON_OWN_KEY))
def test_an_extra_write_on_the_steps_own_key_is_caught_at_that_step(firestore_db, name):
    lockstep = Lockstep(firestore_db, system=_with_stray(ON_OWN_KEY[name]), epoch=T0, full_check_every=None,
                        plugin=JOURNAL)
    lockstep.check_documents()
    with pytest.raises(LockstepMismatch, match="read-back of key") as caught:
        lockstep.run(Register(X, at(0)))
        lockstep.run(Register(X, at(1)))  # the root rewrite only shows on a read-only step
    assert "whole-project" not in str(caught.value)


def test_a_document_elsewhere_below_the_steps_key_is_caught_by_the_whole_project_check(firestore_db):
    """Below the root but off the journal's read set: the per-step read-back need not see it; the next
    whole-project read-back does."""
    stray = _with_stray(lambda db, h: db.document(f"{root_path(h)}/lifecycle/previous").set({"n": 1}))
    lockstep = Lockstep(firestore_db, system=stray, epoch=T0, full_check_every=None, plugin=JOURNAL)
    lockstep.check_documents()
    lockstep.run(Register(X, at(0)))
    with pytest.raises(LockstepMismatch, match="lifecycle/previous: stored, but the model has no such document"):
        lockstep.check_project()


# --- the state machine: its teardown reads back the whole project -----------------------------------------


def test_the_state_machine_catches_a_top_level_stray_write_at_teardown(emulator, project_id, firestore_db):
    counter = iter(range(10**6))
    stray = _with_stray(lambda db, _h: db.document(f"strays/{next(counter)}").set({"n": 1}))

    class StrayMachine(JournalMachine):
        system = stray

        def __init__(self) -> None:
            super().__init__()
            self.lockstep = Lockstep(self.db, system=self.system, epoch=T0,
                                     plugin=JOURNAL)  # no transition coverage recorded

    StrayMachine.emulator, StrayMachine.project_id, StrayMachine.db = emulator, project_id, firestore_db
    run_settings = settings(
        max_examples=3, stateful_step_count=4, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
    )
    with pytest.raises(LockstepMismatch, match=r"whole-project read-back(.|\n)*strays/\d+: stored, but the model"):
        run_state_machine_as_test(StrayMachine, settings=run_settings)
