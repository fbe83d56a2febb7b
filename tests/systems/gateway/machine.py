"""Lockstep state machine of the gateway journal (docs/gateway-contract.md): every rule applies one
`model.gateway` operation to the pure model and to the implementation on the Firestore emulator through
`fencecheck.runners.lockstep` with the GATEWAY plug-in, which reads back the operation's journal after every step
(record, first event, the event after the highest, every path known there) and the whole project every 16
operations and at the end of every example, and compares exactly (types, update times of unchanged
documents).

Journals and granted leases are Bundles. A journal is one of a few JournalRefs (two providers, one never
begun), so `journal_not_begun`, a second `begin` and, through a changed provider input or an undeclared
namespace, `binding_conflict` and `namespace_not_linearizable` all come up. A lease in its Bundle is what a
worker was granted (journal, lease id, fence, kind), so a stale worker (lower fence, another kind of lease)
keeps calling after a takeover. Simulated hosted answers and evidence are drawn relative to the stored
record (transitioned at the claim, at the clock, before the claim, in the future; a wrong idempotency key or
deadline; verified or caller-asserted, of either provider, with the stored, no or a foreign reference).

The trusted clock is the machine's `clock`, moved only by rules: steps from 1 us to an hour (a lease's
length and the 15-minute settlement window among them), and exactly onto a journal's lease expiry or its
settlement deadline, 1 us before or 1 us after (which can move the clock back: later readings are then
earlier than stored times, `any.clock_earlier`). Lost responses are the last call made again after a gap;
a rejected commit (`commit_fails`) is followed by the caller's retry or not. Faults (`InjectFault`: six
kinds of damaged documents) come at most one every FAULT_SPACING operations; every later call on that
journal must answer `unrecognized_record` and write nothing.

G-INV-1..12 are checked after every step on the model's documents of every undamaged journal: the lockstep
has just checked that the stored documents equal them exactly, so this is the invariant check of what is
stored, without another read.

Collected by `stateful_tests/conftest.py` (the file name does not match `test_*.py`).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, NamedTuple

import attrs
import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, precondition, rule

from fencecheck.checker import coverage
from fencecheck.errors import ContractFailure
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.specs import configured_implementation
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch
from fencecheck.suites import hypothesis_profiles
from fencecheck.systems.gateway.plugin import GATEWAY, GatewaySystem
from model.gateway import (
    FAULT_KINDS,
    SETTLEMENT_WINDOW_MS,
    ApplyEvidence,
    Begin,
    ClaimConsume,
    CloseWindow,
    Evidence,
    Get,
    HostedAnswer,
    InjectFault,
    Journal,
    JournalRef,
    ManualTerminal,
    RecordConsume,
    ReportSubmission,
    TakeProviderIntent,
    TakeReconcileLease,
    floor_ms,
    invariant_violations,
    ms_time,
    owner_fingerprint_of,
    record_documents,
)
from stateful_tests.known_bad_support import MachineCatalogue
from stateful_tests.machine_runner import BoundToEmulator, end_example

pytestmark = pytest.mark.system("gateway")  # deselected by --only-system <another>

BUDGETS: dict[str, dict[str, int]] = {
    "ci": {"max_examples": 40, "stateful_step_count": 50},
    "gate": {"max_examples": 40, "stateful_step_count": 50},
    "thorough": {"max_examples": 300, "stateful_step_count": 100},
}

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
US = timedelta(microseconds=1)
NAMESPACE = "gw-prod"
STRIPE = JournalRef(NAMESPACE, "merchant-binding-1", "0f8fad5b-d9cb-469f-a165-70867728950e", "stripe_payment_intent",
                    '{"amount":1200,"currency":"usd"}', '{"payment_method":"pm_card_visa"}')
X402 = attrs.evolve(STRIPE, operation_id="16fd2706-8baf-433b-82eb-8c7fada847da", provider="x402",
                    provider_input='{"asset":"usdc","network":"base"}')
NEVER_BEGUN = attrs.evolve(STRIPE, operation_id="2c1a7f3e-5b6d-4e8f-9a0b-1c2d3e4f5a6b")
# The same operation id bound to another provider input, and a namespace not declared linearizable.
CHANGED = {"input": lambda ref: attrs.evolve(ref, provider_input='{"payment_method":"pm_card_mastercard"}'),
           "undeclared": lambda ref: attrs.evolve(ref, consistency="PER_REGION")}
WORKERS = ("7c9e6679-7425-40de-944b-e07fc1f90ae7", "886313e1-3b8a-4372-9b90-0c9aee199e5d",
           "9b2b5d1e-3f4a-4c6d-8e7f-a1b2c3d4e5f6")
REGIONS = ("us-east", "eu-west")
ADVANCES = (US, timedelta(milliseconds=1), timedelta(seconds=1), timedelta(seconds=10), timedelta(seconds=30),
            timedelta(seconds=60), timedelta(seconds=120), timedelta(minutes=15), timedelta(hours=1))
EDGES = {"exactly": timedelta(0), "one_microsecond_before": -US, "one_microsecond_after": US}
ADVANCE_RULES = 8
TWISTS = ("straight", "straight", "straight", "wrong", "late")
WHO = ("bundle", "current", "current")  # a lease from the Bundle, or the journal's current holder
RETRY_GAPS = (timedelta(0), US, timedelta(seconds=1), timedelta(minutes=1))
RECEIPT = "c" * 64
VERIFIED = {"stripe_payment_intent": "PROVIDER_API_VERIFIED", "x402": "CHAIN_FINALIZED"}
EVIDENCE_CLASSES = ("CALLER_ASSERTED", *VERIFIED.values())
VERDICTS = ("SETTLED", "FAILED", "NOT_SUBMITTED", "PENDING", "UNKNOWN", "CONFLICTING")
# The fields of the stored evidence and of the stored consume (model/gateway/near_misses.py compares them), by
# their names in `Evidence` and `HostedAnswer`.
EVIDENCE_FIELDS = ("evidence_class", "independent_verification", "verdict", "payment_reference", "submission_fenced")
REPORT_FIELDS = ("claim_id", "provider_submission_id", "payment_reference", "caller_outcome")  # ReportSubmission.report
OUTCOMES = ("succeeded", "failed", "pending", "unknown")
CONSUME_FIELDS = ("transition_id", "permit_id", "permit_digest", "transitioned_at", "settlement_deadline_at")
FAULT_SPACING = 8
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
# The journey rules (GatewayMachine.deep_journey): fresh journals per example (each one more partition for every
# whole-project read-back), their operation ids (UUID4s from a counter), and the gaps before a boundary (all
# < 120 s: a provider intent that close to the deadline has its lease capped there).
MAX_FRESH_JOURNALS = 6
FRESH_ID_BASE = 0x5EED << 64
DEEP_GAPS = (timedelta(milliseconds=1), timedelta(seconds=1), timedelta(seconds=60), timedelta(seconds=119))

workers = st.sampled_from(WORKERS)
regions = st.sampled_from(REGIONS)


class Lease(NamedTuple):
    """What a worker was granted: its journal, its lease id, the fence and the lease's kind."""

    journal: JournalRef
    lease_id: str
    fence: int
    kind: str  # consume | provider | reconcile


