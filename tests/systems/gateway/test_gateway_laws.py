"""Laws of the gateway-journal model (no emulator), over generated operation sequences steered at the stored
lease expiries, settlement deadlines, fences and holders, with hosted answers and evidence both valid and
subtly wrong: step is pure and deterministic, every answer is a row of the table, G-INV-1..12 hold on every
reachable state, and every reachable row fires in one derandomized generated run."""

from __future__ import annotations

import pickle
from collections import Counter
from datetime import timedelta

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.gateway import (
    OUTPUT_KEYS,
    SETTLEMENT_WINDOW_MS,
    TRANSITIONS,
    TRANSITIONS_BY_ID,
    GatewayState,
    Journal,
    describe_op,
    describe_state,
    documents,
    floor_ms,
    history_violations,
    invariant_violations,
    ms_time,
    owner_fingerprint_of,
    step,
)
from model.gateway.invariants import typed_document
from model.gateway.ops import OPERATION_NAMES
from tests.systems.gateway.builders import (
    CHANGED_INPUT,
    MS,
    NAMESPACE,
    REF,
    T0,
    UNDECLARED,
    US,
    X402,
    A,
    B,
    C,
    apply,
    begin,
    claim,
    close,
    evidence,
    get,
    hosted,
    manual,
    provider_intent,
    reconcile,
    record,
    report,
)

LEASES = (A, B, C)
NEVER_BEGUN = attrs.evolve(REF, operation_id="2c5ea4c0-4067-4b8e-9f3a-6a1d2e3f4a5b")
REFS = (REF,) * 10 + (X402, X402, CHANGED_INPUT, UNDECLARED, NEVER_BEGUN)
KINDS = (
    "begin",
    "get",
    "claim",
    "claim",
    "record",
    "record",
    "tpi",
    "tpi",
    "report",
    "report",
    "trl",
    "trl",
    "ase",
    "ase",
    "ase",
    "ase",
    "manual",
    "close",
)
NO_KEY_OUTCOMES = {"pending", "observed", "reconciliation_required", "reconciliation_continues", "consume_unresolved"}
_BASE_KEYS = ["schema_version", "outcome", "state"]


class Choices:
    """Every choice of a run comes from one drawn byte string (one Hypothesis draw per example instead of one
    per choice: far faster, and the bytes still shrink); an exhausted string answers 0."""

    def __init__(self, numbers: bytes):
        self.numbers = iter(numbers)

    def index(self, n: int) -> int:
        return next(self.numbers, 0) % n


def _pick(data: Choices, seq):
    seq = tuple(seq)
    return seq[data.index(len(seq))]


def _flip(data: Choices) -> bool:
    return _pick(data, (False, True))


def typed_docs(state: GatewayState) -> dict:
    return {path: typed_document(doc) for path, doc in documents(state).items()}


def count_step(state: GatewayState, op, hits: Counter) -> GatewayState:
    """The coverage run's step: the row fired, and that it is a row of this operation that agrees."""
    new_state, result = step(state, op)
    hits[result.transition] += 1
    row = TRANSITIONS_BY_ID[result.transition]
    assert row.operation in (OPERATION_NAMES[type(op)], "any") and row.outcome == (result.outcome or result.code)
    assert row.writes == result.wrote
    return new_state


def check_step(state: GatewayState, op, hits: Counter) -> GatewayState:
    before_docs = typed_docs(state)
    before_copy = pickle.loads(pickle.dumps(state))
    new_state, result = step(state, op)
    hits[result.transition] += 1

    # Pure: the input is unchanged (compared by value with a deep copy), the step deterministic.
    assert state == before_copy
    assert step(state, op) == (new_state, result)
    hash(new_state), hash(result)

    row = TRANSITIONS_BY_ID[result.transition]
    assert row.operation in (OPERATION_NAMES[type(op)], "any"), (row.id, describe_op(op, epoch=T0))
    assert row.outcome == (result.outcome or result.code)
    assert row.writes == result.wrote and row.reachable
    assert (result.outcome is None) != (result.code is None)

    after_docs = typed_docs(new_state)
    if result.wrote:
        assert after_docs != before_docs
    else:
        assert new_state is state
    if result.outcome is not None:
        out = result.output
        assert list(out) == _BASE_KEYS + list(OUTPUT_KEYS.get(result.outcome, ()))
        assert type(out["schema_version"]) is int
        stored = new_state.get((op.journal.namespace_id, op.journal.journal_key))
        assert out["state"] == stored.state
        if result.outcome in NO_KEY_OUTCOMES:
            assert list(out) == _BASE_KEYS  # losers carry nothing to call out with
        for key in ("fence_epoch", "revision", "settlement_deadline_at"):
            assert key not in out or out[key] is None or type(out[key]) is int
        for key in ("independent_verification", "lease_active"):
            assert key not in out or type(out[key]) is bool

    # An injected commit failure applies nothing.
    if hasattr(op, "commit_fails"):
        failed_state, failed = step(state, attrs.evolve(op, commit_fails=True))
        assert failed_state is state
        assert failed == result if result.code is not None else failed.transition == "any.commit_failed"

    if result.wrote:  # an unchanged state was checked when it was reached
        docs = documents(new_state)
        assert invariant_violations(docs, namespace_id=NAMESPACE) == (), describe_state(new_state, epoch=T0)
        assert history_violations(documents(state), docs) == ()
    return new_state


