"""Fail-closed parsing (docs/journal-decisions.md "Structural validation"): every malformed stored record is
`unrecognized_record` for every operation, and nothing is written or repaired.

Each case starts from a valid stored state (checked by `test_every_base_state_is_valid`), changes as little
as possible, and keeps everything else consistent (a lifecycle change rebuilds its audit partner) so that
the one broken rule is the one the case is named after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.fakes import FakeFirestore
from tests.systems.journal.builders import (
    CMD,
    LEASE,
    LEASE_A,
    LEASE_B,
    MAX,
    REF_A,
    REF_B,
    T0,
    T1,
    US,
    acquire,
    answer,
    lifecycle_docs,
    no_writes,
    partner_of,
    registered_docs,
    seed,
    transition_audit_doc,
)

TC = T1 + timedelta(seconds=30)
T2 = T1 + LEASE + timedelta(seconds=5)
OTHER = CMD.but(command_id="16fd2706-8baf-433b-82eb-8c7fada847da")
Docs = dict[str, dict[str, Any]]

BASES: dict[str, Callable[[], Docs]] = {
    "registered": lambda: registered_docs(),
    "leased": lambda: lifecycle_docs(),
    "taken-over": lambda: lifecycle_docs(fence=2, acquired=T2, created=T1),
    "succeeded": lambda: lifecycle_docs(state="succeeded", updated=TC),
    "failed": lambda: lifecycle_docs(state="failed_final", updated=TC),
}


def _path(docs: Docs, which: str) -> str:
    lifecycle = docs.get(CMD.lifecycle_path)
    revision = lifecycle["commandRevision"] if lifecycle else None
    return {
        "root": CMD.root_path,
        "audit1": CMD.audit_path(1),
        "lifecycle": CMD.lifecycle_path,
        "partner": CMD.audit_path(revision) if revision else "",
        "next": CMD.audit_path(revision + 1 if revision else 2),
    }[which]


# -- mutations ---------------------------------------------------------------------------------------------------------
def set_field(which: str, field: str, value: Any) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        docs[_path(docs, which)][field] = value

    return mutate


def drop_field(which: str, field: str) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        del docs[_path(docs, which)][field]

    return mutate


def drop_doc(*which: str) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        for path in [_path(docs, name) for name in which]:
            del docs[path]

    return mutate


def add_doc(which: str, document: Callable[[Docs], dict[str, Any]]) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        docs[_path(docs, which)] = document(docs)

    return mutate


def relifecycle(**changes: Any) -> Callable[[Docs], None]:
    """Change lifecycle fields and rebuild its partner to match, so only the lifecycle's own rule breaks."""

    def mutate(docs: Docs) -> None:
        lifecycle = docs[CMD.lifecycle_path]
        del docs[CMD.audit_path(lifecycle["commandRevision"])]
        for field, change in changes.items():
            lifecycle[field] = change(lifecycle) if callable(change) else change
        docs[CMD.audit_path(lifecycle["commandRevision"])] = partner_of(CMD, lifecycle)

    return mutate


def both(*mutations: Callable[[Docs], None]) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        for mutation in mutations:
            mutation(docs)

    return mutate


def shifted(field: str, delta: timedelta) -> Callable[[dict[str, Any]], datetime]:
    return lambda document: document[field] + delta


def next_audit(docs: Docs) -> dict[str, Any]:
    """A valid-looking version-2 audit at the next revision (what a racing writer might have left)."""
    lifecycle = docs.get(CMD.lifecycle_path)
    revision = lifecycle["commandRevision"] + 1 if lifecycle else 2
    return transition_audit_doc(
        CMD,
        revision=revision,
        from_state="leased",
        to_state="leased",
        fence=revision - 1,
        expires=T2 + LEASE,
        occurred=T2,
    )


# -- wrong types, generated per field ----------------------------------------------------------------------------------
def wrong_values(value: Any) -> list[tuple[str, Any]]:
    if value is None:
        return [("empty-string", ""), ("zero", 0), ("false", False)]
    if type(value) is int:
        return [("bool", value == 1), ("str", str(value)), ("float", float(value))]
    if type(value) is str:
        return [("int", 1), ("none", None), ("bytes", value.encode())]
    if isinstance(value, datetime):
        return [("int", int(value.timestamp())), ("str", value.isoformat()), ("float", value.timestamp())]
    raise AssertionError(f"no wrong values for {value!r}")