class InvariantViolated(ContractFailure):
    """The stored documents (equal to the model's) break G-INV-1..12: a contract finding
    (fencecheck.errors.ContractFailure)."""


def machine_settings() -> settings:
    budget = BUDGETS.get(hypothesis_profiles.selected_name(), {})
    return settings(hypothesis_profiles.machine_settings(), **budget)


class GatewayMachine(RuleBasedStateMachine):
    """Model and implementation in lockstep over the ten gateway calls, a trusted clock placed at every
    lease expiry and at the settlement deadline, lost responses, rejected commits and damaged documents."""

    emulator: ClassVar[Any] = None
    project_id: ClassVar[str | None] = None
    db: ClassVar[Any] = None
    plugin: ClassVar[SystemPlugin] = GATEWAY
    system: ClassVar[GatewaySystem] = configured_implementation(GATEWAY)
    last_program: ClassVar[list] = []
    final_programs: ClassVar[list] = []
    run_counts: ClassVar[Any] = None
    examples_run: ClassVar[int] = 0

    journals = Bundle("journals")
    leases = Bundle("leases")

    def __init__(self) -> None:
        super().__init__()
        if self.db is None:
            raise RuntimeError(f"{type(self).__name__} is not bound to an emulator project (run it via its TestCase)")
        self.lockstep = Lockstep(self.db, plugin=GATEWAY, system=self.system, epoch=T0,
                                 coverage=coverage.PROCESS_COUNTS["gateway"])
        type(self).examples_run += 1
        self.clock = T0
        self.last_call: Any = None
        self.last_fault_at = -FAULT_SPACING
        self.fresh_journals = 0

    # --- helpers ---------------------------------------------------------------------------------

    def _run(self, op):
        result = self.lockstep.run(op)
        event(result.transition)
        if not GATEWAY.is_fault(op):
            self.last_call = op
        return result

    def _record(self, ref: JournalRef) -> Journal | None:
        record = self.lockstep.state.get((ref.namespace_id, ref.journal_key))
        return record if isinstance(record, Journal) else None

    def _granted(self, op, result, kind: str) -> Any:
        """The lease a grant answered (a new fence: one the Bundle does not hold yet), else nothing."""
        out = result.output
        # refused, a holder's retry (its lease is in the Bundle already), or a write that grants nothing
        if out is None or not result.wrote or "fence_epoch" not in out:
            return multiple()
        return Lease(op.journal, op.lease_id, out["fence_epoch"], kind)

    def _who(self, lease: Lease, who: str) -> Lease:
        """`lease` as drawn from the Bundle (perhaps stale), or the current holder of its journal's lease at the
        stored fence (most calls: a worker acts on what it holds)."""
        record = self._record(lease.journal)
        if who == "bundle" or record is None or record.lease_kind is None:
            return lease
        holder = self._holder(record)
        if holder is None:
            return lease
        return Lease(lease.journal, holder, record.fence_epoch, record.lease_kind)

    def _fault_allowed(self) -> bool:
        return len(self.lockstep.ops) - self.last_fault_at >= FAULT_SPACING

    # --- journals --------------------------------------------------------------------------------

    @initialize(target=journals, ref=st.sampled_from((STRIPE, X402)))
    def first_journal(self, ref):
        self._run(Begin(journal=ref, now=self.clock))
        return ref

    @rule(target=journals, ref=st.sampled_from((STRIPE, X402, NEVER_BEGUN)), begin=st.booleans(), region=regions)
    def journal(self, ref, begin, region):
        """A journal to call (begun now, or left for later calls to find it not begun)."""
        if begin:
            self._run(Begin(journal=ref, region=region, now=self.clock))
        return ref

    @rule(ref=journals, change=st.sampled_from(tuple(CHANGED)), kind=st.sampled_from(("begin", "get", "claim")))
    def changed_binding(self, ref, change, kind):
        """The operation id with another provider input (binding_conflict), or an undeclared namespace."""
        other = CHANGED[change](ref)
        if kind == "begin":
            self._run(Begin(journal=other, now=self.clock))
        elif kind == "get":
            self._run(Get(journal=other, now=self.clock))
        else:
            self._run(ClaimConsume(journal=other, lease_id=WORKERS[0], now=self.clock))

    @rule(ref=journals, region=regions)
    def get(self, ref, region):
        self._run(Get(journal=ref, region=region, now=self.clock))

    # --- consume ---------------------------------------------------------------------------------

    @rule(target=leases, ref=journals, worker=workers, region=regions)
    def claim(self, ref, worker, region):
        """The consume election: first claim, the holder's retry, another worker pending, recovery at expiry."""
        op = ClaimConsume(journal=ref, lease_id=worker, region=region, now=self.clock)
        return self._granted(op, self._run(op), "consume")

    @rule(lease=leases, who=st.sampled_from(WHO), kind=st.sampled_from(("FRESH", "FRESH", "IDEMPOTENT_CONSUMED",
                                                                     "OTHER_STATE")),
          at=st.sampled_from(("intent", "intent", "now", "before_intent", "future")),
          bend=st.sampled_from(("none", "none", "none", "key", "deadline", "fence")),
          permit=st.sampled_from(("permit-1", "permit-2")))
    def record_consume(self, lease, who, kind, at, bend, permit):
        """The hosted CONSUME answer, bound (or not) to the journal's key, identity and claim window."""
        lease = self._who(lease, who)
        ref, now = lease.journal, self.clock
        record = self._record(ref)
        intent = record.consume_intent_at if record is not None and record.consume_intent_at is not None else now
        ms = {"intent": floor_ms(intent), "now": floor_ms(now), "before_intent": floor_ms(intent) - 1,
              "future": floor_ms(now) + 1}[at]
        fields: dict[str, Any] = {"idempotency_key": ref.consume_idempotency_key,
                                  "operation_identity": ref.operation_identity}
        if kind == "OTHER_STATE":
            fields["hosted_state"] = "EXPIRED"
        else:
            fields.update(transition_id=f"tr-{permit}", permit_id=permit, permit_digest="d" * 64, transitioned_at=ms,
                          settlement_deadline_at=ms + SETTLEMENT_WINDOW_MS + (1 if bend == "deadline" else 0))
        if bend == "key":
            fields["idempotency_key"] = "e" * 64
        answer = HostedAnswer(kind, **fields)
        fence = lease.fence + (1 if bend == "fence" else 0)
        self._run(RecordConsume(journal=ref, lease_id=lease.lease_id, expected_fence_epoch=fence, answer=answer,
                                now=now))

    # --- provider --------------------------------------------------------------------------------

    @rule(target=leases, ref=journals, worker=workers)
    def take_provider_intent(self, ref, worker):
        op = TakeProviderIntent(journal=ref, lease_id=worker, now=self.clock)
        return self._granted(op, self._run(op), "provider")

    @rule(lease=leases, who=st.sampled_from(WHO), claim=st.sampled_from(("claim-1", "claim-1", "claim-2")),
          outcome=st.sampled_from(OUTCOMES),
          reference=st.sampled_from(("pi_1", "pi_1", "pi_2")))
    def report(self, lease, who, claim, outcome, reference):
        """The provider owner's caller-asserted report (a different one for the same lease: report_conflict)."""
        lease = self._who(lease, who)
        self._run(ReportSubmission(journal=lease.journal, lease_id=lease.lease_id, expected_fence_epoch=lease.fence,
                                   claim_id=claim, provider_submission_id=f"sub-{claim}", payment_reference=reference,
                                   caller_outcome=outcome, now=self.clock))

    @rule(ref=journals, field=st.sampled_from((None, *REPORT_FIELDS)), gap=st.sampled_from(RETRY_GAPS[1:]))
    def report_again(self, ref, field, gap):
        """The report-retry boundary: the holder of a provider lease reports again, later, the stored report
        exactly (submission_reported, nothing written) or with one field changed (report_conflict)."""
        record = self._record(ref)
        if record is None or record.lease_kind != "provider" or record.claim_id is None or not self._holder(record):
            return
        report = dict(zip(REPORT_FIELDS, record.report, strict=True))
        if field is not None:
            others = {"claim_id": ("claim-1", "claim-2"), "provider_submission_id": ("sub-claim-1", "sub-claim-2"),
                      "payment_reference": ("pi_1", "pi_2"), "caller_outcome": OUTCOMES}[field]
            report[field] = next(value for value in others if value != report[field])
        self.clock += gap
        self._run(ReportSubmission(journal=ref, lease_id=self._holder(record), expected_fence_epoch=record.fence_epoch,
                                   now=self.clock, **report))

    # --- reconciliation and settlement -------------------------------------------------------------

    @rule(target=leases, ref=journals, worker=workers)
    def take_reconcile_lease(self, ref, worker):
        op = TakeReconcileLease(journal=ref, lease_id=worker, now=self.clock)
        return self._granted(op, self._run(op), "reconcile")

    @rule(lease=leases, who=st.sampled_from(WHO),
          verdict=st.sampled_from(VERDICTS),
          evidence_class=st.sampled_from(("verified", "verified", "verified", "caller", "other_provider")),
          verified=st.sampled_from((True, True, True, False)), fenced=st.booleans(),
          reference=st.sampled_from(("stored", "stored", "none", "foreign")),
          receipt=st.sampled_from(("fits", "fits", "fits", "always", "never")),
          identity=st.sampled_from((True, True, True, True, False)))
    def apply_evidence(self, lease, who, verdict, evidence_class, verified, fenced, reference, receipt, identity):
        """Settlement evidence from reconciliation or the provider: decisive only when exact and verified."""
        lease = self._who(lease, who)
        ref = lease.journal
        record = self._record(ref)
        own = VERIFIED[ref.provider]
        cls = {"verified": own, "caller": "CALLER_ASSERTED",
               "other_provider": next(v for v in VERIFIED.values() if v != own)}[evidence_class]
        stored = record.payment_reference if record is not None else None
        if reference == "stored":
            payment = None if verdict == "NOT_SUBMITTED" else (stored or "pi_1")
        else:
            payment = None if reference == "none" else "pi_foreign"
        if receipt == "fits":
            # a receipt where the decision is terminal (what a correct caller sends)
            owner_path = record is not None and record.state == "PROVIDER_INTENT"
            terminal = verdict == "SETTLED" or (verdict in ("FAILED", "NOT_SUBMITTED") and (owner_path or (
                fenced and record is not None and self.clock < _deadline(record))))
            has_receipt = terminal
        else:
            has_receipt = receipt == "always"
        evidence = Evidence(cls, verified, verdict, ref.operation_identity if identity else "f" * 64, payment, fenced,
                            RECEIPT if has_receipt else None)
        self._run(ApplyEvidence(journal=ref, lease_id=lease.lease_id, expected_fence_epoch=lease.fence,
                                evidence=evidence, now=self.clock))

    @rule(ref=journals, result=st.sampled_from(("COMMIT", "RELEASE")), claimed=st.booleans(), fenced=st.booleans())
    def manual_terminal(self, ref, result, claimed, fenced):
        """The direct processor path: always caller-asserted, whatever the caller claims about verification."""
        self._run(ManualTerminal(journal=ref, processor_result=result, claimed_independent_verification=claimed,
                                 submission_fenced=fenced, now=self.clock))

    @rule(ref=journals)
    def close_window(self, ref):
        self._run(CloseWindow(journal=ref, now=self.clock))

    # --- the happy path, one step at a time --------------------------------------------------------

    def _holder(self, record: Journal) -> str | None:
        """The worker holding (or last holding) the record's lease."""
        fingerprint = record.lease_owner_fingerprint
        return next((w for w in WORKERS if owner_fingerprint_of(record.journal_key, w) == fingerprint), None)

    def _advance(self, ref: JournalRef, worker: str, verdict: str, fenced: bool, twist: str) -> Any:
        """The next call on this journal, chosen from its stored state, so that deep states (provider intent,
        reconciliation, terminals) come within a few rules. `straight`: what a correct worker does next (the
        holder, where there is one); `wrong`: a call that state must refuse or observe; `late`: the clock first
        moves to where the state's next boundary is (a lease expiry, the deadline). Returns a granted lease."""
        record = self._record(ref)
        if record is None:
            self._run(Begin(journal=ref, now=self.clock))
            return multiple()
        state, holder = record.state, self._holder(record) or worker
        held = record.lease_expires_at is not None and self.clock < record.lease_expires_at
        if twist == "late":
            if state == "CONSUME_INTENT" and held and verdict == "NOT_SUBMITTED":
                # the response is lost for the whole window: a recovery's replay finds it closed
                self.clock = max(self.clock, record.consume_intent_at + timedelta(milliseconds=SETTLEMENT_WINDOW_MS))
                return multiple()
            if state == "PROVIDER_INTENT" and held and fenced:
                # the owner goes silent until exactly the deadline (its lease ends there at the latest): the
                # processor's manual terminal comes at the deadline, where a release must be refused
                self.clock = max(self.clock, _deadline(record))
                self._run(ManualTerminal(journal=ref, processor_result="COMMIT" if verdict == "SETTLED" else
                                         "RELEASE", claimed_independent_verification=False, submission_fenced=True,
                                         now=self.clock))
                return multiple()
            if state in ("CONSUME_INTENT", "PROVIDER_INTENT", "RECONCILE_INTENT") and held:
                # exactly at the expiry (expired): the next worker's takeover, at equality
                self.clock, held, twist = record.lease_expires_at, False, "straight"
            elif state in ("CONSUMED", "PROVIDER_INTENT", "RECONCILE_INTENT", "OUTCOME_UNKNOWN"):
                self.clock = max(self.clock, _deadline(record))  # exactly at the deadline (or later): elapsed
                if state != "CONSUMED":  # a manual terminal at the deadline (a release there is refused)
                    self._run(ManualTerminal(journal=ref, processor_result="COMMIT" if verdict == "SETTLED" else
                                             "RELEASE", claimed_independent_verification=fenced,
                                             submission_fenced=fenced, now=self.clock))
                    return multiple()
            elif self.last_call is not None and self.last_call.journal == ref:
                self._run(attrs.evolve(self.last_call, now=self.clock))  # the answer was lost: the same call again
                return multiple()
        now = self.clock
        if state == "CONSUME_INTENT" and not held and twist == "wrong":
            self._run(RecordConsume(journal=ref, lease_id=holder, expected_fence_epoch=record.fence_epoch,
                                    answer=self._hosted(ref, record, "FRESH"), now=now))  # too late: rejected
            return multiple()
        if state == "PROVIDER_INTENT" and not held and twist == "wrong" and verdict == "SETTLED":
            self._run(ReportSubmission(journal=ref, lease_id=holder, expected_fence_epoch=record.fence_epoch,
                                       claim_id="claim-1", provider_submission_id="sub-1", payment_reference="pi_1",
                                       caller_outcome="succeeded", now=now))  # too late: rejected
            return multiple()
        if state == "BEGUN" or (state == "CONSUME_INTENT" and not held):
            op = ClaimConsume(journal=ref, lease_id=worker, now=now)
            return self._granted(op, self._run(op), "consume")
        if state == "CONSUME_INTENT":
            ms = floor_ms(record.consume_intent_at)
            late = now >= ms_time(ms + SETTLEMENT_WINDOW_MS)  # a recovery after the window: a replay is closed
            kind = "FRESH" if (twist == "wrong") == late else "IDEMPOTENT_CONSUMED"
            answer = HostedAnswer(kind, ref.consume_idempotency_key, ref.operation_identity, "CONSUMED", "tr-permit-1",
                                  "permit-1", "d" * 64, ms, ms + SETTLEMENT_WINDOW_MS)
            if twist == "wrong" and not late:  # a hosted answer that must not be recorded
                answer = {"SETTLED": attrs.evolve(answer, idempotency_key="e" * 64),
                          "FAILED": attrs.evolve(answer, settlement_deadline_at=ms + SETTLEMENT_WINDOW_MS + 1),
                          "NOT_SUBMITTED": HostedAnswer("OTHER_STATE", ref.consume_idempotency_key,
                                                        ref.operation_identity, "EXPIRED")}[verdict]
            self._run(RecordConsume(journal=ref, lease_id=holder, expected_fence_epoch=record.fence_epoch,
                                    answer=answer, now=now))
        elif state == "CONSUMED" and twist == "straight":
            op = TakeProviderIntent(journal=ref, lease_id=worker, now=now)
            return self._granted(op, self._run(op), "provider")
        elif state == "CONSUMED":
            self._run(CloseWindow(journal=ref, now=now))
        elif state in ("PROVIDER_INTENT", "RECONCILE_INTENT") and held and twist == "wrong":
            # the holder (or another worker) asks for the lease it already holds, or applies before reporting
            if state == "PROVIDER_INTENT" and record.claim_id is None:
                self._run(ApplyEvidence(journal=ref, lease_id=holder, expected_fence_epoch=record.fence_epoch,
                                        evidence=self._evidence(ref, record, verdict, fenced), now=now))
            elif verdict != "SETTLED" or not fenced:
                # evidence that must not decide: UNKNOWN, caller-asserted, another journal's, a foreign payment
                good = self._evidence(ref, record, "FAILED", True)
                bent = {"FAILED": {"verdict": "UNKNOWN"},
                        "SETTLED": {"evidence_class": "CALLER_ASSERTED", "independent_verification": False},
                        "NOT_SUBMITTED": {"operation_identity": "f" * 64} if fenced else
                        {"payment_reference": "pi_foreign", "verdict": "SETTLED"}}[verdict]
                self._run(ApplyEvidence(journal=ref, lease_id=holder, expected_fence_epoch=record.fence_epoch,
                                        evidence=attrs.evolve(good, **bent), now=now))
            elif state == "PROVIDER_INTENT":
                self._run(TakeProviderIntent(journal=ref, lease_id=worker, now=now))
            else:
                self._run(TakeReconcileLease(journal=ref, lease_id=worker, now=now))
        elif state == "PROVIDER_INTENT" and held and record.claim_id is None:
            self._run(ReportSubmission(journal=ref, lease_id=holder, expected_fence_epoch=record.fence_epoch,
                                       claim_id="claim-1", provider_submission_id="sub-1", payment_reference="pi_1",
                                       caller_outcome="succeeded", now=now))
        elif state in ("PROVIDER_INTENT", "RECONCILE_INTENT") and held:
            self._run(ApplyEvidence(journal=ref, lease_id=holder, expected_fence_epoch=record.fence_epoch,
                                    evidence=self._evidence(ref, record, verdict, fenced), now=now))
        elif state in ("PROVIDER_INTENT", "RECONCILE_INTENT", "OUTCOME_UNKNOWN") and twist == "wrong":
            result = "COMMIT" if verdict == "SETTLED" else "RELEASE"
            self._run(ManualTerminal(journal=ref, processor_result=result, claimed_independent_verification=fenced,
                                     submission_fenced=fenced, now=now))
        elif state == "PROVIDER_INTENT" and verdict == "NOT_SUBMITTED":
            self._run(TakeProviderIntent(journal=ref, lease_id=worker, now=now))  # abandoned: never resubmitted
        elif state == "PROVIDER_INTENT" and verdict == "SETTLED" and fenced:
            # the processor confirms the abandoned submission by hand, claiming it verified: caller-asserted
            self._run(ManualTerminal(journal=ref, processor_result="COMMIT", claimed_independent_verification=True,
                                     submission_fenced=True, now=now))
        elif state in ("PROVIDER_INTENT", "RECONCILE_INTENT", "OUTCOME_UNKNOWN"):
            op = TakeReconcileLease(journal=ref, lease_id=worker, now=now)
            return self._granted(op, self._run(op), "reconcile")
        elif twist == "wrong":
            result = "COMMIT" if verdict == "SETTLED" else "RELEASE"
            self._run(ManualTerminal(journal=ref, processor_result=result, claimed_independent_verification=fenced,
                                     submission_fenced=fenced, now=now))
        else:
            self._run(Get(journal=ref, now=now))
        return multiple()

    @staticmethod
    def _hosted(ref: JournalRef, record: Journal, kind: str) -> HostedAnswer:
        """The hosted answer for the record's claim, transitioned at the claim (a correct answer)."""
        ms = floor_ms(record.consume_intent_at)
        return HostedAnswer(kind, ref.consume_idempotency_key, ref.operation_identity, "CONSUMED", "tr-permit-1",
                            "permit-1", "d" * 64, ms, ms + SETTLEMENT_WINDOW_MS)

    def _evidence(self, ref: JournalRef, record: Journal, verdict: str, fenced: bool) -> Evidence:
        """Verified evidence for the record as a correct reconciler sends it (a receipt when it decides)."""
        owner_path = record.state == "PROVIDER_INTENT"
        if owner_path and verdict == "NOT_SUBMITTED":
            verdict = "FAILED"  # beside a reported payment reference, NOT_SUBMITTED contradicts it
        terminal = verdict == "SETTLED" or owner_path or (fenced and self.clock < _deadline(record))
        payment = None if verdict == "NOT_SUBMITTED" else (record.payment_reference or "pi_1")
        return Evidence(VERIFIED[ref.provider], True, verdict, ref.operation_identity, payment, fenced,
                        RECEIPT if terminal else None)

    # --- deep journeys on fresh journals ------------------------------------------------------------

    def deep_journey(self, base, journey, verdict, fenced, reported, receipt, claimed, retry, gap, bend="none"):
        """A fresh journal taken straight (begin, claim, the hosted answer, provider intent) to where a journey
        decides, its clock placed at the boundary that matters:
        - `recovery`: a second worker's claim exactly at the consume lease's expiry, then its recovery of the
          lost hosted answer (IDEMPOTENT_CONSUMED);
        - `unbound`: a hosted answer whose deadline is 1 ms off transitioned_at + 15 min (`bend`), then the
          right one;
        - `late_provider`: the provider intent taken `gap` (< 120 s) before the deadline (its lease capped there);
        - `owner`: the owner's report and its verified evidence;
        - `early_reconcile`: a reconciler asking `gap` before the provider lease ends (an active submission);
        - `reconcile`: after the provider lease expired (an owner that never reported asks again first), a
          reconciler's lease and its verified evidence, fenced or not;
        - `manual`: the processor's manual terminal on the abandoned submission, claiming verification or not;
        - `at_deadline`: exactly at the deadline, the window's close, then a fenced manual terminal.
        The decisive call is then made again (`retry`: its answer was lost). Evidence carries a receipt where the
        model's decision is terminal, or (`flipped`) exactly where it is not. The other rules reach these points
        only through a long chain of the right advances on one of two journals, each of which ends for good at
        its first terminal: variants whose hazard sits there survived whole ci runs."""
        self.fresh_journals += 1
        ref = attrs.evolve(base, operation_id=str(uuid.UUID(int=FRESH_ID_BASE + self.fresh_journals, version=4)))
        consumer, owner, reconciler = WORKERS
        self._run(Begin(journal=ref, now=self.clock))
        claim = self._run(ClaimConsume(journal=ref, lease_id=consumer, now=self.clock)).output
        record = self._record(ref)
        hosted = self._hosted(ref, record, "FRESH")
        if journey == "recovery":  # the consume answer was lost: the next worker takes over at the expiry
            self.clock = max(self.clock, record.lease_expires_at)
            taken = self._run(ClaimConsume(journal=ref, lease_id=owner, now=self.clock)).output
            recovery = RecordConsume(journal=ref, lease_id=owner, expected_fence_epoch=taken["fence_epoch"],
                                     answer=attrs.evolve(hosted, kind="IDEMPOTENT_CONSUMED"), now=self.clock)
            self._run(recovery)
            if retry:
                self._run(attrs.evolve(recovery, now=self.clock))
            return ref
        if journey == "unbound":  # never recorded: the deadline is bound to the transition
            wrong = hosted.settlement_deadline_at + (1 if bend == "deadline_later" else -1)
            self._run(RecordConsume(journal=ref, lease_id=consumer, expected_fence_epoch=claim["fence_epoch"],
                                    answer=attrs.evolve(hosted, settlement_deadline_at=wrong), now=self.clock))
        self._run(RecordConsume(journal=ref, lease_id=consumer, expected_fence_epoch=claim["fence_epoch"],
                                answer=hosted, now=self.clock))
        deadline = _deadline(self._record(ref))
        if journey == "late_provider":  # the provider lease is capped at the deadline (rule tpi.first)
            self.clock = max(self.clock, deadline - gap)
        self._run(TakeProviderIntent(journal=ref, lease_id=owner, now=self.clock))
        record = self._record(ref)
        if journey in ("late_provider", "unbound"):
            return ref
        if reported or journey == "owner":
            self._run(ReportSubmission(journal=ref, lease_id=owner, expected_fence_epoch=record.fence_epoch,
                                       claim_id="claim-1", provider_submission_id="sub-1", payment_reference="pi_1",
                                       caller_outcome="succeeded", now=self.clock))
        if journey == "owner":
            decisive = self._deep_evidence(ref, owner, verdict, fenced, receipt)
        elif journey == "early_reconcile":  # the submission is still active: never overwritten
            self.clock = max(self.clock, record.lease_expires_at - gap)
            decisive = TakeReconcileLease(journal=ref, lease_id=reconciler, now=self.clock)
            self._run(decisive)
        elif journey == "at_deadline":
            self.clock = max(self.clock, deadline)
            self._run(CloseWindow(journal=ref, now=self.clock))  # a provider-owned journal never closes
            decisive = ManualTerminal(journal=ref, processor_result="COMMIT" if verdict == "SETTLED" else "RELEASE",
                                      claimed_independent_verification=claimed, submission_fenced=True,
                                      now=self.clock)
            self._run(decisive)
        else:
            self.clock = max(self.clock, record.lease_expires_at + min(gap, timedelta(seconds=30)))  # abandoned
            if journey == "manual":
                decisive = ManualTerminal(journal=ref, processor_result="RELEASE" if verdict == "FAILED" else
                                          "COMMIT", claimed_independent_verification=claimed,
                                          submission_fenced=fenced, now=self.clock)
                self._run(decisive)
            else:
                if not reported:  # the owner comes back: an abandoned intent is reconciled, never resubmitted
                    self._run(TakeProviderIntent(journal=ref, lease_id=owner, now=self.clock))
                self._run(TakeReconcileLease(journal=ref, lease_id=reconciler, now=self.clock))
                decisive = self._deep_evidence(ref, reconciler, verdict, fenced, receipt)
        if retry:  # the answer was lost: the same call again
            self._run(attrs.evolve(decisive, now=self.clock))
        return ref

    def _deep_evidence(self, ref: JournalRef, worker: str, verdict: str, fenced: bool, receipt: str) -> ApplyEvidence:
        """The lease holder's verified evidence, with a receipt where the model's decision is terminal (what a
        correct caller sends) or, `flipped`, exactly where it is not (rule ase.receipt)."""
        record = self._record(ref)
        owner_path = record.state == "PROVIDER_INTENT"
        if verdict == "SETTLED":
            terminal = True
        elif verdict in ("FAILED", "NOT_SUBMITTED"):
            terminal = owner_path or (fenced and self.clock < _deadline(record))
        else:
            terminal = False  # not decisive: reconciliation continues
        payment = None if verdict == "NOT_SUBMITTED" else (record.payment_reference or "pi_1")
        evidence = Evidence(VERIFIED[ref.provider], True, verdict, ref.operation_identity, payment, fenced,
                            RECEIPT if terminal != (receipt == "flipped") else None)
        op = ApplyEvidence(journal=ref, lease_id=worker, expected_fence_epoch=record.fence_epoch, evidence=evidence,
                           now=self.clock)
        self._run(op)
        return op

    # --- near misses of the stored state -----------------------------------------------------------

    @staticmethod
    def _stored_evidence(ref: JournalRef, record: Journal) -> Evidence | None:
        """The stored evidence as its exact retry presents it (the stored receipt), if it is complete."""
        if record.evidence_verdict is None or record.submission_fenced is None:
            return None  # a report's or a manual terminal's: no verdict (a report has no fence flag either)
        return Evidence(record.evidence_class, record.independent_verification, record.evidence_verdict,
                        ref.operation_identity, record.payment_reference, record.submission_fenced,
                        record.terminal_receipt_digest)

    @staticmethod
    def _stored_consume(ref: JournalRef, record: Journal, kind: str) -> HostedAnswer:
        """The hosted answer whose permit group is the stored one (a retry of the recorded consume)."""
        return HostedAnswer(kind, ref.consume_idempotency_key, ref.operation_identity, "CONSUMED",
                            *record.permit_group)

    @rule(ref=journals, worker=workers, verdict=st.sampled_from(("SETTLED", "FAILED", "NOT_SUBMITTED")),
          fenced=st.booleans())
    def fenced_call_by_another_at_the_current_fence(self, ref, worker, verdict, fenced):
        """The lease-owner boundary: what the holder would send next, by another worker at the current fence."""
        record = self._record(ref)
        if record is None or record.lease_owner_fingerprint is None:
            return
        if owner_fingerprint_of(ref.journal_key, worker) == record.lease_owner_fingerprint:
            worker = WORKERS[(WORKERS.index(worker) + 1) % len(WORKERS)]
        fenced_call = {"journal": ref, "lease_id": worker, "expected_fence_epoch": record.fence_epoch,
                       "now": self.clock}
        if record.lease_kind == "consume":
            stored = record.consume_transition_id is not None
            answer = self._stored_consume(ref, record, "FRESH") if stored else self._hosted(ref, record, "FRESH")
            self._run(RecordConsume(answer=answer, **fenced_call))
            return
        if record.lease_kind == "provider":
            report = record.report if record.claim_id is not None else ("claim-1", "sub-1", "pi_1", "succeeded")
            self._run(ReportSubmission(**dict(zip(("claim_id", "provider_submission_id", "payment_reference",
                                                   "caller_outcome"), report, strict=True)), **fenced_call))
        evidence = self._stored_evidence(ref, record) or self._evidence(ref, record, verdict, fenced)
        self._run(ApplyEvidence(evidence=evidence, **fenced_call))

    @rule(ref=journals, field=st.sampled_from(EVIDENCE_FIELDS), choice=st.integers(0, 5))
    def evidence_stored_but_one_field(self, ref, field, choice):
        """The evidence-retry boundary: the stored evidence but for one field, by the holder at the current fence."""
        record = self._record(ref)
        if record is None or record.evidence_class is None or self._holder(record) is None:
            return
        stored = {"evidence_class": record.evidence_class, "independent_verification": record.independent_verification,
                  "verdict": record.evidence_verdict, "payment_reference": record.payment_reference,
                  "submission_fenced": record.submission_fenced}
        unset = [name for name, value in stored.items() if value is None and name != "payment_reference"]
        if len(unset) > 1:
            return  # a report's evidence (no verdict, no fence flag): no valid evidence is one field from it
        field = unset[0] if unset else field  # a manual terminal's (no verdict): only a verdict is one field off
        domain = {"evidence_class": EVIDENCE_CLASSES, "independent_verification": (True, False), "verdict": VERDICTS,
                  "payment_reference": (None, "pi_1", "pi_2", "pi_foreign"), "submission_fenced": (True, False)}
        others = [value for value in domain[field] if value != stored[field]]
        stored[field] = others[choice % len(others)]
        evidence = Evidence(operation_identity=ref.operation_identity, receipt_digest=record.terminal_receipt_digest,
                            **stored)
        self._run(ApplyEvidence(journal=ref, lease_id=self._holder(record), expected_fence_epoch=record.fence_epoch,
                                evidence=evidence, now=self.clock))

    @rule(ref=journals, field=st.sampled_from(CONSUME_FIELDS), later=st.booleans(),
          kind=st.sampled_from(("IDEMPOTENT_CONSUMED", "FRESH")))
    def consume_stored_but_one_field(self, ref, field, later, kind):
        """The consume-retry boundary: the stored permit group but for one field, by the holder at the current
        fence (an id or digest replaced, a time 1 ms later or earlier)."""
        record = self._record(ref)
        if record is None or record.consume_transition_id is None or self._holder(record) is None:
            return
        answer = self._stored_consume(ref, record, kind)
        value = getattr(answer, field)
        if isinstance(value, int):
            changed = value + (1 if later else -1)
        elif field == "permit_digest":
            changed = "e" * 64 if value != "e" * 64 else "d" * 64
        else:
            changed = f"{value}-other"
        self._run(RecordConsume(journal=ref, lease_id=self._holder(record), expected_fence_epoch=record.fence_epoch,
                                answer=attrs.evolve(answer, **{field: changed}), now=self.clock))

    # --- the trusted clock -----------------------------------------------------------------------

    @rule(step=st.sampled_from(ADVANCES))
    def advance_clock(self, step):
        self.clock += step

    @rule(ref=journals, edge=st.sampled_from(tuple(EDGES)))
    def clock_to_lease_expiry(self, ref, edge):
        """Exactly at the stored lease's expiry (expired: equality is expired), 1 us before or after it."""
        record = self._record(ref)
        if record is not None and record.lease_expires_at is not None:
            self.clock = record.lease_expires_at + EDGES[edge]

    @rule(ref=journals, edge=st.sampled_from(tuple(EDGES)))
    def clock_to_deadline(self, ref, edge):
        """Exactly at the settlement deadline (elapsed), 1 us before or after it."""
        record = self._record(ref)
        if record is not None and record.settlement_deadline_at is not None:
            self.clock = ms_time(record.settlement_deadline_at) + EDGES[edge]

    @rule(ref=journals, worker=workers, kind=st.sampled_from(("claim", "provider", "reconcile", "close")))
    def earlier_reading(self, ref, worker, kind):
        """A call handed a reading 1 us before the record's last write (a clock that went back)."""
        record = self._record(ref)
        if record is None:
            return
        now = record.updated_at - US
        if kind == "claim":
            self._run(ClaimConsume(journal=ref, lease_id=worker, now=now))
        elif kind == "provider":
            self._run(TakeProviderIntent(journal=ref, lease_id=worker, now=now))
        elif kind == "reconcile":
            self._run(TakeReconcileLease(journal=ref, lease_id=worker, now=now))
        else:
            self._run(CloseWindow(journal=ref, now=now))

    # --- lost responses and rejected commits -------------------------------------------------------

    @precondition(lambda self: self.last_call is not None)
    @rule(gap=st.sampled_from(RETRY_GAPS))
    def retry_last_call(self, gap):
        """The caller never saw the last answer and makes the same call again after `gap`."""
        self.clock += gap
        self._run(attrs.evolve(self.last_call, now=self.clock))

    @rule(ref=journals, worker=workers, kind=st.sampled_from(("begin", "claim", "provider", "reconcile", "close")),
          retry=st.booleans())
    def commit_fails(self, ref, worker, kind, retry):
        """The server rejects the commit (nothing applied); optionally the caller's retry."""
        make = {
            "begin": lambda **kw: Begin(journal=ref, **kw),
            "claim": lambda **kw: ClaimConsume(journal=ref, lease_id=worker, **kw),
            "provider": lambda **kw: TakeProviderIntent(journal=ref, lease_id=worker, **kw),
            "reconcile": lambda **kw: TakeReconcileLease(journal=ref, lease_id=worker, **kw),
            "close": lambda **kw: CloseWindow(journal=ref, **kw),
        }[kind]
        self._run(make(now=self.clock, commit_fails=True))
        if retry:
            self._run(make(now=self.clock))

    # --- faults ------------------------------------------------------------------------------------

    @precondition(lambda self: self._fault_allowed())
    @rule(ref=journals, kind=st.sampled_from(FAULT_KINDS), worker=workers)
    def inject_fault(self, ref, kind, worker):
        """A broken writer damages the journal's documents; the next call on it must fail closed."""
        fault = InjectFault(journal=ref, kind=kind)
        if self._record(ref) is None or not GATEWAY.step(self.lockstep.state, fault)[1].wrote:
            return
        self.last_fault_at = len(self.lockstep.ops)
        self._run(fault)
        self._run(ClaimConsume(journal=ref, lease_id=worker, now=self.clock))

    # --- invariants and cleanup ------------------------------------------------------------------

    @invariant()
    def stored_documents_match_model(self):
        self.lockstep.check_documents()  # a no-op after a step (Lockstep.run read back already)

    @invariant()
    def stored_documents_keep_the_invariants(self):
        docs: dict[str, dict[str, Any]] = {}
        for _key, record in self.lockstep.state.records:
            if isinstance(record, Journal):
                docs.update(record_documents(record))
        violations = invariant_violations(docs, namespace_id=NAMESPACE)
        if violations:
            raise InvariantViolated("stored documents break G-INV-1..12:\n"
                                    + "\n".join(f"  {violation}" for violation in violations)
                                    + "\nprogram:\n"
                                    + "\n".join(f"  {i}. {line}" for i, line in enumerate(self.lockstep.program(), 1)))

    def teardown(self):
        end_example(self)


