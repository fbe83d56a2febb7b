"""The settling operations: apply_settlement_evidence, record_manual_terminal, close_submission_window.

Rows of docs/gateway-contract.md section 8 in precedence order. Only a lease owner writes evidence, only
exact independently verified evidence decides, and no failure evidence releases at or after the deadline
or, once the submission was abandoned or reconciliation began, without `submission_fenced`.
"""

from __future__ import annotations

from . import constants as c
from .ops import ApplyEvidence, CloseWindow, ManualTerminal
from .results import answer, error
from .state import GatewayState, Journal
from .writes import elapsed, held_at, is_holder, precheck, write

_TERMINAL = (c.COMMIT, c.RELEASE)
_BEFORE_PROVIDER = (c.BEGUN, c.CONSUME_INTENT, c.CONSUMED)
_LEASED = (c.PROVIDER_INTENT, c.RECONCILE_INTENT)


def _same_evidence(j: Journal, op: ApplyEvidence) -> bool:
    e = op.evidence
    stored = (
        j.evidence_class,
        j.independent_verification,
        j.evidence_verdict,
        j.submission_fenced,
        j.terminal_receipt_digest,
        j.payment_reference,
        j.operation_identity,
    )
    given = (
        e.evidence_class,
        e.independent_verification,
        e.verdict,
        e.submission_fenced,
        e.receipt_digest,
        e.payment_reference,
        e.operation_identity,
    )
    return is_holder(j, op) and _typed(stored) == _typed(given)


def _typed(values: tuple) -> tuple:
    return tuple((type(v), v) for v in values)  # True is not 1


def apply_evidence(state: GatewayState, op: ApplyEvidence):
    j = precheck(state, op)
    if not isinstance(j, Journal):
        return state, j
    e, now = op.evidence, op.now
    if _same_evidence(j, op):
        if j.state == c.COMMIT and j.terminal_path != c.PATH_MANUAL:
            return state, answer("ase.retry_committed", c.COMMITTED, j)
        if j.state == c.RELEASE and j.terminal_path != c.PATH_MANUAL:
            return state, answer("ase.retry_released", c.RELEASED, j)
        if j.state == c.OUTCOME_UNKNOWN:
            return state, answer("ase.retry_unknown", c.OUT_UNKNOWN, j)
    if j.state in (*_TERMINAL, c.SWC):
        return state, error("ase.terminal_conflict", c.TERMINAL_CONFLICT)
    if j.state not in _LEASED or not is_holder(j, op):
        return state, error("ase.no_lease", c.LEASE_REJECTED)
    if now >= j.lease_expires_at:
        return state, error("ase.expired", c.LEASE_REJECTED)
    owner_path = j.state == c.PROVIDER_INTENT
    if owner_path and j.claim_id is None:
        return state, error("ase.not_reported", c.SUBMISSION_NOT_REPORTED)
    verified = c.VERIFIED_CLASS[j.provider]
    if e.operation_identity != j.operation_identity or e.evidence_class not in (c.CALLER_ASSERTED, verified):
        return state, error("ase.binding", c.EVIDENCE_MISMATCH)
    if e.evidence_class != verified or e.independent_verification is not True or e.verdict not in c.DECISIVE_VERDICTS:
        return state, answer("ase.continues", c.RECONCILIATION_CONTINUES, j)  # fail closed; no lease extension
    if e.verdict == c.NOT_SUBMITTED:
        foreign_reference = e.payment_reference is not None or j.payment_reference is not None
    else:
        foreign_reference = e.payment_reference is None or j.payment_reference not in (None, e.payment_reference)
    if foreign_reference:
        return state, error("ase.reference", c.EVIDENCE_MISMATCH)
    late = elapsed(j, now)
    if e.verdict == c.SETTLED:
        decision = c.COMMIT  # a canonical confirmed settlement may commit after the deadline
    elif owner_path:
        decision = c.RELEASE  # the held provider lease ends at the deadline at the latest
    else:
        decision = c.OUTCOME_UNKNOWN if late or not e.submission_fenced else c.RELEASE
    if (decision in _TERMINAL) != (e.receipt_digest is not None):
        return state, error("ase.receipt", c.EVIDENCE_MISMATCH)
    fields = {
        "state": decision,
        "evidence_class": e.evidence_class,
        "independent_verification": True,
        "evidence_verdict": e.verdict,
        "submission_fenced": e.submission_fenced,
        "payment_reference": j.payment_reference or e.payment_reference,
    }
    if decision in _TERMINAL:
        path = c.PATH_PROVIDER_OWNER if owner_path else c.PATH_RECONCILIATION
        fields |= {"terminal_path": path, "terminal_receipt_digest": e.receipt_digest}
    if owner_path and decision == c.COMMIT:
        return write(state, op, j, "ase.commit.provider_owner", c.COMMITTED, c.EV_COMMITTED, **fields)
    if owner_path:
        return write(state, op, j, "ase.release.provider_owner", c.RELEASED, c.EV_RELEASED, **fields)
    if decision == c.COMMIT and not late:
        return write(state, op, j, "ase.commit.reconcile", c.COMMITTED, c.EV_COMMITTED, **fields)
    if decision == c.COMMIT:
        return write(state, op, j, "ase.commit.reconcile_late", c.COMMITTED, c.EV_COMMITTED, **fields)
    if decision == c.RELEASE:
        return write(state, op, j, "ase.release.reconcile", c.RELEASED, c.EV_RELEASED, **fields)
    if late:
        return write(state, op, j, "ase.unknown.late", c.OUT_UNKNOWN, c.EV_OUTCOME_UNKNOWN, **fields)
    return write(state, op, j, "ase.unknown.unfenced", c.OUT_UNKNOWN, c.EV_OUTCOME_UNKNOWN, **fields)


