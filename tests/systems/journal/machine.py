"""Lockstep state machine: every rule builds one journal operation (or a short caller story of two) and
applies it to the pure model and to the reference on the Firestore emulator through `fencecheck.runners.lockstep`.

Each Hypothesis example runs on an emptied project; ids come from draws, so a program replays exactly.
The trusted clock is the machine's `clock`; operations read it, or (`reading`) a reading 1 us before the
time stored for their key, a second earlier, or a whole lease earlier.
Failures are written to `counterexamples/` as standalone pytest files (see `run_machine`, in
stateful_tests/machine_runner.py).

Collected by `stateful_tests/conftest.py` (the file name does not match `test_*.py`).

Another implementation runs in the same harness by swapping the reference functions:

    class KnownBad(JournalMachine):
        system = ReferenceAPI.from_module("some.module")   # the four functions + CommandJournalError

    class TestKnownBad(TestJournalLockstep):
        machine = KnownBad
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, NamedTuple

import attrs
import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from fencecheck.checker import coverage
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.specs import configured_implementation
from fencecheck.runners.lockstep import Lockstep
from fencecheck.suites import hypothesis_profiles
from fencecheck.systems.journal.plugin import JOURNAL, ReferenceAPI
from model.journal import (
    MAX_REVISION,
    VALID_FAULTS,
    Acquire,
    CommandRecord,
    CommandRef,
    Complete,
    Fail,
    FaultKind,
    InjectFault,
    Register,
    fault_applies,
    owner_fingerprint_of,
)
from stateful_tests.known_bad_support import MachineCatalogue
from stateful_tests.machine_runner import BoundToEmulator, end_example

pytestmark = pytest.mark.system("journal")  # deselected by --only-system <another>

T0 = datetime(2026, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)
LEASE = timedelta(seconds=60)

# --- draws ----------------------------------------------------------------------------------------

ENVIRONMENTS = ("test", "production", "local", "staging")
SCOPE_KINDS = ("firebase_uid", "anonymous_principal", "internal_system")
SCOPE_VALUES = ("uid-alice", "uid-bob")
COMMAND_TYPES = ("create_checkout_session", "refund_order")
PAYLOADS = ('{"quantity":1}', '{"quantity":true}', '{"quantity":2,"tier":"adult"}', "{}")  # canonical JSON
REFERENCE_FINGERPRINTS = tuple(f"{i:x}" * 64 for i in range(3))
# Mostly the trusted clock; sometimes 1 us before the key's stored time (lifecycle updatedAt, else root
# createdAt), a second before the clock, or more than a lease before it.
READINGS = ("clock",) * 5 + ("just_before_stored", "second_earlier", "lease_earlier")
ADVANCES = (US, timedelta(seconds=1), timedelta(seconds=30), LEASE - US, LEASE, LEASE + US, timedelta(days=1))
FAULT_SPACING = 8
RETRY_GAPS = (timedelta(0), timedelta(seconds=1), LEASE, timedelta(days=1))
# A caller's retry: at once, later, after expiry, much later, or read from a clock 1 us behind the first call.
LOST_RETRY_GAPS = (*RETRY_GAPS, -US)


def command_id(n: int) -> str:
    return f"{n:08x}-c0de-4000-8000-000000000000"


def lease_id(n: int) -> str:
    return f"{n:08x}-1ea5-4000-a000-000000000000"  # variant "a": never equal to a command id


command_refs = st.builds(
    CommandRef,
    environment=st.sampled_from(ENVIRONMENTS),
    caller_scope_kind=st.sampled_from(SCOPE_KINDS),
    caller_scope_value=st.sampled_from(SCOPE_VALUES),
    command_id=st.integers(0, 2**32 - 1).map(command_id),
    command_type=st.sampled_from(COMMAND_TYPES),
    endpoint_schema_version=st.integers(1, 3),
    payload=st.sampled_from(PAYLOADS),
)
lease_ids = st.integers(0, 2**32 - 1).map(lease_id)
readings = st.sampled_from(READINGS)
finish_kinds = st.sampled_from(("complete", "fail"))
ref_fps = st.sampled_from(REFERENCE_FINGERPRINTS)


class Grant(NamedTuple):
    """A lease as its holder knows it: the command, the holder's lease id, the fence it was given."""

    command: CommandRef
    lease_id: str
    fence: int


