"""The lantern catalogue: each seed finding as it was before its fix, and two fixes the seed rejected.

Every variant replaces one or two blocks of whole source lines of its own copy of `reference/lantern`
(`known_bad.loader.mutate`); the bug is commented in place with `BUG`. What the seed reports, and what each
variant must therefore show on the emulator (docs/lantern-contract.md, "The findings and how each shows up"):

- finding_3_venue_in_read_set: the light transaction reads the venue, so lights at one venue collide on it.
- finding_4_guard_cleared_after_commit: extinguish clears the guard after its transaction, best effort.
- finding_5_read_then_write_extinguish: extinguish decides from plain reads and writes blind.
- finding_13_blind_decrement_deleted_venue: the relight's old-venue decrement is blind (NOT_FOUND, rollback).
- rejected_c1_upsert_old_venue: #13 "fixed" by an upsert: a deleted old venue comes back as a ghost.
- rejected_a3_auto_extinguish_batch: the old getActiveLanterns, one blind batch retiring what the query met.

The seed's A1 is not described in docs/lantern-contract.md (only A2, the adopted one, and A3), so it has no
variant here: guessing its shape would put a label on a bug nobody specified.
"""

from __future__ import annotations

from . import Edit, Variant

# --- blocks of the reference, as they stand -------------------------------------------------------------------

# layer.light_body: the first reads of a light (never the current venue: B1).
_LIGHT_FIRST_READS = """
existing, guard = _read(
    transaction, db, (lantern_path(request.lantern_id), guard_path(request.user_id))
).values()
"""

# layer.light_body: C2, the old venue of an expired predecessor is read before its decrement.
_RELIGHT_OLD_VENUE_READ = """
if old_venue is not None:
    (stored,) = _read(transaction, db, (venue_path(old_venue),)).values()
    old_venue_exists = stored is not None
"""

# api.extinguish_lantern: A2, one transaction serialized on the lantern document.
_EXTINGUISH_RUN = "return _run(db, extinguish_body, user_id, lantern_id, now, attempt_log=attempt_log)"

# layer.extinguish_body: D1, the guard (if it names this lantern) is deleted in the same transaction.
_EXTINGUISH_DECISION = "decision = decide_extinguish(lantern_id, lantern, status, now, venue_exists, guard)"

# layer._apply: the counter moves by a blind Increment that fails NOT_FOUND on a missing venue.
_COUNTER_UPDATE = 'transaction.update(reference, {"activeLanternCount": firestore.Increment(write.amount)})'

# api.read_active_lanterns: one retire transaction per expired lantern, re-reading it.
_RETIRE_EACH = """
for lantern_id in expired:
    _run(db, retire_body, lantern_id, now, attempt_log=attempt_log)
"""