def _advance_rule(copy: int) -> Any:
    def advance(self, ref, worker, verdict, fenced, twist):
        return self._advance(ref, worker, verdict, fenced, twist)

    advance.__name__ = advance.__qualname__ = f"advance_journal_{copy}"
    advance.__doc__ = "The next call on a journal, from its stored state (GatewayMachine._advance)."
    return rule(target=GatewayMachine.leases, ref=GatewayMachine.journals, worker=workers,
                verdict=st.sampled_from(("SETTLED", "FAILED", "NOT_SUBMITTED")), fenced=st.booleans(),
                twist=st.sampled_from(TWISTS))(advance)


# ADVANCE_RULES copies of the same rule: Hypothesis picks rules evenly, and a program must make several advances
# on one journal to reach reconciliation and the terminals (set before Hypothesis first collects the rules).
for _copy in range(ADVANCE_RULES):
    setattr(GatewayMachine, f"advance_journal_{_copy}", _advance_rule(_copy))


def _journey_rule(journey: str, **draws: Any) -> Any:
    fixed = {"verdict": st.just("SETTLED"), "fenced": st.just(True), "reported": st.just(True),
             "receipt": st.just("fits"), "claimed": st.just(False), "retry": st.booleans(),
             "gap": st.sampled_from(DEEP_GAPS), "bend": st.just("none")}

    def journey_rule(self, base, verdict, fenced, reported, receipt, claimed, retry, gap, bend):
        return self.deep_journey(base, journey, verdict, fenced, reported, receipt, claimed, retry, gap, bend)

    journey_rule.__name__ = journey_rule.__qualname__ = f"journey_{journey}"
    journey_rule.__doc__ = f"A fresh journal to where the `{journey}` journey decides (GatewayMachine.deep_journey)."
    return precondition(lambda self: self.fresh_journals < MAX_FRESH_JOURNALS)(
        rule(target=GatewayMachine.journals, base=st.sampled_from((STRIPE, X402)), **(fixed | draws))(journey_rule))


