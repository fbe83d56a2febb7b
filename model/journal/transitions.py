"""The transition table: every answer `step` can give, one row each (docs/journal-decisions.md).

`from_state` classes: absent (nothing stored), registered (pair, no lifecycle), leased, succeeded,
failed_final, terminal (either terminal state), stored (pair present, any lifecycle), corrupt, any.
`reachable` is False for rows that only a fault (or nothing) can reach.
"""

from __future__ import annotations

import attrs

from .constants import (
    COMMAND_CONFLICT,
    COMMAND_NOT_REGISTERED,
    JOURNAL_UNAVAILABLE,
    LEASE_ACQUIRED,
    LEASE_BUSY,
    LEASE_REJECTED,
    REGISTERED_EXISTING,
    REGISTERED_NEW,
    TERMINAL_CONFLICT,
    TERMINAL_FAILED_FINAL,
    TERMINAL_SUCCEEDED,
    UNRECOGNIZED_RECORD,
)


@attrs.frozen
class Transition:
    id: str
    operation: str  # register | acquire | complete | fail | any | fault
    from_state: str
    condition: str
    outcome: str | None  # output outcome or error code; None for fault rows
    writes: bool
    reachable: bool = True


def _t(id_, from_state, condition, outcome, writes=False, reachable=True):
    return Transition(id_, id_.split(".")[0], from_state, condition, outcome, writes, reachable)


def _terminal_rows(op: str, state: str, outcome: str) -> tuple[Transition, ...]:
    exact = f"lifecycle {state} with holder o, fence f" + (" and commitment c" if op == "complete" else "")
    return (
        _t(f"{op}.unregistered", "absent", "root and revision-1 audit absent", COMMAND_NOT_REGISTERED),
        _t(f"{op}.conflict", "stored", "stored type, version or payload fingerprint differs", COMMAND_CONFLICT),
        _t(f"{op}.clock_earlier.exact_retry", state, f"now < lifecycle.updatedAt; {exact}", outcome),
        _t(
            f"{op}.clock_earlier.unavailable",
            "stored",
            "now < lifecycle.updatedAt (root.createdAt without lifecycle); not an exact retry",
            JOURNAL_UNAVAILABLE,
        ),
        _t(f"{op}.no_lease", "registered", "no lifecycle", LEASE_REJECTED),
        _t(f"{op}.terminal.exact_retry", state, f"{exact} (even after expiry)", outcome),
        _t(f"{op}.terminal.conflict", "terminal", "not an exact terminal retry", TERMINAL_CONFLICT),
        _t(f"{op}.wrong_holder", "leased", "owner != o", LEASE_REJECTED),
        _t(f"{op}.stale_fence", "leased", "owner = o, fence != f", LEASE_REJECTED),
        _t(f"{op}.expired", "leased", "owner = o, fence = f, now >= expiry", LEASE_REJECTED),
        _t(
            f"{op}.overflow",
            "leased",
            "exact holder and fence, active, revision at maximum",
            UNRECOGNIZED_RECORD,
            reachable=False,
        ),
        _t(
            f"{op}.exact",
            "leased",
            f"exact holder and fence, now < expiry: {state}, revision+1, audit R+1",
            outcome,
            writes=True,
        ),
    )


TRANSITIONS: tuple[Transition, ...] = (
    _t("register.absent.new", "absent", "root, revision-1 audit and lifecycle absent", REGISTERED_NEW, True),
    _t("register.existing.same", "stored", "same type, version and payload fingerprint", REGISTERED_EXISTING),
    _t("register.existing.conflict_type", "stored", "stored commandType differs", COMMAND_CONFLICT),
    _t(
        "register.existing.conflict_version",
        "stored",
        "same type, stored endpointSchemaVersion differs",
        COMMAND_CONFLICT,
    ),
    _t(
        "register.existing.conflict_payload",
        "stored",
        "same type and version, stored payloadFingerprint differs",
        COMMAND_CONFLICT,
    ),
    _t("acquire.unregistered", "absent", "root and revision-1 audit absent", COMMAND_NOT_REGISTERED),
    _t("acquire.conflict", "stored", "stored type, version or payload fingerprint differs", COMMAND_CONFLICT),
    _t("acquire.first_clock_before_registration", "registered", "now < root.createdAt", JOURNAL_UNAVAILABLE),
    _t(
        "acquire.first",
        "registered",
        "now >= root.createdAt: leased, fence 1, revision 2, audit 2",
        LEASE_ACQUIRED,
        writes=True,
    ),
    _t("acquire.active.same_holder", "leased", "now < expiry, owner = o (stored fence/expiry)", LEASE_ACQUIRED),
    _t("acquire.active.other_holder", "leased", "now < expiry, owner != o", LEASE_BUSY),
    _t("acquire.overflow", "leased", "now >= expiry, revision at maximum", UNRECOGNIZED_RECORD, reachable=False),
    _t(
        "acquire.expired.takeover_other",
        "leased",
        "now >= expiry, owner != o: fence+1, revision+1, audit R+1",
        LEASE_ACQUIRED,
        writes=True,
    ),
    _t(
        "acquire.expired.takeover_same_id",
        "leased",
        "now >= expiry, owner = o: fence+1, revision+1, audit R+1",
        LEASE_ACQUIRED,
        writes=True,
    ),
    _t("acquire.terminal.succeeded", "succeeded", "any holder, any clock", TERMINAL_SUCCEEDED),
    _t("acquire.terminal.failed_final", "failed_final", "any holder, any clock", TERMINAL_FAILED_FINAL),
    *_terminal_rows("complete", "succeeded", TERMINAL_SUCCEEDED),
    *_terminal_rows("fail", "failed_final", TERMINAL_FAILED_FINAL),
    _t("any.corrupt", "corrupt", "stored documents are not a valid record", UNRECOGNIZED_RECORD, reachable=False),
    _t(
        "any.commit_failed",
        "any",
        "injected commit failure and the answer is not an error raised in the callback; nothing applied",
        JOURNAL_UNAVAILABLE,
    ),
    Transition("fault_injected", "fault", "stored", "fault_applies(kind): documents rewritten", None, True, False),
    Transition("fault_not_applicable", "fault", "any", "fault precondition fails: no change", None, False, False),
)

TRANSITION_IDS: frozenset[str] = frozenset(row.id for row in TRANSITIONS)
TRANSITIONS_BY_ID: dict[str, Transition] = {row.id: row for row in TRANSITIONS}
assert len(TRANSITION_IDS) == len(TRANSITIONS), "duplicate transition id"
