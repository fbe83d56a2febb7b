"""The gateway catalogue: the contract's hazards (docs/gateway-contract.md, "Races and known-bad variants"),
each as the bug a plausible implementation would have. Every variant replaces one block of whole source lines
of its own copy of `reference/gateway`; the bug is commented in place with `BUG`.

Sequential (a lockstep program shows them):
- lease_equality_active: a consume lease still counts as held at exactly its expiry (recovery refused).
- release_at_the_deadline: a manual release is allowed at exactly the settlement deadline.
- manual_trusts_claimed_verification: the manual path stores the caller's verification claim as verified.
- unknown_evidence_releases: verified UNKNOWN evidence is treated as a decisive failure.
- caller_outcome_decides: a provider report whose caller outcome is `succeeded` commits.
- reconcile_overwrites_active_submission: a reconciler takes over a provider intent whose lease is active.
- abandoned_intent_resubmitted: an expired provider intent is granted again (a second submission).
- close_any_elapsed_state: closing the window after the deadline also closes provider-owned states.
- unfenced_release_after_reconciliation: reconciliation releases without `submission_fenced`.
- unbound_deadline_accepted: a hosted answer whose deadline is not transitioned_at + 15 min is recorded.
- uncapped_provider_lease: the provider lease is 120 s even past the settlement deadline.
- region_scoped_journal: each region keeps its own journal (a split brain: a second region begins anew).

Concurrent (only a race shows them; the race scenarios take them):
- claim_outside_the_transaction: reads are plain reads, outside the transaction; the writes are blind.
"""

from __future__ import annotations

from . import Edit, Variant