# One rule per journey, so each comes up as often as any rule (a journey parameter drawn inside one rule would
# come up by Hypothesis's preference for its first values). The draws of each put first what its hazard needs:
# Hypothesis's early, small examples take first values.
JOURNEYS: dict[str, dict[str, Any]] = {
    "recovery": {},
    "unbound": {"bend": st.sampled_from(("deadline_later", "deadline_earlier"))},
    "late_provider": {},
    "owner": {"verdict": st.sampled_from(("UNKNOWN", "FAILED", "SETTLED", "NOT_SUBMITTED", "PENDING")),
              "fenced": st.booleans(), "receipt": st.sampled_from(("fits", "flipped"))},
    "early_reconcile": {"reported": st.booleans()},
    "reconcile": {"verdict": st.sampled_from(("FAILED", "UNKNOWN", "SETTLED", "NOT_SUBMITTED", "CONFLICTING")),
                  "fenced": st.booleans(), "reported": st.booleans(),
                  "receipt": st.sampled_from(("fits", "fits", "flipped"))},
    "manual": {"verdict": st.sampled_from(("SETTLED", "FAILED")), "claimed": st.sampled_from((True, False)),
               "fenced": st.booleans(), "reported": st.booleans()},
    "at_deadline": {"verdict": st.sampled_from(("FAILED", "SETTLED")), "claimed": st.booleans(),
                    "reported": st.booleans()},
}
for _journey, _draws in JOURNEYS.items():
    setattr(GatewayMachine, f"journey_{_journey}", _journey_rule(_journey, **_draws))