def _other(values: tuple, current: Any) -> Any:
    return values[(values.index(current) + 1) % len(values)] if current in values else values[0]


# --- the machine ----------------------------------------------------------------------------------


class JournalMachine(RuleBasedStateMachine):
    """Model and reference in lockstep over register / acquire / complete / fail, a trusted clock, lost
    responses, injected commit failures and malformed records."""

    # Bound by the test (TestJournalLockstep) before Hypothesis runs: the emulator, a project, its client.
    emulator: ClassVar[Any] = None
    project_id: ClassVar[str | None] = None
    db: ClassVar[Any] = None
    # Wire faults (fencecheck/wire/lockstep.py): commit failures are rejected by the wire proxy, the lost-response
    # rules lose the first call's commit answer on the wire, and the "commit applied, response lost" rules run.
    # False: commit failures on the client-side path, both calls of a lost-response rule answered, no such rules.
    wire_faults: ClassVar[bool] = True
    wire: ClassVar[Any] = None  # the WireSession, bound with the emulator (run_machine)
    plugin: ClassVar[SystemPlugin] = JOURNAL
    # The reference unless $FENCECHECK_SYSTEM names another (`fencecheck gate --known-bad`); a subclass may swap it.
    system: ClassVar[ReferenceAPI] = configured_implementation(JOURNAL)
    # Programs of this test run: the last one, and those Hypothesis replayed as final (shrunk) examples.
    last_program: ClassVar[list] = []
    final_programs: ClassVar[list] = []
    run_counts: ClassVar[Any] = None
    examples_run: ClassVar[int] = 0  # for the evidence report's stateful section

    commands = Bundle("commands")
    holders = Bundle("holders")
    leases = Bundle("leases")
    finished = Bundle("finished")  # Complete/Fail ops that got their terminal answer (for exact retries)
    variants = Bundle("variants")  # same key as a command, another type, version or payload
    damaged = Bundle("damaged")  # commands whose records a fault rewrote

    def __init__(self) -> None:
        super().__init__()
        if self.db is None:
            raise RuntimeError(f"{type(self).__name__} is not bound to an emulator project (run it via its TestCase)")
        # The project is empty: fresh for the first example, reset by every teardown (checked before step 1).
        self.lockstep = Lockstep(self.db, system=self.system, epoch=T0, coverage=coverage.PROCESS_COUNTS["journal"],
                                 plugin=self.plugin, wire=self.wire)
        type(self).examples_run += 1
        self.clock = T0
        self.last_fault_at = -FAULT_SPACING  # index into lockstep.ops of the latest fault
        self.damaged_keys: set[str] = set()
        self.lease_ids: list[str] = []  # every holder drawn, to find the holder of a stored lease

    # --- helpers ---------------------------------------------------------------------------------

    def _run(self, op, *, damaged_ok: bool = False):
        """Apply `op` in lockstep. Keys a fault damaged are left to `call_damaged` (other rules skip them, so
        most operations keep exercising healthy records): returns None then."""
        if op.command.key_hash in self.damaged_keys and not damaged_ok:
            return None
        result = self.lockstep.run(op)
        # None: a lost-response step that did not apply (the stored documents said so)
        event("not applied (response lost)" if result is None else result.transition)
        return result

    def _fault_allowed(self) -> bool:
        # The first fault may come at once (no padding in shrunk programs); later ones FAULT_SPACING ops apart.
        return len(self.lockstep.ops) - self.last_fault_at >= FAULT_SPACING

    def _reading(self, command: CommandRef, reading: str) -> datetime:
        if reading == "second_earlier":
            return self.clock - timedelta(seconds=1)
        if reading == "lease_earlier":
            return self.clock - LEASE - timedelta(seconds=1)
        if reading == "just_before_stored":
            record = self.lockstep.state.get(command.key_hash)
            if isinstance(record, CommandRecord):
                lc = record.lifecycle
                return (record.registration.created_at if lc is None else lc.updated_at) - US
        return self.clock

    def _finish_op(self, kind: str, command: CommandRef, holder: str, fence: int, ref: str, now: datetime, **kw):
        if kind == "complete":
            return Complete(command, holder, fence, ref, now, **kw)
        return Fail(command, holder, fence, now, **kw)

    @staticmethod
    def _grant(op: Acquire, result) -> Any:
        if result is not None and result.outcome == "lease_acquired":
            return Grant(op.command, op.lease_id, result.fence_epoch)
        return multiple()

    @staticmethod
    def _terminal(op, result) -> Any:
        terminal = result is not None and result.outcome in ("terminal_succeeded", "terminal_failed_final")
        return op if terminal else multiple()

    # --- ids -------------------------------------------------------------------------------------

    @initialize(target=commands, ref=command_refs)
    def first_command(self, ref):
        self._run(Register(ref, self.clock))
        return ref

    @initialize(target=holders, first=lease_ids, second=lease_ids)
    def first_holders(self, first, second):
        self.lease_ids += [first, second]
        return multiple(first, second)

    @rule(target=commands, ref=command_refs, register=st.booleans())
    def new_command(self, ref, register):
        """A new command id (registered at once, or left for a later call to find unregistered)."""
        if register:
            self._run(Register(ref, self.clock))
        return ref

    @rule(target=holders, holder=lease_ids)
    def new_holder(self, holder):
        self.lease_ids.append(holder)
        return holder

    # --- registration ----------------------------------------------------------------------------

    @rule(command=commands, reading=readings)
    def register(self, command, reading):
        """New, or an exact retry once registered."""
        self._run(Register(command, self._reading(command, reading)))

    @rule(target=variants, command=commands, field=st.sampled_from(("command_type", "version", "payload")))
    def register_conflicting(self, command, field):
        """The same command key with another type, schema version or payload."""
        if field == "command_type":
            variant = attrs.evolve(command, command_type=_other(COMMAND_TYPES, command.command_type))
        elif field == "version":
            variant = attrs.evolve(command, endpoint_schema_version=command.endpoint_schema_version % 3 + 1)
        else:
            variant = attrs.evolve(command, payload=_other(PAYLOADS, command.payload))
        self._run(Register(variant, self.clock))
        return variant

    @rule(variant=variants, holder=holders, kind=st.sampled_from(("acquire", "complete", "fail")), ref=ref_fps)
    def call_with_variant(self, variant, holder, kind, ref):
        """Acquire, complete or fail under a conflicting identity (or under the identity that won)."""
        if kind == "acquire":
            self._run(Acquire(variant, holder, self.clock))
        else:
            self._run(self._finish_op(kind, variant, holder, 1, ref, self.clock))

    # --- leases ----------------------------------------------------------------------------------

    @rule(target=leases, command=commands, holder=holders, reading=readings)
    def acquire(self, command, holder, reading):
        """First lease, busy, takeover after expiry (same id or another), terminal, before registration."""
        op = Acquire(command, holder, self._reading(command, reading))
        return self._grant(op, self._run(op))

    @rule(target=leases, lease=leases, reading=readings)
    def recover(self, lease, reading):
        """The holder asks again (it lost track of its lease): the same lease, or a takeover with its own id."""
        op = Acquire(lease.command, lease.lease_id, self._reading(lease.command, reading))
        return self._grant(op, self._run(op))

    @rule(target=leases, lease=leases, holder=holders)
    def contend(self, lease, holder):
        """Another worker asks for a leased command: busy while active, a takeover after expiry."""
        op = Acquire(lease.command, holder, self.clock)
        return self._grant(op, self._run(op))

    # --- finishing -------------------------------------------------------------------------------

    @rule(target=finished, lease=consumes(leases), kind=finish_kinds, ref=ref_fps, reading=readings)
    def finish(self, lease, kind, ref, reading):
        """Exact holder and fence: terminal while active; expired, stale, terminal or clock-earlier otherwise."""
        now = self._reading(lease.command, reading)
        op = self._finish_op(kind, lease.command, lease.lease_id, lease.fence, ref, now)
        return self._terminal(op, self._run(op))

    @rule(lease=leases, holder=holders, kind=finish_kinds, ref=ref_fps)
    def finish_wrong_holder(self, lease, holder, kind, ref):
        self._run(self._finish_op(kind, lease.command, holder, lease.fence, ref, self.clock))

    @rule(lease=leases, delta=st.sampled_from((1, -1, 2)), kind=finish_kinds, ref=ref_fps)
    def finish_stale_fence(self, lease, delta, kind, ref):
        fence = lease.fence + delta
        if not 1 <= fence <= MAX_REVISION:  # inputs stay valid: the model starts after input validation
            fence = lease.fence - 1 if lease.fence > 1 else lease.fence + 1
        self._run(self._finish_op(kind, lease.command, lease.lease_id, fence, ref, self.clock))

    def _stored_lease(self, command: CommandRef) -> tuple[Any, str | None] | None:
        """(the stored lifecycle, the drawn holder whose lease it is, or None) of a healthy key whose lease is
        active at the clock; None otherwise (no lease, expired, terminal, or damaged by a fault)."""
        record = self.lockstep.state.get(command.key_hash)
        if command.key_hash in self.damaged_keys or not isinstance(record, CommandRecord) or record.lifecycle is None:
            return None
        lc = record.lifecycle
        if lc.state != "leased" or not lc.updated_at <= self.clock < lc.expires_at:
            return None
        owner = next((h for h in self.lease_ids if owner_fingerprint_of(command.key_hash, h) == lc.owner_fingerprint),
                     None)
        return lc, owner

    @rule(lease=leases, holder=holders, kind=finish_kinds, ref=ref_fps)
    def finish_current_fence_by_another(self, lease, holder, kind, ref):
        """Near miss: a worker that does not hold the lease presents the stored (current) fence. Refused, however
        its owner fingerprint compares with the holder's: the drawn holders fall on both sides of it."""
        found = self._stored_lease(lease.command)
        if found is None or found[1] == holder:
            return
        self._run(self._finish_op(kind, lease.command, holder, found[0].fence_epoch, ref, self.clock))

    @rule(lease=leases, delta=st.sampled_from((1, -1)), kind=finish_kinds, ref=ref_fps)
    def finish_by_holder_one_fence_off(self, lease, delta, kind, ref):
        """Near miss: the stored holder presents the stored fence plus or minus one (the comparison is equality)."""
        found = self._stored_lease(lease.command)
        if found is None or found[1] is None or not 1 <= found[0].fence_epoch + delta <= MAX_REVISION:
            return
        lc, owner = found
        self._run(self._finish_op(kind, lease.command, owner, lc.fence_epoch + delta, ref, self.clock))

    @rule(lease=leases, where=st.sampled_from(("one_microsecond_before", "exactly", "one_microsecond_after")),
          kind=finish_kinds, ref=ref_fps)
    def finish_by_holder_at_expiry(self, lease, where, kind, ref):
        """Near miss on the clock: the stored holder finishes at the stored fence 1 us before its lease's
        leaseExpiresAt (terminal), exactly at it or 1 us after (lease_rejected: a lease is live while now < expiry).
        The clock only moves forward: a stored lease is active, so its expiry is later than the clock."""
        found = self._stored_lease(lease.command)
        if found is None or found[1] is None:
            return
        lc, owner = found
        self.clock = lc.expires_at + {"one_microsecond_before": -US, "exactly": timedelta(0),
                                      "one_microsecond_after": US}[where]
        self._run(self._finish_op(kind, lease.command, owner, lc.fence_epoch, ref, self.clock))

    @rule(target=leases, lease=leases, holder=holders, kind=finish_kinds, ref=ref_fps)
    def take_over_then_finish_at_the_previous_fence(self, lease, holder, kind, ref):
        """Near miss on the fence: a stored lease taken over at its expiry (by its own holder again, or another),
        then the new holder finishes at the fence one below its own, the one the lease it took over had."""
        found = self._stored_lease(lease.command)
        if found is None:
            return multiple()
        self.clock = found[0].expires_at
        op = Acquire(lease.command, holder, self.clock)
        grant = self._grant(op, self._run(op))
        if isinstance(grant, Grant):
            self._run(self._finish_op(kind, lease.command, holder, grant.fence - 1, ref, self.clock))
        return grant

    @rule(command=commands, holder=holders, fence=st.integers(1, 3), kind=finish_kinds, ref=ref_fps, reading=readings)
    def finish_unleased(self, command, holder, fence, kind, ref, reading):
        """Finishing without a grant: unregistered, no lease yet, or a guess."""
        self._run(self._finish_op(kind, command, holder, fence, ref, self._reading(command, reading)))

    @rule(done=finished, reading=st.sampled_from(("clock", "just_before_stored", "lease_earlier")))
    def retry_terminal(self, done, reading):
        """The exact terminal retry, later (or with a reading earlier than the stored update)."""
        self._run(attrs.evolve(done, now=self._reading(done.command, reading)))

    @rule(done=finished, change=st.sampled_from(("fence_up", "fence_down", "holder")), holder=holders)
    def retry_terminal_one_field_off(self, done, change, holder):
        """Near miss: the terminal call again with one field changed: its fence one up or down, or another holder
        (a terminal conflict, never the exact retry's answer)."""
        if change == "holder":
            if holder == done.lease_id:
                return
            op = attrs.evolve(done, lease_id=holder, now=self.clock)
        else:
            fence = done.expected_fence_epoch + (1 if change == "fence_up" else -1)
            if not 1 <= fence <= MAX_REVISION:
                return
            op = attrs.evolve(done, expected_fence_epoch=fence, now=self.clock)
        self._run(op)

    @rule(done=finished, ref=ref_fps)
    def conflicting_terminal(self, done, ref):
        """The other terminal outcome, or another commitment, for the same holder and fence."""
        if isinstance(done, Complete) and ref == done.terminal_reference_fingerprint:
            op = Fail(done.command, done.lease_id, done.expected_fence_epoch, self.clock)
        else:
            op = Complete(done.command, done.lease_id, done.expected_fence_epoch, ref, self.clock)
        self._run(op)

    # --- the trusted clock -----------------------------------------------------------------------

    @rule(step=st.sampled_from(ADVANCES))
    def advance_clock(self, step):
        self.clock += step

    @rule(lease=leases,
          where=st.sampled_from(("exactly", "one_microsecond_before", "one_microsecond_after", "far_past")))
    def clock_to_expiry(self, lease, where):
        """Land the clock on a stored lease's leaseExpiresAt, 1 us either side of it, or a day past it (this can
        move the clock back: later readings are then earlier than stored times)."""
        record = self.lockstep.state.get(lease.command.key_hash)
        if not isinstance(record, CommandRecord) or record.lifecycle is None:
            return
        offset = {"exactly": timedelta(0), "one_microsecond_before": -US, "one_microsecond_after": US,
                  "far_past": timedelta(days=1)}[where]
        self.clock = record.lifecycle.expires_at + offset

    # --- lost responses and failed commits -------------------------------------------------------

    def _retry_time(self, gap: timedelta) -> datetime:
        """When a caller retries `gap` after its first call (the trusted clock never runs backwards)."""
        self.clock = max(self.clock, self.clock + gap)
        return self.clock if gap >= timedelta(0) else self.clock + gap

    @property
    def _lossy(self) -> bool:
        """Lost responses are lost on the wire (else the machine sees the first answer and ignores it)."""
        return self.lockstep.wire is not None

    @rule(target=leases, command=commands, holder=holders, gap=st.sampled_from(LOST_RETRY_GAPS))
    def lost_acquire_then_retry(self, command, holder, gap):
        """The caller never sees the first answer (the wire loses its commit's answer); it retries with the same
        ids after `gap`."""
        self._run(Acquire(command, holder, self.clock, response_lost=self._lossy))
        op = Acquire(command, holder, self._retry_time(gap))
        return self._grant(op, self._run(op))

    @rule(target=finished, lease=consumes(leases), kind=finish_kinds, ref=ref_fps, gap=st.sampled_from(LOST_RETRY_GAPS))
    def lost_finish_then_retry(self, lease, kind, ref, gap):
        op = self._finish_op(kind, lease.command, lease.lease_id, lease.fence, ref, self.clock)
        self._run(attrs.evolve(op, response_lost=self._lossy))
        op = self._finish_op(kind, lease.command, lease.lease_id, lease.fence, ref, self._retry_time(gap))
        return self._terminal(op, self._run(op))

    @precondition(lambda self: self._lossy)
    @rule(target=leases, command=commands, holder=holders, kind=st.sampled_from(("register", "acquire")))
    def commit_applied_response_lost(self, command, holder, kind):
        """Commit applied, response lost: the wire loses the first commit's answer, the client's own retry logic
        runs and nobody retries the call; its answer and the stored documents must be one of the model's two
        outcomes (applied, or not), which the model then follows."""
        op = Register(command, self.clock, response_lost=True) if kind == "register" else Acquire(
            command, holder, self.clock, response_lost=True)
        return self._grant(op, self._run(op))

    @precondition(lambda self: self._lossy)
    @rule(target=finished, lease=leases, kind=finish_kinds, ref=ref_fps)
    def finish_applied_response_lost(self, lease, kind, ref):
        op = self._finish_op(kind, lease.command, lease.lease_id, lease.fence, ref, self.clock, response_lost=True)
        return self._terminal(attrs.evolve(op, response_lost=False), self._run(op))

    @rule(command=commands, holder=holders, kind=st.sampled_from(("register", "acquire")), retry=st.booleans())
    def commit_fails(self, command, holder, kind, retry):
        """The server rejects the commit (nothing applied); optionally the caller's retry."""
        make = Register if kind == "register" else Acquire
        args = (command,) if kind == "register" else (command, holder)
        self._run(make(*args, self.clock, commit_fails=True))
        if retry:
            self._run(make(*args, self.clock))

    @rule(lease=leases, kind=finish_kinds, ref=ref_fps, retry=st.booleans())
    def finish_commit_fails(self, lease, kind, ref, retry):
        args = (kind, lease.command, lease.lease_id, lease.fence, ref, self.clock)
        self._run(self._finish_op(*args, commit_fails=True))
        if retry:
            self._run(self._finish_op(*args))

    # --- malformed records -----------------------------------------------------------------------

    @precondition(lambda self: self._fault_allowed())
    @rule(target=damaged, command=commands, pick=st.integers(0, 2**32 - 1))
    def inject_fault(self, command, pick):
        """Rewrite one key's documents into a malformed-record class (the model computes them); the key then
        fails closed. Faults are FAULT_SPACING operations apart, so most keys stay healthy.

        The class is `pick` modulo the classes that apply, not a `sampled_from` draw: Hypothesis prefers a
        sampled list's first values, so one class came up in 2 of 150 ci examples and another in 30, and the
        variants only a later class shows survived whole rounds (the slowest two took 160 and 70 s to catch).
        Wide integers come out near uniform; shrinking still lands on the smallest pick of the same class."""
        kinds = [kind for kind in FaultKind if fault_applies(self.lockstep.state, command, kind)]
        if not kinds:
            return multiple()  # nothing stored yet, or already corrupt
        self.last_fault_at = len(self.lockstep.ops)
        kind = kinds[pick % len(kinds)]
        self._run(InjectFault(command, kind))
        if kind not in VALID_FAULTS:  # the rebases stay valid records (at and one below the overflow edge)
            self.damaged_keys.add(command.key_hash)
        # Observe the damage at once: a fault that no later rule happens to touch would prove nothing.
        self._run(Register(command, self.clock), damaged_ok=True)
        return command

    @precondition(lambda self: self._fault_allowed())
    @rule(lease=leases, kind=st.sampled_from(("acquire", "complete", "fail")))
    def push_to_maximum(self, lease, kind):
        """revision_at_maximum on a leased key (a valid record at the edge), then its holder asks for the next
        revision: an acquire after expiry, or finishing while active. Must answer overflow, never wrap."""
        command, state = lease.command, self.lockstep.state
        if command.key_hash in self.damaged_keys or not fault_applies(state, command, FaultKind.REVISION_AT_MAXIMUM):
            return
        self.last_fault_at = len(self.lockstep.ops)
        self._run(InjectFault(command, FaultKind.REVISION_AT_MAXIMUM))
        self._call_at_maximum(command, lease.lease_id, kind, 1, timedelta(0))

    @precondition(lambda self: self._fault_allowed())
    @rule(lease=leases, kind=finish_kinds, ref=ref_fps)
    def finish_at_a_high_fence_then_retry(self, lease, kind, ref):
        """revision_below_maximum on a leased key, then its holder finishes at the stored fence (far past the
        small integers CPython caches) and retries exactly: the retry must answer the terminal record, which a
        fence compared by identity instead of value would not."""
        command, state = lease.command, self.lockstep.state
        if command.key_hash in self.damaged_keys or not fault_applies(state, command, FaultKind.REVISION_BELOW_MAXIMUM):
            return
        self.last_fault_at = len(self.lockstep.ops)
        self._run(InjectFault(command, FaultKind.REVISION_BELOW_MAXIMUM))
        lc = self.lockstep.state.get(command.key_hash).lifecycle
        owner = next((h for h in self.lease_ids if owner_fingerprint_of(command.key_hash, h) == lc.owner_fingerprint),
                     lease.lease_id)
        finish = self._finish_op(kind, command, owner, lc.fence_epoch, ref, lc.updated_at)
        self._run(finish)
        self._run(finish)

    def _call_at_maximum(self, command: CommandRef, holder: str, kind: str, fence: int, after: timedelta) -> None:
        """A call by the stored holder of a record at the maximum revision, when it would have to mutate."""
        lc = self.lockstep.state.get(command.key_hash).lifecycle
        owner = next((h for h in self.lease_ids if owner_fingerprint_of(command.key_hash, h) == lc.owner_fingerprint),
                     holder)
        if kind == "register":
            op = Register(command, self.clock + after)
        elif kind == "acquire":
            op = Acquire(command, owner if fence % 2 else holder, lc.expires_at + after)
        else:
            op = self._finish_op(kind, command, owner, lc.fence_epoch, REFERENCE_FINGERPRINTS[0], lc.updated_at)
        self._run(op, damaged_ok=True)

    @rule(
        command=damaged,
        holder=holders,
        kind=st.sampled_from(("register", "acquire", "complete", "fail")),
        fence=st.integers(1, 3),
        after=st.sampled_from(RETRY_GAPS),
    )
    def call_damaged(self, command, holder, kind, fence, after):
        """Calls on a damaged key: unrecognized_record and nothing written. (A record rebased by
        revision_at_maximum stays valid: see `_call_at_maximum`.)"""
        record = self.lockstep.state.get(command.key_hash)
        if getattr(record, "lifecycle", None) is not None and record.lifecycle.revision == MAX_REVISION:
            self._call_at_maximum(command, holder, kind, fence, after)
            return
        now = self.clock + after
        if kind == "register":
            op = Register(command, now)
        elif kind == "acquire":
            op = Acquire(command, holder, now)
        else:
            op = self._finish_op(kind, command, holder, fence, REFERENCE_FINGERPRINTS[0], now)
        self._run(op, damaged_ok=True)

    # --- invariants and cleanup ------------------------------------------------------------------

    @invariant()
    def stored_documents_match_model(self):
        # Before step 1 this reads back the whole (emptied) project. After that Lockstep.run has already read
        # back each operation's key (and the whole project every FULL_CHECK_EVERY operations): a no-op unless
        # a rule skipped it.
        self.lockstep.check_documents()

    def teardown(self):
        end_example(self)


# --- running it (run_machine: stateful_tests/machine_runner.py) ------------------------------------


class TestJournalLockstep(BoundToEmulator, JournalMachine.TestCase):
    """`JournalMachine.TestCase` with the selected profile's settings, bound to an emulator project."""

    settings = hypothesis_profiles.machine_settings()
    machine = JournalMachine


# --- the known-bad catalogue (stateful_tests/test_known_bad.py; SuiteParts.machine_known_bad names it) ---------


def _known_bad() -> MachineCatalogue:
    from known_bad.crashing import journal_name_error
    from known_bad.journal import CONCURRENT_VARIANTS, VARIANTS, WIRE_VARIANTS

    return MachineCatalogue(
        machine=JournalMachine,
        machine_settings=hypothesis_profiles.machine_settings,
        # the sequential catalogue and the bugs only wire faults show (known_bad/journal/wire_variants.py)
        run=tuple(v.name for v in (*VARIANTS, *WIRE_VARIANTS)),
        concurrent=tuple(v.name for v in CONCURRENT_VARIANTS),  # the parallel suite's (test_parallel_known_bad.py)
        name_error=journal_name_error,
    )


KNOWN_BAD = _known_bad()