def _times(data, state: GatewayState, clock, ref) -> list:
    times = [
        clock,
        clock,
        clock + US,
        clock + timedelta(seconds=31),
        clock + timedelta(seconds=61),
        clock + timedelta(seconds=121),
        clock + timedelta(minutes=16),
    ]
    j = state.get((ref.namespace_id, ref.journal_key))
    if isinstance(j, Journal):
        times.append(j.updated_at - US)
        if j.lease_expires_at is not None:
            times += [j.lease_expires_at - US, j.lease_expires_at, j.lease_expires_at, j.lease_expires_at + US]
        if j.settlement_deadline_at is not None:
            deadline = ms_time(j.settlement_deadline_at)
            times += [deadline - MS, deadline - US, deadline, deadline, deadline + timedelta(seconds=1)]
        if j.consume_intent_at is not None:
            times.append(ms_time(floor_ms(j.consume_intent_at) + SETTLEMENT_WINDOW_MS))
    return times


def _answer(data, ref, j, now, good: bool):
    base = j.consume_intent_at if isinstance(j, Journal) and j.consume_intent_at is not None else now
    at = _pick(data, ([now, now, base, base]))
    kind = _pick(data, (["FRESH", "FRESH", "IDEMPOTENT_CONSUMED", "IDEMPOTENT_CONSUMED", "OTHER_STATE"]))
    answer = hosted(ref, at=at, kind=kind, permit=_pick(data, (["permit-1", "permit-1", "permit-2"])))
    if isinstance(j, Journal) and j.permit_id is not None and _flip(data):
        answer = attrs.evolve(
            answer,
            transition_id=j.consume_transition_id,
            permit_id=j.permit_id,
            permit_digest=j.permit_digest,
            transitioned_at=j.consume_transitioned_at,
            settlement_deadline_at=j.settlement_deadline_at,
        )  # an exact replay
    bend = _pick(data, (["none"] * (24 if good else 6) + ["key", "identity", "deadline", "early", "future"]))
    if bend == "key":
        answer = attrs.evolve(answer, idempotency_key=ref.provider_create_idempotency_key)
    elif bend == "identity":
        answer = attrs.evolve(answer, operation_identity=CHANGED_INPUT.operation_identity)
    elif bend == "deadline" and kind != "OTHER_STATE":
        answer = attrs.evolve(answer, settlement_deadline_at=answer.settlement_deadline_at + 1)
    elif bend in ("early", "future") and kind != "OTHER_STATE":
        ms = floor_ms(base) - 1 if bend == "early" else floor_ms(now) + 1
        answer = attrs.evolve(answer, transitioned_at=ms, settlement_deadline_at=ms + SETTLEMENT_WINDOW_MS)
    return answer


_VERDICTS = (
    "SETTLED",
    "SETTLED",
    "FAILED",
    "FAILED",
    "NOT_SUBMITTED",
    "NOT_SUBMITTED",
    "PENDING",
    "UNKNOWN",
    "CONFLICTING",
)