@dataclass(frozen=True)
class Case:
    id: str
    base: str
    mutate: Callable[[Docs], None]


def field_cases() -> list[Case]:
    cases = []
    for base, kinds in (
        ("leased", ("root", "audit1", "lifecycle", "partner")),
        ("succeeded", ("lifecycle", "partner")),
    ):
        docs = BASES[base]()
        for which in kinds:
            document = docs[_path(docs, which)]
            cases.append(Case(f"{base}-{which}-extra-field", base, set_field(which, "unexpected", 1)))
            for field, value in document.items():
                cases.append(Case(f"{base}-{which}-missing-{field}", base, drop_field(which, field)))
                for name, wrong in wrong_values(value):
                    cases.append(Case(f"{base}-{which}-{field}-{name}", base, set_field(which, field, wrong)))
    return cases


UPPER_HASH = "A" * 64
SHORT_HASH = "a" * 63
NAMED_CASES = [
    # pair presence
    Case("missing-root", "registered", drop_doc("root")),
    Case("missing-audit-1", "registered", drop_doc("audit1")),
    Case("missing-root-with-lifecycle", "leased", drop_doc("root")),
    Case("missing-audit-1-with-lifecycle", "leased", drop_doc("audit1")),
    Case("orphan-lifecycle", "leased", drop_doc("root", "audit1")),
    Case("orphan-terminal-lifecycle", "succeeded", drop_doc("root", "audit1")),
    Case("leased-without-partner", "leased", drop_doc("partner")),
    Case("taken-over-without-partner", "taken-over", drop_doc("partner")),
    Case("succeeded-without-partner", "succeeded", drop_doc("partner")),
    Case("failed-without-partner", "failed", drop_doc("partner")),
    Case("registered-with-preseeded-audit-2", "registered", add_doc("next", next_audit)),
    Case("registered-with-preseeded-empty-audit-2", "registered", add_doc("next", lambda docs: {})),
    Case("leased-with-preseeded-next-audit", "leased", add_doc("next", next_audit)),
    Case("taken-over-with-preseeded-next-audit", "taken-over", add_doc("next", next_audit)),
    Case("succeeded-with-preseeded-next-audit", "succeeded", add_doc("next", next_audit)),
    Case("failed-with-preseeded-next-audit", "failed", add_doc("next", next_audit)),
    # future / unknown versions
    Case("root-journal-schema-version-2", "registered", set_field("root", "journalSchemaVersion", 2)),
    Case("root-journal-schema-version-0", "registered", set_field("root", "journalSchemaVersion", 0)),
    Case("root-command-identity-version-2", "registered", set_field("root", "commandIdentityVersion", 2)),
    Case("audit-1-schema-version-2", "registered", set_field("audit1", "auditSchemaVersion", 2)),
    Case("lifecycle-schema-version-2", "leased", set_field("lifecycle", "lifecycleSchemaVersion", 2)),
    Case("partner-audit-schema-version-3", "leased", set_field("partner", "auditSchemaVersion", 3)),
    Case("partner-audit-schema-version-1", "leased", set_field("partner", "auditSchemaVersion", 1)),
    # hashes
    Case("root-payload-fingerprint-uppercase", "registered", set_field("root", "payloadFingerprint", UPPER_HASH)),
    Case("root-payload-fingerprint-short", "registered", set_field("root", "payloadFingerprint", SHORT_HASH)),
    Case("audit-1-key-hash-uppercase", "registered", set_field("audit1", "commandKeyHash", CMD.key_hash.upper())),
    Case("audit-1-key-hash-of-another-command", "registered", set_field("audit1", "commandKeyHash", OTHER.key_hash)),
    Case("lifecycle-key-hash-of-another-command", "leased", set_field("lifecycle", "commandKeyHash", OTHER.key_hash)),
    Case("lifecycle-owner-uppercase", "leased", set_field("lifecycle", "leaseOwnerFingerprint", UPPER_HASH)),
    Case("lifecycle-owner-raw-lease-id", "leased", set_field("lifecycle", "leaseOwnerFingerprint", LEASE_A)),
    Case("lifecycle-commitment-uppercase", "succeeded", set_field("lifecycle", "terminalCommitmentHash", UPPER_HASH)),
    Case(
        "lifecycle-commitment-one-uppercase-digit",
        "succeeded",
        set_field("lifecycle", "terminalCommitmentHash", "a" * 63 + "A"),
    ),
    Case("partner-key-hash-of-another-command", "leased", set_field("partner", "commandKeyHash", OTHER.key_hash)),
    # enums and constants
    Case("root-state-leased", "registered", set_field("root", "state", "leased")),
    Case("root-state-capitalised", "registered", set_field("root", "state", "Registered")),
    Case("root-revision-2", "registered", set_field("root", "revision", 2)),
    Case("root-environment-unknown", "registered", set_field("root", "environment", "prod")),
    Case("root-caller-kind-unknown", "registered", set_field("root", "callerScopeKind", "admin")),
    Case("root-command-type-not-a-slug", "registered", set_field("root", "commandType", "Bad-Type")),
    Case("root-endpoint-version-0", "registered", set_field("root", "endpointSchemaVersion", 0)),
    Case("root-endpoint-version-1000001", "registered", set_field("root", "endpointSchemaVersion", 1_000_001)),
    Case("audit-1-aggregate-type", "registered", set_field("audit1", "aggregateType", "checkout")),
    Case("audit-1-event-type", "registered", set_field("audit1", "eventType", "command_lease_acquired")),
    Case("audit-1-from-state", "registered", set_field("audit1", "fromState", "registered")),
    Case("audit-1-to-state", "registered", set_field("audit1", "toState", "leased")),
    Case("audit-1-revision-2", "registered", set_field("audit1", "commandRevision", 2)),
    Case("lifecycle-state-registered", "leased", set_field("lifecycle", "state", "registered")),
    Case("lifecycle-state-executing", "leased", set_field("lifecycle", "state", "executing")),
    Case("lifecycle-state-uppercase", "succeeded", set_field("lifecycle", "state", "SUCCEEDED")),
    Case("lifecycle-commitment-kind-unknown", "succeeded", set_field("lifecycle", "terminalCommitmentKind", "url")),
    Case("partner-event-type-unknown", "leased", set_field("partner", "eventType", "command_executed")),
    Case("partner-aggregate-type", "leased", set_field("partner", "aggregateType", "checkout")),
    # stored environment / caller-scope kind disagreeing with the caller's (both part of the key hash)
    Case(
        "stored-environment-mismatch",
        "registered",
        both(set_field("root", "environment", "production"), set_field("audit1", "environment", "production")),
    ),
    Case(
        "stored-caller-kind-mismatch",
        "registered",
        both(
            set_field("root", "callerScopeKind", "internal_system"),
            set_field("audit1", "callerScopeKind", "internal_system"),
        ),
    ),
    Case("audit-1-environment-differs-from-root", "registered", set_field("audit1", "environment", "production")),
    Case(
        "audit-1-caller-kind-differs-from-root", "registered", set_field("audit1", "callerScopeKind", "internal_system")
    ),
    Case("audit-1-command-type-differs-from-root", "registered", set_field("audit1", "commandType", "refund_order")),
    # registration timestamps
    Case("root-updated-after-created", "registered", set_field("root", "updatedAt", T0 + US)),
    Case("audit-1-occurred-after-root-created", "registered", set_field("audit1", "occurredAt", T0 + US)),
    Case("audit-1-occurred-before-root-created", "registered", set_field("audit1", "occurredAt", T0 - US)),
    # lifecycle timestamps (partner rebuilt to match)
    Case("lifecycle-created-before-registration", "taken-over", relifecycle(createdAt=T0 - US)),
    Case("lifecycle-created-after-acquired", "taken-over", relifecycle(createdAt=T2 + US)),
    Case("first-lease-created-before-acquired", "leased", relifecycle(createdAt=T1 - US)),
    Case(
        "first-lease-before-registration",
        "leased",
        relifecycle(leaseAcquiredAt=T0 - US, leaseExpiresAt=T0 - US + LEASE, createdAt=T0 - US, updatedAt=T0 - US),
    ),
    Case("expiry-one-microsecond-late", "leased", relifecycle(leaseExpiresAt=shifted("leaseExpiresAt", US))),
    Case("expiry-one-microsecond-early", "leased", relifecycle(leaseExpiresAt=shifted("leaseExpiresAt", -US))),
    Case("expiry-equals-acquired", "leased", relifecycle(leaseExpiresAt=shifted("leaseAcquiredAt", timedelta(0)))),
    Case("leased-updated-after-acquired", "taken-over", relifecycle(updatedAt=shifted("updatedAt", US))),
    Case("terminal-updated-at-expiry", "succeeded", relifecycle(updatedAt=shifted("leaseExpiresAt", timedelta(0)))),
    Case("terminal-updated-after-expiry", "failed", relifecycle(updatedAt=shifted("leaseExpiresAt", US))),
    Case("terminal-updated-before-acquired", "succeeded", relifecycle(updatedAt=shifted("leaseAcquiredAt", -US))),
    # revision / fence relation
    Case("leased-revision-3-fence-1", "leased", relifecycle(commandRevision=3)),
    Case("leased-revision-2-fence-2", "leased", relifecycle(fenceEpoch=2)),
    Case("succeeded-revision-4-fence-1", "succeeded", relifecycle(commandRevision=4)),
    Case("failed-revision-3-fence-2", "failed", relifecycle(fenceEpoch=2)),
    Case("lifecycle-revision-1", "leased", set_field("lifecycle", "commandRevision", 1)),
    Case("lifecycle-fence-0", "leased", relifecycle(fenceEpoch=0, commandRevision=1)),
    Case("leased-revision-above-maximum", "leased", relifecycle(fenceEpoch=MAX, commandRevision=MAX + 1)),
    Case("leased-fence-at-maximum", "leased", relifecycle(fenceEpoch=MAX, commandRevision=MAX)),
    Case("succeeded-fence-at-maximum", "succeeded", relifecycle(fenceEpoch=MAX, commandRevision=MAX + 2)),
    Case("leased-fence-above-maximum", "leased", relifecycle(fenceEpoch=MAX + 1, commandRevision=MAX + 2)),
    Case(
        "leased-with-terminal-fields",
        "leased",
        both(
            set_field("lifecycle", "terminalCommitmentKind", "business_record_digest"),
            set_field("lifecycle", "terminalCommitmentHash", CMD.commitment(REF_A)),
        ),
    ),
    Case(
        "succeeded-without-commitment",
        "succeeded",
        both(
            set_field("lifecycle", "terminalCommitmentKind", None),
            set_field("lifecycle", "terminalCommitmentHash", None),
        ),
    ),
    Case(
        "failed-with-commitment",
        "failed",
        both(
            set_field("lifecycle", "terminalCommitmentKind", "business_record_digest"),
            set_field("lifecycle", "terminalCommitmentHash", CMD.commitment(REF_A)),
        ),
    ),
    # the current audit partner
    Case("partner-taken-over-at-revision-2", "leased", set_field("partner", "eventType", "command_lease_taken_over")),
    Case(
        "partner-acquired-at-revision-3",
        "taken-over",
        both(
            set_field("partner", "eventType", "command_lease_acquired"), set_field("partner", "fromState", "registered")
        ),
    ),
    Case("partner-from-state", "leased", set_field("partner", "fromState", "leased")),
    Case("partner-to-state", "leased", set_field("partner", "toState", "succeeded")),
    Case("partner-failed-event-for-success", "succeeded", set_field("partner", "eventType", "command_failed_final")),
    Case("partner-to-leased-for-success", "succeeded", set_field("partner", "toState", "leased")),
    Case("partner-fence", "leased", set_field("partner", "fenceEpoch", 2)),
    Case("partner-expiry", "leased", set_field("partner", "leaseExpiresAt", T1 + LEASE + US)),
    Case("partner-occurred", "succeeded", set_field("partner", "occurredAt", TC + US)),
    Case("partner-revision", "leased", set_field("partner", "commandRevision", 3)),
    Case("partner-environment", "leased", set_field("partner", "environment", "production")),
    Case("partner-caller-kind", "leased", set_field("partner", "callerScopeKind", "internal_system")),
    Case("partner-command-type", "leased", set_field("partner", "commandType", "refund_order")),
]

