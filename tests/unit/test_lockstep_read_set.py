"""What the lockstep reads back after a step (no emulator): the key of a path, and a key's read set.

The read-back itself, and that writes elsewhere are still caught, is tested on the emulator in
tests/emulator/test_lockstep_readback.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fencecheck.runners.lockstep import Lockstep
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.journal.store import key_of
from model.journal import MAX_REVISION, Acquire, CommandRef, FaultKind, InjectFault, Register, step
from reference.journal.identity import audit_path, lifecycle_path, root_path

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CMD = CommandRef("test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000",
                 "create_checkout_session", 1, '{"quantity":1}')
H = CMD.key_hash
HOLDER = "0000000a-1ea5-4000-a000-000000000000"


def test_key_of_names_the_key_whose_scope_holds_a_path():
    assert key_of(root_path(H)) == H
    assert key_of(lifecycle_path(H)) == H
    assert key_of(f"{root_path(H)}/anything/below") == H
    assert key_of(audit_path(H, 7)) == H
    assert key_of(f"auditEvents/commerce_command_{H}_x/below/doc") == H
    for path in (f"checkoutRequests/{H}x", f"checkoutRequests/{H.upper()}", f"auditEvents/commerce_command_{H}",
                 f"auditEvents/{H}_0000000001", "strays/one", "checkoutRequests"):
        assert key_of(path) is None, path


def _lockstep_after(*ops) -> Lockstep:
    lockstep = Lockstep(db=None, plugin=JOURNAL)
    for op in ops:
        lockstep.state = step(lockstep.state, op)[0]
    return lockstep


def test_the_read_set_holds_what_a_step_can_write_and_the_next_audit():
    unregistered = _lockstep_after()._read_set(H)
    assert unregistered == sorted([root_path(H), lifecycle_path(H), audit_path(H, 1), audit_path(H, 2)])
    registered = _lockstep_after(Register(CMD, T0))._read_set(H)
    assert registered == unregistered
    leased = _lockstep_after(Register(CMD, T0), Acquire(CMD, HOLDER, T0 + timedelta(seconds=1)))._read_set(H)
    assert leased == sorted([root_path(H), lifecycle_path(H), *(audit_path(H, r) for r in (1, 2, 3))])


def test_the_read_set_of_a_record_at_the_maximum_revision_stays_small():
    leased = (Register(CMD, T0), Acquire(CMD, HOLDER, T0 + timedelta(seconds=1)))
    at_max = _lockstep_after(*leased, InjectFault(CMD, FaultKind.REVISION_AT_MAXIMUM))._read_set(H)
    assert audit_path(H, MAX_REVISION) in at_max and audit_path(H, MAX_REVISION + 1) in at_max
    assert len(at_max) == 5  # root, lifecycle, audit 1, audit at the maximum, and the one after it


def test_the_read_set_keeps_every_path_the_last_read_back_found():
    lockstep = _lockstep_after(Register(CMD, T0))
    lockstep._seen[H] = {audit_path(H, 5): None}  # found last time (e.g. before a fault deleted it)
    assert audit_path(H, 5) in lockstep._read_set(H) and audit_path(H, 6) in lockstep._read_set(H)