def _deadline(record: Journal) -> datetime:
    """The settlement deadline, or the end of time before the hosted transition fixed one."""
    return ms_time(record.settlement_deadline_at) if record.settlement_deadline_at is not None else FAR_FUTURE


class TestGatewayMachine(BoundToEmulator, GatewayMachine.TestCase):
    """`GatewayMachine.TestCase` with the selected profile's settings and this machine's budget, bound to an
    emulator project."""

    settings = machine_settings()
    machine = GatewayMachine



# --- the known-bad catalogue (stateful_tests/test_known_bad.py; SuiteParts.machine_known_bad names it) ---------

# Sequential variants the machine does not yet catch reliably within the ci budget (3 rounds x 40 examples):
# listed, with what was measured, rather than run as a test that fails by chance. Remove one once it is.
# Empty since GatewayMachine.deep_journey: unfenced_release_after_reconciliation, manual_trusts_claimed_verification,
# uncapped_provider_lease and unknown_evidence_releases were listed here (survived 3 rounds in some ci runs) until
# the machine took fresh journals straight to where their hazards decide.
NOT_YET_RELIABLE: dict[str, str] = {}


def _known_bad() -> MachineCatalogue:
    from known_bad.gateway import VARIANTS

    return MachineCatalogue(
        machine=GatewayMachine,
        machine_settings=machine_settings,
        run=tuple(v.name for v in VARIANTS if not v.concurrent and v.name not in NOT_YET_RELIABLE),
        out_of_reach=NOT_YET_RELIABLE,
        concurrent=tuple(v.name for v in VARIANTS if v.concurrent),  # the race and parallel suites'
        result_prefix="gateway-machine-",
        machine_prefix="KnownBadGateway",
        detections=(LockstepMismatch, InvariantViolated),
    )


KNOWN_BAD = _known_bad()