ALL_CASES = NAMED_CASES + field_cases()


def test_case_ids_are_unique():
    ids = [case.id for case in ALL_CASES]
    assert len(ids) == len(set(ids))


def _valid_answer(operation: str, base: str) -> str:
    return answer(operation, seed(FakeFirestore(), BASES[base]()), TC)


@pytest.mark.parametrize("operation", ["register", "acquire", "complete", "fail"])
@pytest.mark.parametrize("base", list(BASES))
def test_every_base_state_is_valid(operation, base):
    assert _valid_answer(operation, base) not in ("unrecognized_record", "command_conflict", "invalid_command_input")


@pytest.mark.parametrize("operation", ["register", "acquire", "complete", "fail"])
@pytest.mark.parametrize("case", ALL_CASES, ids=[case.id for case in ALL_CASES])
def test_malformed_record_is_unrecognized_and_untouched(case, operation):
    docs = BASES[case.base]()
    case.mutate(docs)
    db = seed(FakeFirestore(), docs)
    with no_writes(db):
        assert answer(operation, db, TC) == "unrecognized_record"


@pytest.mark.parametrize("operation", ["register", "acquire", "complete", "fail"])
def test_malformed_record_wins_over_a_payload_conflict(operation):
    docs = BASES["leased"]()
    set_field("partner", "fenceEpoch", 7)(docs)
    db = seed(FakeFirestore(), docs)
    conflicting = CMD.but(payload={"different": True})
    with no_writes(db):
        assert answer(operation, db, TC, conflicting) == "unrecognized_record"


