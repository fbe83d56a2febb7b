"""Laws of the command-journal model (no emulator): random operation sequences over a few commands, lease
ids and clock readings chosen so that contests, expiry boundaries and earlier clock readings happen."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.journal import (
    MAX_REVISION,
    TRANSITION_IDS,
    TRANSITIONS_BY_ID,
    VALID_FAULTS,
    Acquire,
    CommandRecord,
    CommandRef,
    Complete,
    CorruptRecord,
    Fail,
    FaultKind,
    InjectFault,
    JournalState,
    Register,
    describe_op,
    describe_state,
    documents,
    documents_for,
    fault_applies,
    owner_fingerprint_of,
    record_problem,
    step,
)
from model.journal.state import freeze_document

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

BASE = CommandRef(
    "test",
    "firebase_uid",
    "uid-alice",
    "0f8fad5b-d9cb-469f-a165-70867728950e",
    "create_checkout_session",
    1,
    '{"quantity":2}',
)
OTHER_ID = attrs.evolve(BASE, command_id="16fd2706-8baf-433b-82eb-8c7fada847da")
OTHER_SCOPE = attrs.evolve(
    BASE, environment="production", caller_scope_kind="internal_system", caller_scope_value="nightly_reconciler"
)
# Same command key as BASE, different identity: conflicts.
CONFLICT_TYPE = attrs.evolve(BASE, command_type="refund_order")
CONFLICT_VERSION = attrs.evolve(BASE, endpoint_schema_version=2)
CONFLICT_PAYLOAD = attrs.evolve(BASE, payload='{"quantity":3}')

COMMANDS = (BASE, BASE, BASE, OTHER_ID, OTHER_SCOPE, CONFLICT_TYPE, CONFLICT_VERSION, CONFLICT_PAYLOAD)
LEASES = (
    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "886313e1-3b8a-4372-9b90-0c9aee199e5d",
    "9b2b5d1e-3f4a-4c6d-8e7f-a1b2c3d4e5f6",
)
REFERENCES = ("a" * 64, "b" * 64)

commands = st.sampled_from(COMMANDS)
leases = st.sampled_from(LEASES)
fences = st.integers(1, 4)
# Multiples of 30 s, with a microsecond either side, so lease expiry (acquire + 60 s) is hit exactly,
# one microsecond early and one late; negative offsets give readings earlier than what is stored.
moments = st.builds(
    lambda k, j: T0 + timedelta(seconds=30 * k, microseconds=j),
    st.integers(-1, 10),
    st.sampled_from((-1, 0, 0, 0, 1)),
)
commit_fails = st.integers(0, 7).map(lambda n: n == 0)

journal_ops = st.one_of(
    st.builds(Register, commands, moments, commit_fails),
    st.builds(Acquire, commands, leases, moments, commit_fails),
    st.builds(Acquire, commands, leases, moments, commit_fails),
    st.builds(Complete, commands, leases, fences, st.sampled_from(REFERENCES), moments, commit_fails),
    st.builds(Fail, commands, leases, fences, moments, commit_fails),
)
fault_ops = st.builds(InjectFault, commands, st.sampled_from(tuple(FaultKind)))
# Registration first so that most sequences reach leases and terminal states.
prelude = st.lists(st.builds(Register, commands, moments), min_size=0, max_size=2)
plain_runs = st.tuples(prelude, st.lists(journal_ops, max_size=40)).map(lambda p: p[0] + p[1])
faulty_runs = st.tuples(
    prelude, st.lists(st.one_of(journal_ops, journal_ops, journal_ops, fault_ops), max_size=40)
).map(lambda p: p[0] + p[1])

READ_ONLY_OUTCOMES = {
    "registered_existing",
    "lease_acquired",
    "lease_busy",
    "terminal_succeeded",
    "terminal_failed_final",
}
OPERATION_NAMES = {Register: "register", Acquire: "acquire", Complete: "complete", Fail: "fail", InjectFault: "fault"}


def typed_documents(state: JournalState) -> dict:
    """`documents` compared with types (True == 1 in Python, but not in Firestore)."""
    return {path: freeze_document(doc) for path, doc in documents(state).items()}


def _records(state: JournalState) -> dict:
    return dict(state.records)


def check_step(state: JournalState, op, faulted: set[str]) -> JournalState:
    """Step once and assert every per-step law; returns the new state."""
    before_docs = typed_documents(state)
    before_copy = pickle.loads(pickle.dumps(state))
    new_state, result = step(state, op)

    # step never mutates its input, and is deterministic.
    assert state == before_copy
    assert typed_documents(state) == before_docs
    assert step(state, op) == (new_state, result)
    hash(new_state)

    # The transition row exists and agrees with the result.
    assert result.transition in TRANSITION_IDS
    row = TRANSITIONS_BY_ID[result.transition]
    assert row.operation in (OPERATION_NAMES[type(op)], "any")
    assert row.outcome == (result.outcome or result.code)
    assert row.writes == result.wrote
    assert (result.outcome is None) != (result.code is None) or row.operation == "fault"
    if op.command.key_hash not in faulted and not isinstance(op, InjectFault):
        assert row.reachable, (result.transition, describe_op(op, epoch=T0))

    # Read-only answers leave every document (and the state) unchanged; writes change documents.
    after_docs = typed_documents(new_state)
    if not result.wrote:
        assert new_state is state
        assert after_docs == before_docs
    else:
        assert after_docs != before_docs
        assert result.code is None
    if result.outcome in READ_ONLY_OUTCOMES and not result.wrote:
        assert after_docs == before_docs

    # Only the stepped key changes.
    h = op.command.key_hash
    old, new = _records(state), _records(new_state)
    assert {k: v for k, v in old.items() if k != h} == {k: v for k, v in new.items() if k != h}

    old_record, new_record = old.get(h), new.get(h)
    if isinstance(op, InjectFault):
        assert result.transition == (
            "fault_injected" if fault_applies(state, op.command, op.kind) else "fault_not_applicable"
        )
        if result.wrote:
            faulted.add(h)
            assert isinstance(new_record, CorruptRecord) == (op.kind not in VALID_FAULTS)
    else:
        # Journal operations never corrupt a key; a corrupt key answers unrecognized_record.
        assert isinstance(new_record, CorruptRecord) == isinstance(old_record, CorruptRecord)
        if isinstance(old_record, CorruptRecord):
            assert result.code == "unrecognized_record" and result.transition == "any.corrupt"
        # Fence and revision never decrease; terminal lifecycles absorb every journal operation.
        if isinstance(old_record, CommandRecord) and old_record.lifecycle is not None:
            old_lc, new_lc = old_record.lifecycle, new_record.lifecycle
            assert new_lc.fence_epoch >= old_lc.fence_epoch
            assert new_lc.revision >= old_lc.revision
            if old_lc.state != "leased":
                assert new_record is old_record
        # The registration never changes once stored.
        if isinstance(old_record, CommandRecord):
            assert new_record.registration == old_record.registration

        # An injected commit failure applies nothing.
        failing = attrs.evolve(op, commit_fails=True)
        failed_state, failed = step(state, failing)
        assert failed_state is state
        if result.code is not None:
            assert failed == result
        else:
            assert failed.code == "journal_unavailable" and failed.transition == "any.commit_failed"

    # lease_acquired reports exactly the stored lease of this holder.
    if result.outcome == "lease_acquired":
        lc = new_record.lifecycle
        assert lc.state == "leased"
        assert result.fence_epoch == lc.fence_epoch == result.output["fenceEpoch"]
        assert result.lease_expires_at == lc.expires_at
        assert lc.owner_fingerprint == op.owner_fingerprint
        assert op.now < lc.expires_at

    check_state(new_state, faulted)
    return new_state


def check_state(state: JournalState, faulted: set[str]) -> None:
    keys = [h for h, _ in state.records]
    assert keys == sorted(set(keys))
    for h, record in state.records:
        docs = documents_for(state, h)
        if isinstance(record, CorruptRecord):
            assert record_problem(h, docs) is not None
            continue
        reg = record.registration
        assert record_problem(h, docs, environment=reg.environment, caller_scope_kind=reg.caller_scope_kind) is None
        lc = record.lifecycle
        revision = 1 if lc is None else lc.revision
        if lc is not None:
            assert 1 <= lc.fence_epoch < lc.revision <= MAX_REVISION
        revisions = [1, *(event.revision for event in record.audits)]
        assert revisions[-1] == revision
        if h not in faulted:
            assert revisions == list(range(1, revision + 1))


def run(ops) -> JournalState:
    state = JournalState.empty()
    faulted: set[str] = set()
    for op in ops:
        state = check_step(state, op, faulted)
    describe_state(state, epoch=T0)
    return state


US = timedelta(microseconds=1)
STEERED_COMMANDS = (BASE,) * 6 + (OTHER_ID, OTHER_ID, OTHER_SCOPE, CONFLICT_TYPE, CONFLICT_VERSION, CONFLICT_PAYLOAD)


def steered_op(data, state: JournalState, clock: datetime, allow_faults: bool):
    """Draw one operation aimed at the stored times, fences and holders of its key, so that expiry
    equality, one-microsecond-early readings, earlier-than-stored readings, recoveries, contests and exact
    terminal retries all happen often."""
    command = data.draw(st.sampled_from(STEERED_COMMANDS))
    kinds = ["register", "acquire", "acquire", "acquire", "complete", "complete", "fail", "fail"]
    if allow_faults:
        kinds.append("fault")
    kind = data.draw(st.sampled_from(kinds))
    if kind == "fault":
        return InjectFault(command, data.draw(st.sampled_from(tuple(FaultKind))))
    h = command.key_hash
    record = state.get(h)
    times = [clock, clock, clock + timedelta(seconds=1), clock + timedelta(seconds=30), clock - US]
    fence_choices = [1, 2]
    lease_choices = list(LEASES)
    if isinstance(record, CommandRecord):
        times.append(record.registration.created_at - US)
        lc = record.lifecycle
        if lc is not None:
            times += [lc.expires_at - US, lc.expires_at, lc.expires_at, lc.expires_at + US, lc.updated_at - US]
            fence_choices = [lc.fence_epoch] * 4 + [lc.fence_epoch - 1, lc.fence_epoch + 1]
            fence_choices = [f for f in fence_choices if 1 <= f <= MAX_REVISION]
            holder = [lease for lease in LEASES if owner_fingerprint_of(h, lease) == lc.owner_fingerprint]
            lease_choices += holder * 3
    now = data.draw(st.sampled_from(times))
    fails = data.draw(commit_fails)
    if kind == "register":
        return Register(command, now, fails)
    lease = data.draw(st.sampled_from(lease_choices))
    if kind == "acquire":
        return Acquire(command, lease, now, fails)
    fence = data.draw(st.sampled_from(fence_choices))
    if kind == "complete":
        return Complete(command, lease, fence, data.draw(st.sampled_from(REFERENCES)), now, fails)
    return Fail(command, lease, fence, now, fails)


def steered_run(data, allow_faults: bool, length: int = 30) -> JournalState:
    state = JournalState.empty()
    faulted: set[str] = set()
    clock = T0
    state = check_step(state, Register(BASE, T0), faulted)
    for _ in range(data.draw(st.integers(0, length))):
        op = steered_op(data, state, clock, allow_faults)
        state = check_step(state, op, faulted)
        if not isinstance(op, InjectFault):
            clock = max(clock, op.now)
    return state


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_laws_steered(data):
    steered_run(data, allow_faults=False)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_laws_steered_with_faults(data):
    steered_run(data, allow_faults=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain_runs)
def test_laws_without_faults(ops):
    run(ops)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulty_runs)
def test_laws_with_faults(ops):
    run(ops)


@settings(max_examples=100, deadline=None)
@given(plain_runs)
def test_states_reached_by_different_paths_compare_by_value(ops):
    state = run(ops)
    rebuilt = JournalState.empty()
    for h, record in state.records:
        rebuilt = rebuilt.with_record(h, pickle.loads(pickle.dumps(record)))
    assert rebuilt == state and hash(rebuilt) == hash(state)


@settings(max_examples=100, deadline=None)
@given(plain_runs, st.data())
def test_corrupt_keys_absorb_every_journal_operation(ops, data):
    state = run(ops)
    registered = [c for c in COMMANDS if isinstance(state.get(c.key_hash), CommandRecord)]
    if not registered:
        return
    command = data.draw(st.sampled_from(registered))
    kinds = [k for k in FaultKind if fault_applies(state, command, k) and k not in VALID_FAULTS]
    kind = data.draw(st.sampled_from(kinds))
    corrupt, result = step(state, InjectFault(command, kind))
    assert result.transition == "fault_injected"
    assert isinstance(corrupt.get(command.key_hash), CorruptRecord)
    for op in data.draw(
        st.lists(journal_ops.filter(lambda o: o.command.key_hash == command.key_hash), min_size=1, max_size=5)
    ):
        after, answer = step(corrupt, op)
        assert after is corrupt
        assert answer.code == "unrecognized_record" and answer.transition == "any.corrupt"
    assert not any(fault_applies(corrupt, command, k) for k in FaultKind)
