"""The catalogue: one small, deliberate bug per variant, each in a different rule of docs/journal-decisions.md.

A variant rewrites one function of its own copy of `reference/journal` (see `known_bad.loader.mutate`):
`original` is a block of whole lines of that function, `broken` replaces it (the bug is commented in place).
`rule` is the model transition (`model.journal.TRANSITION_IDS`) whose row the bug breaks, with `:aspect`
when two variants break different aspects of one row. `witness` is a short program on which the model and
the variant first disagree at its last step (tests/systems/journal/test_journal_known_bad_catalogue.py checks
that on the in-memory fake Firestore); the stateful machines have to find such a program on their own.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from model.journal import Acquire, CommandRef, Complete, Fail, FaultKind, InjectFault, Register

from . import Variant

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CMD = CommandRef(
    "test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000", "create_checkout_session", 1,
    '{"quantity":1}',
)
A = "0000000a-1ea5-4000-a000-000000000000"  # lease ids of two workers
B = "0000000b-1ea5-4000-a000-000000000000"
REF = "0" * 64  # terminal reference fingerprints
REF2 = "1" * 64


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


LEASED_BY_A = (Register(CMD, at(0)), Acquire(CMD, A, at(1)))  # fence 1, expires at(61)

CATALOGUE: tuple[Variant, ...] = (
    # --- acquire -------------------------------------------------------------------------------------------
    Variant(
        name="expiry-equality-active",
        rule="acquire.expired.takeover_other",
        description="now == leaseExpiresAt is treated as active: another worker is told busy instead of taking over",
        target="decide._acquire",
        original="if now < lifecycle.expires_at:",
        broken="if now <= lifecycle.expires_at:  # BUG: equality with the expiry counts as active (it is expired)",
        witness=(*LEASED_BY_A, Acquire(CMD, B, at(61))),
    ),
    Variant(
        name="takeover-without-fence-increment",
        rule="acquire.expired.takeover_same_id",
        description="a takeover after expiry keeps the fence epoch, so writes fenced by the old grant still match",
        target="decide._acquire",
        original="fence_epoch=lifecycle.fence_epoch + 1,",
        broken="fence_epoch=lifecycle.fence_epoch,  # BUG: the fence is not incremented on takeover",
        witness=(*LEASED_BY_A, Acquire(CMD, A, at(61))),
    ),
    Variant(
        name="takeover-keeps-owner",
        rule="acquire.expired.takeover_other:owner",
        description="a takeover by another worker keeps the previous owner fingerprint (the old holder still owns it)",
        target="decide._acquire",
        original="owner_fingerprint=owner,",
        broken="# BUG: owner_fingerprint is not replaced: the lifecycle keeps the previous holder",
        witness=(*LEASED_BY_A, Acquire(CMD, B, at(62))),
    ),
    Variant(
        name="recovery-writes",
        rule="acquire.active.same_holder",
        description="the holder's recovery of its active lease writes the lifecycle (a heartbeat stamping updatedAt); "
        "it must be read-only",
        target="decide._acquire",
        original="return Decision(_lease_output(lifecycle) if lifecycle.owner_fingerprint == owner else LEASE_BUSY)",
        broken="""
            if lifecycle.owner_fingerprint == owner:  # BUG: recovery writes, stamping updatedAt = now
                touched = lifecycle_document(request.command, replace(lifecycle, updated_at=now))
                path = identity.lifecycle_path(request.command.command_key_hash)
                return Decision(_lease_output(lifecycle), (Write(path, touched, create=False),))
            return Decision(LEASE_BUSY)
        """,
        witness=(*LEASED_BY_A, Acquire(CMD, A, at(2))),
    ),
    Variant(
        name="busy-appends-audit",
        rule="acquire.active.other_holder",
        description="a lease_busy answer appends an audit event at R+1 (busy must write nothing)",
        target="decide._acquire",
        original="return Decision(_lease_output(lifecycle) if lifecycle.owner_fingerprint == owner else LEASE_BUSY)",
        broken="""
            if lifecycle.owner_fingerprint != owner:  # BUG: the busy answer is audited as an event R+1
                seen = replace(lifecycle, revision=lifecycle.revision + 1)
                audit = transition_audit_document(request.command, seen, "command_lease_taken_over", LEASED)
                path = identity.audit_path(request.command.command_key_hash, seen.revision)
                return Decision(LEASE_BUSY, (Write(path, audit, create=True),))
            return Decision(_lease_output(lifecycle))
        """,
        witness=(*LEASED_BY_A, Acquire(CMD, B, at(2))),
    ),
    Variant(
        name="earlier-clock-first-lease",
        rule="acquire.first_clock_before_registration",
        description="a first acquire whose clock reads earlier than the registration is granted (must be unavailable)",
        target="decide._acquire",
        original="""
            if now < registration.created_at:
                raise CommandJournalError("journal_unavailable")
        """,
        broken="# BUG: no check that the reading is not earlier than root.createdAt",
        witness=(Register(CMD, at(10)), Acquire(CMD, A, at(9))),
    ),
    Variant(
        name="overflow-not-checked",
        rule="acquire.overflow",
        description="a takeover at the maximum revision is written (revision 10^10) instead of failing closed",
        target="decide._acquire",
        original="""
            if lifecycle.revision >= MAX_REVISION or lifecycle.fence_epoch >= MAX_FENCE_EPOCH:
                raise unrecognized()  # the next revision or fence would not fit: never wrap
        """,
        broken="# BUG: no overflow check before revision + 1 and fence + 1",
        witness=(*LEASED_BY_A, InjectFault(CMD, FaultKind.REVISION_AT_MAXIMUM), Acquire(CMD, B, at(61))),
    ),
    # --- complete / fail -----------------------------------------------------------------------------------
    Variant(
        name="stale-fence-accepted",
        rule="complete.stale_fence",
        description="complete and fail do not compare the fence epoch: a stale (or guessed) fence finishes the command",
        target="decide._finish",
        original="or lifecycle.fence_epoch != request.expected_fence_epoch",
        broken="# BUG: the expected fence epoch is not compared",
        witness=(*LEASED_BY_A, Complete(CMD, A, 2, REF, at(2))),
    ),
    Variant(
        name="wrong-holder-finishes",
        rule="complete.wrong_holder",
        description="complete and fail do not compare the holder: any worker that knows the fence finishes",
        target="decide._finish",
        original="lifecycle.owner_fingerprint != request.owner_fingerprint",
        broken="False  # BUG: the holder is not compared",
        witness=(*LEASED_BY_A, Complete(CMD, B, 1, REF, at(2))),
    ),
    Variant(
        name="expired-lease-finishes",
        rule="complete.expired",
        description="complete and fail accept the exact holder and fence after the lease expired",
        target="decide._finish",
        original="or request.now >= lifecycle.expires_at",
        broken="# BUG: the expiry is not checked",
        witness=(*LEASED_BY_A, Complete(CMD, A, 1, REF, at(61))),
    ),
    Variant(
        name="earlier-clock-finishes",
        rule="complete.clock_earlier.unavailable",
        description="a finish whose clock reads earlier than the stored update time decides instead of answering "
        "journal_unavailable",
        target="decide._finish",
        original="""
            if request.now < built_on:
                raise CommandJournalError("journal_unavailable")  # an earlier reading may observe, never decide
        """,
        broken="# BUG: no check that the reading is not earlier than the stored update time",
        witness=(Register(CMD, at(0)), Acquire(CMD, A, at(10)), Complete(CMD, A, 1, REF, at(9))),
    ),
    Variant(
        name="commitment-unbound-from-key",
        rule="complete.exact",
        description="the terminal commitment hash does not bind the command key hash (it could be moved to another "
        "command)",
        target="identity.terminal_commitment_hash",
        original="""
            IDENTITY_VERSION,
            key_hash,
        """,
        broken="IDENTITY_VERSION,  # BUG: key_hash left out of the commitment digest",
        witness=(*LEASED_BY_A, Complete(CMD, A, 1, REF, at(2))),
    ),
    Variant(
        name="failed-final-records-commitment-kind",
        rule="fail.exact",
        description="a failed_final lifecycle is stored with terminalCommitmentKind set (it must carry two nulls)",
        target="records.lifecycle_document",
        original="terminal = lifecycle.state == SUCCEEDED",
        broken="terminal = lifecycle.state in TERMINAL_STATES  # BUG: failed_final also gets the commitment fields",
        witness=(*LEASED_BY_A, Fail(CMD, A, 1, at(2))),
    ),
    Variant(
        name="terminal-retry-checks-expiry",
        rule="complete.terminal.exact_retry",
        description="an exact terminal retry after the lease expired answers terminal_conflict (it must observe)",
        target="decide._finish",
        original="and lifecycle.commitment_hash == request.commitment_hash",
        broken="""
            and lifecycle.commitment_hash == request.commitment_hash
            and request.now < lifecycle.expires_at  # BUG: the exact retry is only recognised before expiry
        """,
        witness=(*LEASED_BY_A, Complete(CMD, A, 1, REF, at(2)), Complete(CMD, A, 1, REF, at(100))),
    ),
    Variant(
        name="second-audit-on-exact-retry",
        rule="fail.terminal.exact_retry",
        description="an exact terminal retry appends a second terminal audit event (it must write nothing)",
        target="decide._finish",
        original="""
            if exact_terminal_retry:
                return Decision(TERMINAL_OBSERVATIONS[target])
        """,
        broken="""
            if exact_terminal_retry:  # BUG: the retry is audited again, as event R+1
                again = replace(lifecycle, revision=lifecycle.revision + 1)
                audit = transition_audit_document(request.command, again, TERMINAL_EVENTS[target], LEASED)
                path = identity.audit_path(request.command.command_key_hash, again.revision)
                return Decision(TERMINAL_OBSERVATIONS[target], (Write(path, audit, create=True),))
        """,
        witness=(*LEASED_BY_A, Fail(CMD, A, 1, at(2)), Fail(CMD, A, 1, at(3))),
    ),
    Variant(
        name="terminal-overwritable",
        rule="complete.terminal.conflict",
        description="the holder may replace its own terminal outcome or commitment while the lease is active",
        target="decide._finish",
        original="if lifecycle.is_terminal:",
        broken="if lifecycle.is_terminal and lifecycle.owner_fingerprint != request.owner_fingerprint:  # BUG",
        witness=(*LEASED_BY_A, Complete(CMD, A, 1, REF, at(2)), Complete(CMD, A, 1, REF2, at(3))),
    ),
    # --- registration and identity -------------------------------------------------------------------------
    Variant(
        name="registration-conflict-ignores-payload",
        rule="register.existing.conflict_payload",
        description="the stored payload fingerprint is not compared: another payload under the same id is accepted",
        target="decide.decide",
        original="""
            if (registration.command_type, registration.endpoint_schema_version, registration.payload_fingerprint) != (
                command.command_type,
                command.endpoint_schema_version,
                command.payload_fingerprint,
            ):
        """,
        broken="""
            if (registration.command_type, registration.endpoint_schema_version) != (  # BUG: payload not compared
                command.command_type,
                command.endpoint_schema_version,
            ):
        """,
        witness=(Register(CMD, at(0)), Register(attrs.evolve(CMD, payload='{"quantity":2}'), at(1))),
    ),
    Variant(
        name="re-registration-writes",
        rule="register.existing.same",
        description="an exact re-registration writes the root again, stamping updatedAt (it must be read-only)",
        target="decide.decide",
        original='return Decision(RegistrationResult("registered_existing"))',
        broken="""
            root = dict(root_document(command, registration.created_at), updatedAt=request.now)  # BUG: a write
            return Decision(RegistrationResult("registered_existing"),
                            (Write(identity.root_path(command.command_key_hash), root, create=False),))
        """,
        witness=(Register(CMD, at(0)), Register(CMD, at(1))),
    ),
    # --- malformed records ---------------------------------------------------------------------------------
    Variant(
        name="malformed-record-repaired",
        rule="any.corrupt:extra_field",
        description="a stored record with an unknown field is read as if the field were absent (repaired in memory) "
        "instead of answering unrecognized_record",
        target="records._validate",
        original="_check(type(document) is dict and set(document) == set(schema))",
        broken="""
            _check(type(document) is dict and set(schema) <= set(document))
            document = {name: document[name] for name in schema}  # BUG: unknown fields dropped, not refused
        """,
        witness=(Register(CMD, at(0)), InjectFault(CMD, FaultKind.EXTRA_FIELD), Register(CMD, at(1))),
    ),
    Variant(
        name="preseeded-next-audit-ignored",
        rule="any.corrupt:preseeded_next_audit",
        description="an audit event already stored at the next revision is not refused (it is later overwritten or "
        "orphaned)",
        target="api._transaction_body",
        original="""
            if next_audit is not None:
                raise unrecognized()  # a preseeded next audit would be overwritten or orphaned
        """,
        broken="# BUG: the next audit (R+1) is read but never checked",
        witness=(Register(CMD, at(0)), InjectFault(CMD, FaultKind.PRESEEDED_NEXT_AUDIT), Register(CMD, at(1))),
    ),
)