CATALOGUE: tuple[Variant, ...] = (
    Variant(
        name="lease_equality_active",
        rule="claim.recovery",
        description="the consume lease is treated as active at exactly its expiry (now <= expiry), so a recovery "
        "claim at the expiry answers pending instead of taking the lost response over",
        edits=(Edit("decide._claim", 'if now < r["lease_expires_at"]:',
                    'if now <= r["lease_expires_at"]:  # BUG: equality counted as active'),),
    ),
    Variant(
        name="release_at_the_deadline",
        rule="mt.release_late",
        description="a manual release is refused only after the settlement deadline, not at it",
        edits=(Edit("decide._manual_terminal", 'if _elapsed(r, call.now) or not fenced:',
                    'if call.now > c.ms_time(r["settlement_deadline_at"]) or not fenced:  # BUG: equality allowed'),),
    ),
    Variant(
        name="manual_trusts_claimed_verification",
        rule="mt.commit",
        description="the manual path stores independent verification when the caller claims it, instead of "
        "always caller-asserted (G25)",
        edits=(Edit("decide._manual_terminal", '''
changes = {
    "evidence_class": c.CALLER_ASSERTED,
    "independent_verification": False,''', '''
claimed = call.args["claimed_independent_verification"]  # BUG: the caller's claim is trusted
changes = {
    "evidence_class": c.VERIFIED_CLASS[r["provider"]] if claimed else c.CALLER_ASSERTED,
    "independent_verification": claimed,'''),),
    ),
    Variant(
        name="unknown_evidence_releases",
        rule="ase.continues",
        description="verified evidence with verdict UNKNOWN is taken as decisive (a failure), so it can release",
        edits=(Edit("decide._apply_evidence", 'or e["verdict"] not in (c.DECISIVE_VERDICTS)',
                    'or e["verdict"] not in (*c.DECISIVE_VERDICTS, "UNKNOWN")  # BUG: UNKNOWN decides'),),
    ),
    Variant(
        name="caller_outcome_decides",
        rule="rps.first",
        description="a provider report whose caller outcome is succeeded commits the journal at once: a caller's "
        "hint decides the state (G19)",
        edits=(Edit("decide._report", 'claim_id, submission_id, payment_reference, caller_outcome = report',
                    'claim_id, submission_id, payment_reference, caller_outcome = report\n'
                    'if caller_outcome == "succeeded":  # BUG: the caller-asserted outcome decides\n'
                    '    return _write(call, r, "committed", "committed", state="COMMIT", claim_id=claim_id,\n'
                    '                  provider_submission_id=submission_id, caller_outcome=caller_outcome,\n'
                    '                  submission_reported_at=call.now, payment_reference=payment_reference,\n'
                    '                  evidence_class=c.CALLER_ASSERTED, independent_verification=False,\n'
                    '                  terminal_path="provider_owner")'),),
    ),
    Variant(
        name="reconcile_overwrites_active_submission",
        rule="trl.submission_active",
        description="a reconciler takes a provider intent over while its provider lease is still active",
        edits=(Edit("decide._take_reconcile_lease", '''
if now < r["lease_expires_at"]:
    return _answer("pending", r)  # an active submission is never overwritten''', '''
pass  # BUG: an active submission is overwritten'''),),
    ),
    Variant(
        name="abandoned_intent_resubmitted",
        rule="tpi.abandoned",
        description="an expired provider intent is granted to the caller again (a second provider submission) "
        "instead of reconciliation_required",
        edits=(Edit("decide._take_provider_intent",
                    'return _answer("reconciliation_required", r)  # abandoned: reconciled, never resubmitted', '''
expires = min(now + c.PROVIDER_LEASE, c.ms_time(r["settlement_deadline_at"]))  # BUG: resubmitted
return _write(call, r, "provider_intent_taken", "provider_intent_taken", grant=True, provider_intent_at=now,
              **_lease(call, "provider", expires))'''),),
    ),
    Variant(
        name="close_any_elapsed_state",
        rule="csw.other",
        description="closing the submission window after the deadline also closes a provider-owned journal (a "
        "submission that may have settled is abandoned)",
        edits=(Edit("decide._close_window", 'if r["state"] == "CONSUMED":',
                    'if r["state"] in ("CONSUMED", "PROVIDER_INTENT", "RECONCILE_INTENT", "OUTCOME_UNKNOWN") and '
                    'r["settlement_deadline_at"] is not None:  # BUG: any elapsed state'),),
    ),
    Variant(
        name="unfenced_release_after_reconciliation",
        rule="ase.unknown.unfenced",
        description="reconciliation releases on failure evidence before the deadline without submission_fenced",
        edits=(Edit("decide._apply_evidence",
                    'decision = "OUTCOME_UNKNOWN" if late or not e["submission_fenced"] else "RELEASE"',
                    'decision = "OUTCOME_UNKNOWN" if late else "RELEASE"  # BUG: the fence is not required'),),
    ),
    Variant(
        name="unbound_deadline_accepted",
        rule="rcr.unbound",
        description="a hosted answer is recorded whatever its deadline says (not bound to transitioned_at + 15 min)",
        edits=(Edit("decide._record_consume", 'bound = a["settlement_deadline_at"] == moment + c.SETTLEMENT_WINDOW_MS',
                    'bound = True  # BUG: the deadline is not checked against the transition'),),
    ),
    Variant(
        name="uncapped_provider_lease",
        rule="tpi.first",
        description="the provider lease is now + 120 s even when that passes the settlement deadline",
        edits=(Edit("decide._take_provider_intent",
                    'expires = min(now + c.PROVIDER_LEASE, c.ms_time(r["settlement_deadline_at"]))',
                    'expires = now + c.PROVIDER_LEASE  # BUG: not capped at the deadline'),),
    ),
    Variant(
        name="region_scoped_journal",
        rule="begin.existing",
        description="each region keeps its own journal document (the namespace treated as region-scoped): a "
        "second region begins the same operation anew, and two regions can each elect a consume owner",
        edits=(Edit("api._body", 'ns, key = j.namespace_id, j.journal_key',
                    'ns, key = f"{j.namespace_id}-{j.region}", j.journal_key  # BUG: one journal per region'),),
    ),
    Variant(
        name="claim_outside_the_transaction",
        rule="claim.first:election",
        description="the record and its events are read with plain reads outside the transaction and written "
        "blind inside it: sequentially the same as the reference, but two concurrent claims can both win",
        edits=(Edit("api._read", 'for snapshot in transaction.get_all([db.document(path) for path in found]):',
                    'for snapshot in db.get_all([db.document(path) for path in found]):  # BUG: not transactional'),),
        concurrent=True,
    ),
)