CATALOGUE: tuple[Variant, ...] = (
    Variant(
        name="finding_3_venue_in_read_set",
        finding="#3",
        rule="light.new:venue-hotspot",
        description="the light transaction reads the venue (its existence) inside the transaction: every light at "
        "one venue holds its read lock and then needs its write lock for the +1, so concurrent lights collide",
        scenario="lights_24_at_one_venue",
        failing_property="no aborted attempt among concurrent lights at one venue (B1)",
        concurrent=True,
        edits=(
            Edit(
                target="layer.light_body",
                original=_LIGHT_FIRST_READS,
                broken="""
                    # BUG (#3): the current venue is read INSIDE the transaction (to check it still exists), so it
                    # joins the read set of every light at this venue: each light holds the venue's read lock and
                    # then needs its write lock for the +1, and concurrent lights at one venue collide on it.
                    existing, guard, venue = _read(
                        transaction,
                        db,
                        (lantern_path(request.lantern_id), guard_path(request.user_id), venue_path(request.venue_id)),
                    ).values()
                    if venue is None:
                        raise LanternError("venue_not_found")
                """,
            ),
        ),
    ),
    Variant(
        name="finding_4_guard_cleared_after_commit",
        finding="#4",
        rule="extinguish.active:guard-after-commit",
        description="extinguish ends the lantern (status, pin, counter) in its transaction and clears the user's "
        "guard afterwards, by a separate best-effort write: a failure between the two strands the guard",
        scenario="extinguish_then_relight_guard_delete_fails",
        failing_property="INV-2 guard reflects reality (no guard names an ended lantern) after every call",
        edits=(
            Edit(
                target="layer.extinguish_body",
                original=_EXTINGUISH_DECISION,
                broken="""
                    # BUG (#4): the guard is left out of the transaction (it is cleared after the commit, in api)
                    decision = decide_extinguish(lantern_id, lantern, status, now, venue_exists, None)
                """,
            ),
            Edit(
                target="api.extinguish_lantern",
                original=_EXTINGUISH_RUN,
                broken="""
                    ended = _run(db, extinguish_body, user_id, lantern_id, now, attempt_log=attempt_log)
                    # BUG (#4): the user's guard is cleared AFTER the transaction committed, by a separate write, best
                    # effort. A failure (or a crash) between the two strands the guard: it names an ended lantern.
                    from .paths import guard_path

                    try:
                        db.document(guard_path(user_id)).delete()
                    except Exception:  # best effort: the lantern is already out, so the answer stands
                        pass
                    return ended
                """,
            ),
        ),
    ),
    Variant(
        name="finding_5_read_then_write_extinguish",
        finding="#5",
        rule="extinguish.ended:concurrent",
        description="extinguish reads the lantern (and its venue and guard) with plain reads outside any "
        "transaction and writes its decision in one blind batch: two concurrent extinguishes both end it",
        scenario="double_extinguish",
        failing_property="INV-3 activeLanternCount equals the venue's active lanterns; some order of the calls "
        "explains both answers",
        concurrent=True,
        edits=(
            Edit(
                target="api.extinguish_lantern",
                original=_EXTINGUISH_RUN,
                broken="""
                    # BUG (#5): read-then-write. The lantern, its venue and its guard are read with plain reads, OUTSIDE
                    # any transaction, and the decision's writes go out in one blind batch: nothing it read is locked
                    # or checked again at commit, so two extinguishes that both read "active" both end the lantern
                    # and both decrement its venue.
                    from types import SimpleNamespace

                    batch = db.batch()
                    plain = SimpleNamespace(
                        get_all=db.get_all, create=batch.create, set=batch.set, update=batch.update, delete=batch.delete
                    )
                    ended = outside_transaction(lambda: extinguish_body(db, user_id, lantern_id, now)(plain))
                    outside_transaction(batch.commit)
                    return ended
                """,
            ),
        ),
    ),
    Variant(
        name="finding_13_blind_decrement_deleted_venue",
        finding="#13",
        rule="light.relight_old_venue_gone",
        description="the relight's decrement of the old venue is blind (no read, no existence guard): with the old "
        "venue deleted it fails NOT_FOUND and the whole relight rolls back, on every retry",
        scenario="relight_old_venue_deleted",
        failing_property="a relight whose old venue was deleted answers lit (model: light.relight_old_venue_gone)",
        edits=(
            Edit(
                target="layer.light_body",
                original=_RELIGHT_OLD_VENUE_READ,
                broken="""
                    if old_venue is not None:
                        # BUG (#13): the old venue's decrement is blind: it is not read, just assumed to exist. Deleted,
                        # the Increment(-1) fails NOT_FOUND and the whole relight rolls back, on every retry.
                        old_venue_exists = True
                """,
            ),
        ),
    ),
    Variant(
        name="rejected_c1_upsert_old_venue",
        finding="C1",
        rule="light.relight_old_venue_gone:ghost-venue",
        description="the rejected C1 fix for #13: the old venue is still not read, and the counter moves by an "
        "upsert (set with merge), so a deleted old venue is recreated as a ghost holding only a -1 counter",
        scenario="relight_old_venue_deleted",
        failing_property="SHAPE (no partial venue document) and the stored documents equal the model's",
        edits=(
            Edit(
                target="layer.light_body",
                original=_RELIGHT_OLD_VENUE_READ,
                broken="""
                    if old_venue is not None:
                        # BUG (C1): as #13, the old venue is not read (assumed to exist); its decrement is an upsert
                        old_venue_exists = True
                """,
            ),
            Edit(
                target="layer._apply",
                original=_COUNTER_UPDATE,
                broken="""
                    # BUG (C1, the rejected fix for #13): the counter moves by an upsert (set with merge), which cannot
                    # fail NOT_FOUND: against a deleted venue it recreates a ghost document holding only the counter.
                    transaction.set(reference, {"activeLanternCount": firestore.Increment(write.amount)}, merge=True)
                """,
            ),
        ),
    ),
    Variant(
        name="rejected_a3_auto_extinguish_batch",
        finding="A3",
        rule="read_active.retired:concurrent",
        description="the old getActiveLanterns: every expired lantern the query met is retired in one blind batch "
        "decided from plain reads; a lantern a manual extinguish ended meanwhile is ended (and decremented) twice",
        scenario="read_racing_extinguish",
        failing_property="INV-3 activeLanternCount equals the venue's active lanterns; the stored documents are "
        "those of an order that explains the answers",
        concurrent=True,
        edits=(
            Edit(
                target="api.read_active_lanterns",
                original=_RETIRE_EACH,
                broken="""
                    # BUG (A3, the old getActiveLanterns): every expired lantern the query met is retired in ONE blind
                    # batch, decided from plain reads (the query's snapshot, the venue, the guard) with no transaction
                    # and no re-read: a lantern ended meanwhile (a manual extinguish) is ended a second time, and its
                    # venue decremented twice.
                    from .decide import decide_retire
                    from .layer import _apply, _end_context

                    if expired:
                        met = {snapshot.id: parse_lantern(snapshot.to_dict()) for snapshot in snapshots}
                        batch = db.batch()
                        for lantern_id in expired:
                            venue_exists, guard = _end_context(db, db, met[lantern_id])  # plain reads
                            _apply(batch, db, decide_retire(lantern_id, met[lantern_id], venue_exists, guard).writes)
                        outside_transaction(batch.commit)
                """,
            ),
        ),
    ),
)
