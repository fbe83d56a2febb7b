"""The transition table: every answer `step` can give, one row each (docs/gateway-contract.md, section 8).

Each row id is produced by exactly one branch of `step`; within an operation the rows are in precedence
order. `edges` lists the (from_state, event_type, to_state) triples a writing row may append (the audit
chain's legal edges, G-INV-10). `reachable` is False for rows only damaged data (or nothing) can reach.
"""

from __future__ import annotations

import attrs

from . import constants as c

_TERMINAL = (c.COMMIT, c.RELEASE)


@attrs.frozen
class Transition:
    id: str
    operation: str  # any | begin | get | claim | rcr | tpi | rps | trl | ase | mt | csw | fault
    from_state: str
    condition: str
    outcome: str  # output outcome or error code
    writes: bool
    reachable: bool = True
    edges: tuple[tuple[str | None, str, str], ...] = ()


def _r(id_, from_state, condition, outcome, *, edges=(), reachable=True):
    return Transition(id_, id_.split(".")[0], from_state, condition, outcome, bool(edges), reachable, tuple(edges))


TRANSITIONS: tuple[Transition, ...] = (
    _r(
        "any.not_linearizable", "any", "namespace not declared GLOBAL_SHARED_LINEARIZABLE", c.NAMESPACE_NOT_LINEARIZABLE
    ),
    _r("any.not_begun", "absent", "not begin", c.JOURNAL_NOT_BEGUN),
    _r("any.corrupt", "corrupt", "stored documents are not a v2 record", c.UNRECOGNIZED_RECORD, reachable=False),
    _r("any.binding_conflict", "stored", "stored operation_identity != recomputed", c.BINDING_CONFLICT),
    _r("any.clock_earlier", "stored", "a writing row, now < updated_at", c.GATEWAY_UNAVAILABLE),
    _r("any.overflow", "stored", "write at MAX_REVISION or grant at MAX_FENCE", c.UNRECOGNIZED_RECORD, reachable=False),
    _r("any.commit_failed", "any", "the server rejects the commit; nothing applied", c.GATEWAY_UNAVAILABLE),
    # begin / get
    _r("begin.new", "absent", "rev 1, fence 0", c.BEGUN_NEW, edges=[(None, c.EV_BEGUN, c.BEGUN)]),
    _r("begin.existing", "stored", "same identity", c.BEGUN_EXISTING),
    _r("get.stored", "stored", "read-only observation", c.JOURNAL_STATE),
    # claim_consume_intent(o)
    _r(
        "claim.first",
        c.BEGUN,
        "consume lease now+30 s, fence+1",
        c.CONSUME_CLAIMED,
        edges=[(c.BEGUN, c.EV_CONSUME_CLAIMED, c.CONSUME_INTENT)],
    ),
    _r("claim.held_same", c.CONSUME_INTENT, "active, owner o, fence 1 (stored values)", c.CONSUME_CLAIMED),
    _r(
        "claim.held_same_recovery",
        c.CONSUME_INTENT,
        "active, owner o, fence > 1 (stored values)",
        c.CONSUME_RECOVERY_CLAIMED,
    ),
    _r("claim.held_other", c.CONSUME_INTENT, "active, owner != o", c.PENDING),
    _r(
        "claim.recovery",
        c.CONSUME_INTENT,
        "now >= expiry (any owner): fence+1, new lease, same key",
        c.CONSUME_RECOVERY_CLAIMED,
        edges=[(c.CONSUME_INTENT, c.EV_CONSUME_RECOVERY, c.CONSUME_INTENT)],
    ),
    _r("claim.passed", "later", "any state after CONSUME_INTENT", c.OBSERVED),
    # record_consume_response(o, f, A)
    _r("rcr.retry_consumed", c.CONSUMED, "consume lease of o at f, stored permit group = A's", c.OUT_CONSUMED),
    _r("rcr.retry_closed", c.SWC, "consume lease of o at f, stored permit group = A's", c.WINDOW_CLOSED),
    _r("rcr.no_lease", "any", "not CONSUME_INTENT, or owner != o, or fence != f", c.LEASE_REJECTED),
    _r("rcr.expired", c.CONSUME_INTENT, "owner o, fence f, now >= expiry", c.LEASE_REJECTED),
    _r("rcr.mismatch", c.CONSUME_INTENT, "held; A's idempotency key or identity differs", c.CONSUME_RESPONSE_MISMATCH),
    _r("rcr.unresolved", c.CONSUME_INTENT, "held; A is OTHER_STATE", c.CONSUME_UNRESOLVED),
    _r(
        "rcr.unbound",
        c.CONSUME_INTENT,
        "held; deadline != transitioned + window, or transitioned outside [floor_ms(consume_intent_at), floor_ms(now)]",
        c.CONSUME_RESPONSE_MISMATCH,
    ),
    _r("rcr.fresh_not_future", c.CONSUME_INTENT, "held; FRESH with an elapsed deadline", c.CONSUME_RESPONSE_MISMATCH),
    _r(
        "rcr.consumed",
        c.CONSUME_INTENT,
        "held; deadline not elapsed: permit group",
        c.OUT_CONSUMED,
        edges=[(c.CONSUME_INTENT, c.EV_CONSUME_RECORDED, c.CONSUMED)],
    ),
    _r(
        "rcr.replay_elapsed",
        c.CONSUME_INTENT,
        "held; IDEMPOTENT_CONSUMED, deadline elapsed: permit group",
        c.WINDOW_CLOSED,
        edges=[(c.CONSUME_INTENT, c.EV_WINDOW_CLOSED, c.SWC)],
    ),
    # take_provider_intent(o)
    _r(
        "tpi.first",
        c.CONSUMED,
        "deadline not elapsed: provider lease min(now+120 s, deadline), fence+1",
        c.PROVIDER_INTENT_TAKEN,
        edges=[(c.CONSUMED, c.EV_PROVIDER_INTENT, c.PROVIDER_INTENT)],
    ),
    _r(
        "tpi.window_elapsed",
        c.CONSUMED,
        "deadline elapsed",
        c.WINDOW_CLOSED,
        edges=[(c.CONSUMED, c.EV_WINDOW_CLOSED, c.SWC)],
    ),
    _r("tpi.held_same", c.PROVIDER_INTENT, "active, owner o (stored values)", c.PROVIDER_INTENT_TAKEN),
    _r("tpi.held_other", c.PROVIDER_INTENT, "active, owner != o", c.PENDING),
    _r("tpi.abandoned", c.PROVIDER_INTENT, "now >= expiry: never resubmitted", c.RECONCILIATION_REQUIRED),
    _r("tpi.reconciling", "reconciling", "RECONCILE_INTENT or OUTCOME_UNKNOWN", c.RECONCILIATION_REQUIRED),
    _r("tpi.locked", "early", "BEGUN or CONSUME_INTENT", c.PENDING),
    _r("tpi.closed", "final", "SWC, COMMIT or RELEASE", c.OBSERVED),
    # report_provider_submission(o, f, report)
    _r("rps.retry", "any", "provider lease of o at f, the same report stored", c.SUBMISSION_REPORTED),
    _r("rps.conflict", "any", "provider lease of o at f, another report stored", c.REPORT_CONFLICT),
    _r("rps.no_lease", "any", "not PROVIDER_INTENT, or owner != o, or fence != f", c.LEASE_REJECTED),
    _r("rps.expired", c.PROVIDER_INTENT, "owner o, fence f, no report, now >= expiry", c.LEASE_REJECTED),
    _r(
        "rps.first",
        c.PROVIDER_INTENT,
        "held, no report: report group, CALLER_ASSERTED/false",
        c.SUBMISSION_REPORTED,
        edges=[(c.PROVIDER_INTENT, c.EV_REPORTED, c.PROVIDER_INTENT)],
    ),
    # take_reconcile_lease(o)
    _r(
        "trl.from_abandoned",
        c.PROVIDER_INTENT,
        "now >= expiry: reconcile lease now+60 s, fence+1",
        c.RECONCILE_LEASE_TAKEN,
        edges=[(c.PROVIDER_INTENT, c.EV_RECONCILE, c.RECONCILE_INTENT)],
    ),
    _r("trl.submission_active", c.PROVIDER_INTENT, "active (any owner)", c.PENDING),
    _r("trl.held_same", c.RECONCILE_INTENT, "active, owner o (stored values)", c.RECONCILE_LEASE_TAKEN),
    _r("trl.held_other", c.RECONCILE_INTENT, "active, owner != o", c.PENDING),
    _r(
        "trl.takeover",
        c.RECONCILE_INTENT,
        "now >= expiry (any owner): fence+1, new lease",
        c.RECONCILE_LEASE_TAKEN,
        edges=[(c.RECONCILE_INTENT, c.EV_RECONCILE_TAKEOVER, c.RECONCILE_INTENT)],
    ),
    _r(
        "trl.resume",
        c.OUTCOME_UNKNOWN,
        "fence+1, new lease",
        c.RECONCILE_LEASE_TAKEN,
        edges=[(c.OUTCOME_UNKNOWN, c.EV_RECONCILE, c.RECONCILE_INTENT)],
    ),
    _r("trl.no_attempt", "before_provider", "BEGUN, CONSUME_INTENT or CONSUMED", c.NOT_APPLICABLE),
    _r("trl.closed", "final", "SWC, COMMIT or RELEASE", c.OBSERVED),
    # apply_settlement_evidence(o, f, E)
    _r("ase.retry_committed", c.COMMIT, "non-manual; lease of o at f; the same evidence stored", c.COMMITTED),
    _r("ase.retry_released", c.RELEASE, "non-manual; lease of o at f; the same evidence stored", c.RELEASED),
    _r("ase.retry_unknown", c.OUTCOME_UNKNOWN, "lease of o at f; the same evidence stored", c.OUT_UNKNOWN),
    _r("ase.terminal_conflict", "final", "not a retry", c.TERMINAL_CONFLICT),
    _r("ase.no_lease", "any", "not PROVIDER/RECONCILE_INTENT, or owner != o, or fence != f", c.LEASE_REJECTED),
    _r("ase.expired", "leased", "owner o, fence f, now >= expiry", c.LEASE_REJECTED),
    _r("ase.not_reported", c.PROVIDER_INTENT, "held, no report", c.SUBMISSION_NOT_REPORTED),
    _r(
        "ase.binding",
        "leased",
        "held; E's identity differs, or a verified class not the provider's",
        c.EVIDENCE_MISMATCH,
    ),
    _r(
        "ase.continues",
        "leased",
        "held; not decisive (caller-asserted, unverified, pending/unknown/conflicting)",
        c.RECONCILIATION_CONTINUES,
    ),
    _r(
        "ase.reference",
        "leased",
        "held, decisive; payment reference missing, foreign, or beside NOT_SUBMITTED",
        c.EVIDENCE_MISMATCH,
    ),
    _r(
        "ase.receipt",
        "leased",
        "held, decisive; receipt absent for COMMIT/RELEASE or present for OUTCOME_UNKNOWN",
        c.EVIDENCE_MISMATCH,
    ),
    _r(
        "ase.commit.provider_owner",
        c.PROVIDER_INTENT,
        "held, SETTLED",
        c.COMMITTED,
        edges=[(c.PROVIDER_INTENT, c.EV_COMMITTED, c.COMMIT)],
    ),
    _r(
        "ase.release.provider_owner",
        c.PROVIDER_INTENT,
        "held (so before the deadline), FAILED",
        c.RELEASED,
        edges=[(c.PROVIDER_INTENT, c.EV_RELEASED, c.RELEASE)],
    ),
    _r(
        "ase.commit.reconcile",
        c.RECONCILE_INTENT,
        "held, SETTLED, deadline not elapsed",
        c.COMMITTED,
        edges=[(c.RECONCILE_INTENT, c.EV_COMMITTED, c.COMMIT)],
    ),
    _r(
        "ase.commit.reconcile_late",
        c.RECONCILE_INTENT,
        "held, SETTLED, deadline elapsed",
        c.COMMITTED,
        edges=[(c.RECONCILE_INTENT, c.EV_COMMITTED, c.COMMIT)],
    ),
    _r(
        "ase.release.reconcile",
        c.RECONCILE_INTENT,
        "held, FAILED/NOT_SUBMITTED, before the deadline, fenced",
        c.RELEASED,
        edges=[(c.RECONCILE_INTENT, c.EV_RELEASED, c.RELEASE)],
    ),
    _r(
        "ase.unknown.late",
        c.RECONCILE_INTENT,
        "held, FAILED/NOT_SUBMITTED, deadline elapsed",
        c.OUT_UNKNOWN,
        edges=[(c.RECONCILE_INTENT, c.EV_OUTCOME_UNKNOWN, c.OUTCOME_UNKNOWN)],
    ),
    _r(
        "ase.unknown.unfenced",
        c.RECONCILE_INTENT,
        "held, FAILED/NOT_SUBMITTED, before the deadline, not fenced",
        c.OUT_UNKNOWN,
        edges=[(c.RECONCILE_INTENT, c.EV_OUTCOME_UNKNOWN, c.OUTCOME_UNKNOWN)],
    ),
    # record_manual_terminal(R, claimed, fenced)
    _r("mt.retry_committed", c.COMMIT, "manual path, processor_result COMMIT, same fenced flag", c.COMMITTED),
    _r("mt.retry_released", c.RELEASE, "manual path, processor_result RELEASE, same fenced flag", c.RELEASED),
    _r("mt.terminal_conflict", "final", "not a retry", c.TERMINAL_CONFLICT),
    _r("mt.no_attempt", "before_provider", "BEGUN, CONSUME_INTENT or CONSUMED", c.NOT_APPLICABLE),
    _r("mt.lease_active", "leased", "PROVIDER/RECONCILE_INTENT, now < expiry", c.PENDING),
    _r(
        "mt.commit",
        "abandoned",
        "R = COMMIT (deadline or not)",
        c.COMMITTED,
        edges=[
            (s, c.EV_MANUAL_COMMITTED, c.COMMIT) for s in (c.PROVIDER_INTENT, c.RECONCILE_INTENT, c.OUTCOME_UNKNOWN)
        ],
    ),
    _r("mt.release_late", "abandoned", "R = RELEASE, deadline elapsed", c.RELEASE_REFUSED),
    _r("mt.release_unfenced", "abandoned", "R = RELEASE, not fenced", c.RELEASE_REFUSED),
    _r(
        "mt.release",
        "abandoned",
        "R = RELEASE, before the deadline, fenced",
        c.RELEASED,
        edges=[
            (s, c.EV_MANUAL_RELEASED, c.RELEASE) for s in (c.PROVIDER_INTENT, c.RECONCILE_INTENT, c.OUTCOME_UNKNOWN)
        ],
    ),
    # close_submission_window()
    _r("csw.close", c.CONSUMED, "deadline elapsed", c.WINDOW_CLOSED, edges=[(c.CONSUMED, c.EV_WINDOW_CLOSED, c.SWC)]),
    _r("csw.open", c.CONSUMED, "deadline not elapsed", c.WINDOW_OPEN),
    _r("csw.retry", c.SWC, "already closed", c.WINDOW_CLOSED),
    _r("csw.other", "other", "before CONSUMED (no deadline) or after provider ownership (never closes)", c.OBSERVED),
    # harness faults (faults.py): damaged documents, not calls; reachable only by injection
    Transition("fault.injected", "fault", "stored", "a record's documents damaged (no event)", "", False, False),
    Transition("fault.not_applicable", "fault", "any", "no well-formed record to damage: no change", "", False, False),
)

TRANSITION_IDS: frozenset[str] = frozenset(row.id for row in TRANSITIONS)
TRANSITIONS_BY_ID: dict[str, Transition] = {row.id: row for row in TRANSITIONS}
EDGES: frozenset[tuple[str | None, str, str]] = frozenset(edge for row in TRANSITIONS for edge in row.edges)
assert len(TRANSITION_IDS) == len(TRANSITIONS), "duplicate transition id"
