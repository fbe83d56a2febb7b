"""Operations: the ten gateway calls, each with its injected clock reading and the simulated answers of the
hosted service and the provider as plain arguments (decision G1: the journal alone is under test).

Every operation is a frozen, hashable value. A `JournalRef` carries the inputs every call shares (request
and provider input as canonical JSON strings); identities derived from it are memoized. Inputs are assumed
valid: the model starts after input validation, as the journal's model does.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

import attrs

from . import identity
from .constants import LINEARIZABLE

_ZERO = timedelta(0)


def _utc(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, datetime) or value.utcoffset() != _ZERO:
        raise ValueError(f"{attribute.name} must be an aware UTC datetime")


@functools.lru_cache(maxsize=1 << 14)
def _identities(ns: str, binding: str, op_id: str, provider: str, request: str, provider_input: str) -> tuple:
    key = identity.journal_key(ns, binding, op_id)
    input_digest = identity.provider_input_digest(provider_input)
    op_identity = identity.operation_identity(key, provider, request, input_digest)
    return (
        key,
        input_digest,
        op_identity,
        identity.consume_idempotency_key(op_identity),
        identity.provider_create_idempotency_key(op_identity),
        identity.provider_confirm_idempotency_key(op_identity),
    )


@functools.lru_cache(maxsize=1 << 14)
def owner_fingerprint_of(key: str, lease_id: str) -> str:
    return identity.lease_owner_fingerprint(key, lease_id)


@attrs.frozen(cache_hash=True)
class JournalRef:
    """What every call names: the namespace, the binding, the operation id and its bound inputs."""

    namespace_id: str
    gateway_binding_id: str
    operation_id: str
    provider: str
    request: str  # canonical JSON
    provider_input: str  # canonical JSON
    consistency: str = LINEARIZABLE  # the namespace's declaration (G2)

    def _ids(self) -> tuple:
        return _identities(
            self.namespace_id,
            self.gateway_binding_id,
            self.operation_id,
            self.provider,
            self.request,
            self.provider_input,
        )

    @property
    def journal_key(self) -> str:
        return self._ids()[0]

    @property
    def provider_input_digest(self) -> str:
        return self._ids()[1]

    @property
    def operation_identity(self) -> str:
        return self._ids()[2]

    @property
    def consume_idempotency_key(self) -> str:
        return self._ids()[3]

    @property
    def provider_create_idempotency_key(self) -> str:
        return self._ids()[4]

    @property
    def provider_confirm_idempotency_key(self) -> str:
        return self._ids()[5]


@attrs.frozen(cache_hash=True)
class HostedAnswer:
    """The hosted CONSUME answer (simulated). FRESH/IDEMPOTENT_CONSUMED carry the permit group; OTHER_STATE
    carries none of it and a hosted state other than CONSUMED."""

    kind: str  # FRESH | IDEMPOTENT_CONSUMED | OTHER_STATE
    idempotency_key: str
    operation_identity: str
    hosted_state: str = "CONSUMED"
    transition_id: str | None = None
    permit_id: str | None = None
    permit_digest: str | None = None
    transitioned_at: int | None = None  # epoch ms
    settlement_deadline_at: int | None = None  # epoch ms

    @property
    def permit_group(self) -> tuple:
        return (
            self.transition_id,
            self.permit_id,
            self.permit_digest,
            self.transitioned_at,
            self.settlement_deadline_at,
        )


@attrs.frozen(cache_hash=True)
class Evidence:
    """Settlement evidence from hosted reconciliation or the provider (simulated)."""

    evidence_class: str
    independent_verification: bool
    verdict: str  # SETTLED | FAILED | NOT_SUBMITTED | PENDING | UNKNOWN | CONFLICTING
    operation_identity: str
    payment_reference: str | None
    submission_fenced: bool
    receipt_digest: str | None


@attrs.frozen(kw_only=True)
class _Call:
    journal: JournalRef
    region: str = "us-east"
    now: datetime = attrs.field(validator=_utc)


@attrs.frozen(kw_only=True)
class _Tx(_Call):
    """A call that runs one read-write transaction (every call but `get`)."""

    commit_fails: bool = False  # the server rejects the commit: nothing applied


@attrs.frozen(cache_hash=True, kw_only=True)
class Begin(_Tx):
    pass


@attrs.frozen(cache_hash=True, kw_only=True)
class Get(_Call):
    pass


@attrs.frozen(cache_hash=True, kw_only=True)
class _Leased(_Tx):
    lease_id: str

    @property
    def owner_fingerprint(self) -> str:
        return owner_fingerprint_of(self.journal.journal_key, self.lease_id)


@attrs.frozen(cache_hash=True, kw_only=True)
class ClaimConsume(_Leased):
    pass


@attrs.frozen(cache_hash=True, kw_only=True)
class RecordConsume(_Leased):
    expected_fence_epoch: int
    answer: HostedAnswer


@attrs.frozen(cache_hash=True, kw_only=True)
class TakeProviderIntent(_Leased):
    pass


@attrs.frozen(cache_hash=True, kw_only=True)
class ReportSubmission(_Leased):
    expected_fence_epoch: int
    claim_id: str
    provider_submission_id: str
    payment_reference: str
    caller_outcome: str

    @property
    def report(self) -> tuple:
        return (self.claim_id, self.provider_submission_id, self.payment_reference, self.caller_outcome)


@attrs.frozen(cache_hash=True, kw_only=True)
class TakeReconcileLease(_Leased):
    pass


@attrs.frozen(cache_hash=True, kw_only=True)
class ApplyEvidence(_Leased):
    expected_fence_epoch: int
    evidence: Evidence


@attrs.frozen(cache_hash=True, kw_only=True)
class ManualTerminal(_Tx):
    processor_result: str  # COMMIT | RELEASE
    claimed_independent_verification: bool
    submission_fenced: bool


@attrs.frozen(cache_hash=True, kw_only=True)
class CloseWindow(_Tx):
    pass


Operation = (
    Begin
    | Get
    | ClaimConsume
    | RecordConsume
    | TakeProviderIntent
    | ReportSubmission
    | TakeReconcileLease
    | ApplyEvidence
    | ManualTerminal
    | CloseWindow
)
OPERATION_NAMES = {
    Begin: "begin",
    Get: "get",
    ClaimConsume: "claim",
    RecordConsume: "rcr",
    TakeProviderIntent: "tpi",
    ReportSubmission: "rps",
    TakeReconcileLease: "trl",
    ApplyEvidence: "ase",
    ManualTerminal: "mt",
    CloseWindow: "csw",
}