# -- revision at the maximum: read-only answers still work, mutations are overflow ------------------------------------
def at_maximum(state: str = "leased") -> FakeFirestore:
    fence = MAX - (1 if state == "leased" else 2)
    extra = {"updated": TC} if state != "leased" else {}
    return seed(FakeFirestore(), lifecycle_docs(state=state, fence=fence, acquired=T1, created=T1, **extra))


def test_maximum_revision_lease_is_valid():
    db = at_maximum()
    assert db.get(CMD.lifecycle_path)["commandRevision"] == MAX


@pytest.mark.parametrize(
    ("operation", "at", "kwargs", "expected"),
    [
        pytest.param("register", TC, {}, "registered_existing", id="register"),
        pytest.param("acquire", TC, {}, "lease_acquired", id="same-holder-recovery"),
        pytest.param("acquire", TC, {"lease": LEASE_B}, "lease_busy", id="other-holder-busy"),
        pytest.param(
            "complete", TC, {"lease": LEASE_B, "fence": MAX - 1}, "lease_rejected", id="complete-other-holder"
        ),
        pytest.param("acquire", T2, {"lease": LEASE_B}, "unrecognized_record", id="takeover-overflows"),
        pytest.param("acquire", T2, {}, "unrecognized_record", id="same-holder-takeover-overflows"),
        pytest.param("complete", TC, {"fence": MAX - 1}, "unrecognized_record", id="complete-overflows"),
        pytest.param("fail", TC, {"fence": MAX - 1}, "unrecognized_record", id="fail-overflows"),
    ],
)
def test_leased_at_maximum_revision(operation, at, kwargs, expected):
    db = at_maximum()
    with no_writes(db):
        assert answer(operation, db, at, **kwargs) == expected


def test_leased_at_maximum_revision_recovery_reports_the_stored_fence():
    assert acquire(at_maximum(), TC).fence_epoch == MAX - 1


@pytest.mark.parametrize(
    ("operation", "kwargs", "expected"),
    [
        pytest.param("register", {}, "registered_existing", id="register"),
        pytest.param("acquire", {"lease": LEASE_B}, "terminal_succeeded", id="acquire"),
        pytest.param("complete", {"fence": MAX - 2}, "terminal_succeeded", id="exact-retry"),
        pytest.param("complete", {"fence": MAX - 2, "ref": REF_B}, "terminal_conflict", id="other-commitment"),
    ],
)
def test_terminal_at_maximum_revision(operation, kwargs, expected):
    db = at_maximum("succeeded")
    with no_writes(db):
        assert answer(operation, db, T2, **kwargs) == expected