def _evidence(data, ref, j, now, good: bool):
    stored_ref = j.payment_reference if isinstance(j, Journal) else None
    verdict = _pick(data, _VERDICTS)
    reference = _pick(data, ([stored_ref, stored_ref, stored_ref, "pi_1", "pi_2", None, None]))
    ev = evidence(
        verdict,
        ref,
        reference=reference,
        submission_fenced=_flip(data),
        receipt_digest=None if verdict == "NOT_SUBMITTED" else "c" * 64,
    )
    if good and _pick(data, range(5)):
        verdict = _pick(data, ("SETTLED", "FAILED", "NOT_SUBMITTED"))
        fenced = _flip(data)
        reference = None if verdict == "NOT_SUBMITTED" else stored_ref or "pi_1"
        late = j.settlement_deadline_at is not None and now >= ms_time(j.settlement_deadline_at)
        parks = verdict != "SETTLED" and j.state != "PROVIDER_INTENT" and (late or not fenced)
        receipt = None if parks != (_pick(data, range(8)) == 0) else "c" * 64  # now and then the wrong one
        return evidence(verdict, ref, reference=reference, submission_fenced=fenced, receipt_digest=receipt)
    if isinstance(j, Journal) and j.evidence_verdict is not None and _flip(data):
        ev = attrs.evolve(
            ev,
            evidence_class=j.evidence_class,
            verdict=j.evidence_verdict,
            payment_reference=j.payment_reference,
            submission_fenced=j.submission_fenced,
            receipt_digest=j.terminal_receipt_digest,
        )  # an exact retry
    bend = _pick(data, (["none"] * 8 + ["receipt", "class", "caller", "unverified", "identity"]))
    if bend == "receipt":
        ev = attrs.evolve(ev, receipt_digest=None if ev.receipt_digest else "c" * 64)
    elif bend == "class":
        other = "CHAIN_FINALIZED" if ev.evidence_class == "PROVIDER_API_VERIFIED" else "PROVIDER_API_VERIFIED"
        ev = attrs.evolve(ev, evidence_class=other)
    elif bend == "caller":
        ev = attrs.evolve(ev, evidence_class="CALLER_ASSERTED", independent_verification=False)
    elif bend == "unverified":
        ev = attrs.evolve(ev, independent_verification=False)
    elif bend == "identity":
        ev = attrs.evolve(ev, operation_identity=CHANGED_INPUT.operation_identity)
    return ev


# The operation that moves a journal on from each state, drawn half of the time so that deep states
# (reported submissions, reconciliation, parked outcomes) are reached within a short run.
_PROGRESS = {
    "BEGUN": ("claim",),
    "CONSUME_INTENT": ("record", "record", "claim"),
    "CONSUMED": ("tpi", "tpi", "close"),
    "PROVIDER_INTENT": ("report", "ase", "ase", "trl", "tpi", "manual"),
    "RECONCILE_INTENT": ("ase", "ase", "ase", "trl", "manual"),
    "OUTCOME_UNKNOWN": ("trl", "manual", "ase"),
    "COMMIT": ("manual", "ase", "report"),  # exact retries and conflicts
    "RELEASE": ("manual", "ase", "report"),
}


def _progress_times(kind: str, j: Journal, clock) -> list:
    """Times that move a journal on: at the lease's expiry for the takeovers, inside the lease otherwise."""
    expires = j.lease_expires_at
    if kind == "manual":
        return []
    if kind in ("claim", "trl"):
        late = [ms_time(floor_ms(j.consume_intent_at) + SETTLEMENT_WINDOW_MS)] if kind == "claim" else []
        return [expires, expires + US, max(clock, j.updated_at) + US, *late]
    start = max(clock, j.updated_at)
    return [t for t in (start, start + US, expires - US) if t < expires]