def manual_terminal(state: GatewayState, op: ManualTerminal):
    j = precheck(state, op)
    if not isinstance(j, Journal):
        return state, j
    result, fenced = op.processor_result, op.submission_fenced
    retry = j.terminal_path == c.PATH_MANUAL and j.processor_result == result and j.submission_fenced is fenced
    if retry and j.state == c.COMMIT:
        return state, answer("mt.retry_committed", c.COMMITTED, j)
    if retry and j.state == c.RELEASE:
        return state, answer("mt.retry_released", c.RELEASED, j)
    if j.state in (*_TERMINAL, c.SWC):
        return state, error("mt.terminal_conflict", c.TERMINAL_CONFLICT)
    if j.state in _BEFORE_PROVIDER:
        return state, error("mt.no_attempt", c.NOT_APPLICABLE)
    if held_at(j, op.now):
        return state, answer("mt.lease_active", c.PENDING, j)
    # Caller-asserted whatever `claimed_independent_verification` says (G25).
    fields = {
        "evidence_class": c.CALLER_ASSERTED,
        "independent_verification": False,
        "evidence_verdict": None,
        "submission_fenced": fenced,
        "processor_result": result,
        "terminal_path": c.PATH_MANUAL,
        "terminal_receipt_digest": None,
    }
    if result == c.COMMIT:
        return write(state, op, j, "mt.commit", c.COMMITTED, c.EV_MANUAL_COMMITTED, state=c.COMMIT, **fields)
    if elapsed(j, op.now):
        return state, error("mt.release_late", c.RELEASE_REFUSED)
    if not fenced:
        return state, error("mt.release_unfenced", c.RELEASE_REFUSED)
    return write(state, op, j, "mt.release", c.RELEASED, c.EV_MANUAL_RELEASED, state=c.RELEASE, **fields)


def close_window(state: GatewayState, op: CloseWindow):
    j = precheck(state, op)
    if not isinstance(j, Journal):
        return state, j
    if j.state == c.CONSUMED:
        if elapsed(j, op.now):
            return write(state, op, j, "csw.close", c.WINDOW_CLOSED, c.EV_WINDOW_CLOSED, state=c.SWC)
        return state, answer("csw.open", c.WINDOW_OPEN, j)
    if j.state == c.SWC:
        return state, answer("csw.retry", c.WINDOW_CLOSED, j)
    return state, answer("csw.other", c.OBSERVED, j)  # no deadline yet, or provider ownership taken: never closes