def steered_op(data, state: GatewayState, clock):
    ref = _pick(data, REFS)
    j = state.get((ref.namespace_id, ref.journal_key))
    progress = _PROGRESS.get(j.state) if isinstance(j, Journal) and _flip(data) else None
    kind = _pick(data, progress or KINDS)
    times = _times(data, state, clock, ref)
    if progress and j.lease_expires_at is not None:
        times = _progress_times(kind, j, clock) or times
    now = _pick(data, times)
    kw = {
        "commit_fails": _pick(data, range(10)) == 0,
        "region": _pick(data, (["us-east", "eu-west"])),
    }
    leases, fences = list(LEASES), [1, 2, 3]
    if isinstance(j, Journal):
        if j.lease_owner_fingerprint is not None:
            leases += [x for x in LEASES if owner_fingerprint_of(ref.journal_key, x) == j.lease_owner_fingerprint] * 8
        fences = [j.fence_epoch] * 5 + [max(1, j.fence_epoch - 1), j.fence_epoch + 1]
        if progress:
            leases, fences = (leases[len(LEASES) :] * 3 + list(LEASES)), [j.fence_epoch]  # mostly the holder
    lease, fence = _pick(data, (leases)), _pick(data, (fences))
    if kind == "begin":
        return begin(now, ref, **kw)
    if kind == "get":
        return get(now, ref, region=kw["region"])
    if kind == "claim":
        return claim(lease, now, ref, **kw)
    if kind == "record":
        return record(lease, fence, _answer(data, ref, j, now, bool(progress)), now, ref, **kw)
    if kind == "tpi":
        return provider_intent(lease, now, ref, **kw)
    if kind == "report":
        reference = _pick(data, (["pi_1", "pi_1", "pi_2"]))
        stored = j if isinstance(j, Journal) and j.claim_id is not None else None
        outcome = stored.caller_outcome if stored else _pick(data, (["succeeded", "failed", "unknown"]))
        return report(lease, fence, now, ref, reference=reference, outcome=outcome, **kw)
    if kind == "trl":
        return reconcile(lease, now, ref, **kw)
    if kind == "ase":
        return apply(lease, fence, _evidence(data, ref, j, now, bool(progress)), now, ref, **kw)
    if kind == "manual":
        result = _pick(data, (["COMMIT", "RELEASE", "RELEASE"]))
        return manual(result, now, ref, fenced=_flip(data), claimed=_flip(data), **kw)
    return close(now, ref, **kw)


def steered_run(numbers: bytes, hits: Counter, check=check_step) -> GatewayState:
    data, state, clock = Choices(numbers), GatewayState.empty(), T0
    state = check(state, begin(T0), hits)
    state = check(state, begin(T0, X402), hits)
    for _ in range(numbers[0] if numbers else 0):
        op = steered_op(data, state, clock)
        state = check(state, op, hits)
        clock = max(clock, op.now)
    describe_state(state, epoch=T0)
    return state


def runs(length: int = 40):
    """The run's length (first byte), then the bytes its choices are made from (about ten per operation)."""
    return st.integers(length // 2, length).flatmap(
        lambda n: st.binary(min_size=12 * n, max_size=12 * n).map(lambda xs: bytes([n]) + xs)
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_laws_hold_on_every_reachable_state(numbers):
    steered_run(numbers, Counter())


def test_every_reachable_row_fires_in_one_derandomized_generated_run():
    hits: Counter = Counter()

    @settings(
        max_examples=600, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(runs(length=60))
    def run(numbers):
        steered_run(numbers, hits, count_step)  # the laws are checked by the test above

    run()
    reachable = {row.id for row in TRANSITIONS if row.reachable}
    assert reachable - set(hits) == set(), sorted(reachable - set(hits))
    assert set(hits) <= reachable  # an unreachable row never fires without damaged data


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_lease_expiry_and_deadline_equality_on_reachable_states(numbers):
    """On every journal a run reaches: a lease is held one microsecond before its expiry and not at it; a
    consumed journal's window is open one microsecond before the deadline and closes at it exactly."""
    state = steered_run(numbers, Counter(), count_step)
    refs = {ref.journal_key: ref for ref in (NEVER_BEGUN, X402, REF)}  # REF was begun first: its key is REF's
    for (_ns, _key), j in state.records:
        ref = refs[j.journal_key]
        if j.lease_kind is not None and j.updated_at < j.lease_expires_at:
            before = step(state, get(j.lease_expires_at - US, ref))[1].output["lease_active"]
            at = step(state, get(j.lease_expires_at, ref))[1].output["lease_active"]
            assert (before, at) == (j.state in ("CONSUME_INTENT", "PROVIDER_INTENT", "RECONCILE_INTENT"), False)
        if j.state == "CONSUMED":
            deadline = ms_time(j.settlement_deadline_at)
            assert step(state, close(deadline - US, ref))[1].transition == "csw.open"
            assert step(state, close(deadline, ref))[1].transition == "csw.close"
            assert step(state, provider_intent(A, deadline, ref))[1].transition == "tpi.window_elapsed"
            assert step(state, provider_intent(A, deadline - US, ref))[1].transition in (
                "tpi.first",
                "any.clock_earlier",
            )
