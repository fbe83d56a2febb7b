"""The gateway's parallel programs (`fencecheck.parallel.ParallelSpec`): its strategy of contested calls and its
structural check of a race (G-INV-1..12 on the stored documents at the end, G-INV-2/9/10 across the race:
`fencecheck.systems.gateway.structure`, as the gateway's contests check).

What makes the calls compete (the contract's races, tests/systems/gateway/races.py, in miniature), on one
journal whose prefix is one of its lives' stages:

- `begun`, `claimed` (owner-a's consume lease), `recovered` (owner-b took it over at the expiry), `consumed`,
  `provider` (provider-p's intent), `reported` (its report), `reconciling` (reconciler-r's lease on the
  abandoned intent);
- branch calls: a consume claim, a consume answer (the first owner's fresh answer or the current owner's
  replay), a provider intent, the provider owner's report, a reconcile lease, settled or failed evidence from
  the provider or reconcile owner, a manual COMMIT or RELEASE, a window closure; each by one of a few workers;
  and, at any stage, the two calls that never write after the prefix's begin (`OBSERVERS`): a read of the
  journal (`get_gateway_journal`: its state, revision, fence and whether a lease is active at the reading,
  judged against the writes around it) and the begin retried, exactly (`begun_existing`, the stored state) or
  with the provider input changed (`CHANGED`: `binding_conflict` whatever the stage);
- clock readings at the boundaries: a second after the prefix, 1 µs before the stage's lease expiry, at it
  exactly (equality is expired), a second after it, and 1 ms before and at the settlement deadline (equality
  is elapsed). A boundary that a stage does not have falls back to the first reading;
- swarm testing (as the journal's and the lantern's): each program draws its calls' intents from one subset,
  so some programs are all claims, or all evidence and reconcile leases, and concentrate one contest; the
  subset's writers are kept to the intents that can write at the stage (`WRITERS`, all of them when it names
  none) and its observers join them, so a swarm of observers alone races them against the stage's writers.

Everything shrinks toward the simplest race: a begun journal, then two claims a second later (the writers come
first, the observers after them). Every call draws the same choices whatever its intent (its intent, worker,
clock reading, variant and holder), so simplifying one call keeps the meaning of the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from hypothesis import strategies as st

from fencecheck.emulator.firestore_io import Stored, read_project
from fencecheck.parallel.program import BranchCall, ParallelProgram, trim_branches
from fencecheck.parallel.property import Budget
from fencecheck.parallel.spec import ParallelSpec
from fencecheck.systems.gateway.structure import ROOT
from fencecheck.systems.gateway.structure import race_problems as stored_race_problems
from model.gateway import (
    SETTLEMENT_WINDOW_MS,
    ApplyEvidence,
    Begin,
    ClaimConsume,
    CloseWindow,
    Evidence,
    GatewayState,
    Get,
    HostedAnswer,
    JournalRef,
    ManualTerminal,
    RecordConsume,
    ReportSubmission,
    TakeProviderIntent,
    TakeReconcileLease,
    floor_ms,
    invariant_violations,
    ms_time,
)

SYSTEM = "gateway"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
US = timedelta(microseconds=1)
MS = timedelta(milliseconds=1)
S = timedelta(seconds=1)
NAMESPACE = "gw-par"
REF = JournalRef(NAMESPACE, "merchant-binding-1", "0f8fad5b-d9cb-469f-a165-70867728950e", "stripe_payment_intent",
                 '{"amount":1200,"currency":"usd"}', '{"payment_method":"pm_card_visa"}')
# The same operation id with one field of its input changed: the same journal (the key has no input in it), another
# operation identity, so the contract refuses it at every stage (`binding_conflict`).
CHANGED = attrs.evolve(REF, provider_input='{"payment_method":"pm_card_mastercard"}')
OWNER_A, OWNER_B, PROVIDER, RECONCILER, OTHER = "owner-a", "owner-b", "provider-p", "reconciler-r", "worker-c"
WORKERS = (OWNER_A, OWNER_B, PROVIDER, RECONCILER, OTHER)

# One journal's life at fixed times (as the race scenarios'): claimed at T1 (a 30 s lease), consumed a second
# later (the deadline is T1 + 15 min), provider intent at T2 (120 s), reported a second later, reconciled at
# the provider lease's expiry (60 s).
T1 = T0 + S
CONSUME_EXPIRY = T1 + 30 * S
T2 = T1 + 2 * S
PROVIDER_EXPIRY = T2 + 120 * S
RECONCILE_EXPIRY = PROVIDER_EXPIRY + 60 * S


def _answer(kind: str) -> HostedAnswer:
    at = floor_ms(T1)
    return HostedAnswer(kind, REF.consume_idempotency_key, REF.operation_identity, transition_id="tr-permit-1",
                        permit_id="permit-1", permit_digest="d" * 64, transitioned_at=at,
                        settlement_deadline_at=at + SETTLEMENT_WINDOW_MS)


FRESH, REPLAY = _answer("FRESH"), _answer("IDEMPOTENT_CONSUMED")
DEADLINE = ms_time(FRESH.settlement_deadline_at)


def _evidence(verdict: str) -> Evidence:
    return Evidence("PROVIDER_API_VERIFIED", True, verdict, REF.operation_identity, "pi_1", True, "c" * 64)


def _report(lease: str, fence: int, now: datetime) -> ReportSubmission:
    return ReportSubmission(journal=REF, lease_id=lease, expected_fence_epoch=fence, claim_id="claim-1",
                            provider_submission_id="sub-1", payment_reference="pi_1", caller_outcome="succeeded",
                            now=now)


_BEGUN = (Begin(journal=REF, now=T0),)
_CLAIMED = (*_BEGUN, ClaimConsume(journal=REF, lease_id=OWNER_A, now=T1))
_CONSUMED = (*_CLAIMED, RecordConsume(journal=REF, lease_id=OWNER_A, expected_fence_epoch=1, answer=FRESH,
                                      now=T1 + S))
_PROVIDER = (*_CONSUMED, TakeProviderIntent(journal=REF, lease_id=PROVIDER, now=T2))
_REPORTED = (*_PROVIDER, _report(PROVIDER, 2, T2 + S))
# stage -> (prefix, the current lease's expiry or None)
STAGES: dict[str, tuple[tuple[Any, ...], datetime | None]] = {
    "begun": (_BEGUN, None),
    "claimed": (_CLAIMED, CONSUME_EXPIRY),
    "recovered": ((*_CLAIMED, ClaimConsume(journal=REF, lease_id=OWNER_B, now=CONSUME_EXPIRY)),
                  CONSUME_EXPIRY + 30 * S),
    "consumed": (_CONSUMED, None),
    "provider": (_PROVIDER, PROVIDER_EXPIRY),
    "reported": (_REPORTED, PROVIDER_EXPIRY),
    "reconciling": ((*_REPORTED, TakeReconcileLease(journal=REF, lease_id=RECONCILER, now=PROVIDER_EXPIRY)),
                    RECONCILE_EXPIRY),
}

# Why a call is drawn (see the module docstring); "claim" first: the simplest race is two claims.
# The intents that never write once the journal is begun (every prefix begins it): a read, and the begin retried
# (exactly, or with its input changed). They join a swarm's writers at any stage, never replace them.
OBSERVERS = ("get", "begin")
INTENTS = ("claim", "record", "provider_intent", "report", "reconcile", "evidence", "manual", "close", *OBSERVERS)
SWARMS = (
    INTENTS,
    ("claim",),
    ("claim", "record"),
    ("provider_intent", "close"),
    ("report", "reconcile"),
    ("evidence", "reconcile"),
    ("manual", "reconcile"),
    ("evidence", "manual", "close"),
    ("claim", "get"),
    OBSERVERS,  # the stage's writers, read and begun again
)


# The intents that can write at each stage (a swarm's writers are kept to these, or all of these when it has
# none of them): most calls at the wrong stage only observe, and a race of observers proves little. No observer
# is among them: they write at no stage.
WRITERS = {
    "begun": ("claim",),
    "claimed": ("claim", "record"),
    "recovered": ("claim", "record"),
    "consumed": ("provider_intent", "close"),
    "provider": ("report", "reconcile", "evidence", "manual", "provider_intent"),
    "reported": ("reconcile", "evidence", "manual"),
    "reconciling": ("reconcile", "evidence", "manual"),
}


def readings(stage: str) -> tuple[datetime, ...]:
    """Clock readings worth trying for a stage, simplest first (module docstring)."""
    prefix, expiry = STAGES[stage]
    after = prefix[-1].now + S
    around = (after,) if expiry is None else (expiry - US, expiry, expiry + S)
    return (after, *around, DEADLINE - MS, DEADLINE)


def _pick(options: tuple, index: int) -> Any:
    return options[index % len(options)]


@st.composite
def gateway_calls(draw: st.DrawFn, stage: str, intents: tuple[str, ...] = INTENTS) -> Any:
    """One call on the stage's journal, with an intent from `intents` (see the module docstring)."""
    writers = tuple(intent for intent in intents if intent in WRITERS[stage]) or WRITERS[stage]
    usable = writers + tuple(intent for intent in intents if intent in OBSERVERS)
    intent = _pick(usable, draw(st.integers(0, len(INTENTS) - 1)))
    worker = WORKERS[draw(st.integers(0, len(WORKERS) - 1))]
    now = _pick(readings(stage), draw(st.integers(0, 5)))
    choice = draw(st.integers(0, 1))  # the call's variant: which answer, evidence, terminal or begin input
    holder = draw(st.integers(0, 1))  # evidence's lease holder: the provider owner or the reconcile owner
    if intent == "get":
        return Get(journal=REF, now=now)
    if intent == "begin":  # the same begin retried exactly, or with the provider input changed
        return Begin(journal=(REF, CHANGED)[choice], now=now)
    if intent == "claim":
        return ClaimConsume(journal=REF, lease_id=worker, now=now)
    if intent == "record":  # the first owner's fresh answer, or the recovering owner's replay
        lease, fence, answer = ((OWNER_A, 1, FRESH), (OWNER_B, 2, REPLAY))[choice]
        return RecordConsume(journal=REF, lease_id=lease, expected_fence_epoch=fence, answer=answer, now=now)
    if intent == "provider_intent":
        return TakeProviderIntent(journal=REF, lease_id=worker, now=now)
    if intent == "report":
        return _report(PROVIDER, 2, now)
    if intent == "reconcile":
        return TakeReconcileLease(journal=REF, lease_id=worker, now=now)
    if intent == "evidence":  # settled or failed, from the provider owner (fence 2) or the reconcile owner (3)
        lease, fence = ((PROVIDER, 2), (RECONCILER, 3))[holder]
        return ApplyEvidence(journal=REF, lease_id=lease, expected_fence_epoch=fence,
                             evidence=_evidence(("SETTLED", "FAILED")[choice]), now=now)
    if intent == "manual":
        return ManualTerminal(journal=REF, processor_result=("COMMIT", "RELEASE")[choice],
                              claimed_independent_verification=True, submission_fenced=True, now=now)
    return CloseWindow(journal=REF, now=now)


@st.composite
def _programs(draw: st.DrawFn, max_prefix_ops: int, max_branches: int, max_concurrent_ops: int,
              max_branch_ops: int) -> ParallelProgram:
    stage = draw(st.sampled_from(tuple(STAGES)))
    prefix = STAGES[stage][0][:max(max_prefix_ops, 1)]
    if len(prefix) < len(STAGES[stage][0]):
        stage = "begun"  # a cut prefix is a begun journal at most; its readings are the begun stage's
        prefix = STAGES[stage][0]
    swarm = draw(st.sampled_from(SWARMS))
    calls = st.builds(BranchCall, gateway_calls(stage, swarm))
    branches = draw(st.lists(st.lists(calls, min_size=1, max_size=max_branch_ops), min_size=2, max_size=max_branches))
    return ParallelProgram(prefix, trim_branches(branches, max_concurrent_ops), T0, system=SYSTEM)


def programs(*, max_prefix_ops: int = 6, max_branches: int = 4, max_concurrent_ops: int = 12,
             max_branch_ops: int = 4) -> st.SearchStrategy[ParallelProgram]:
    """The gateway's parallel programs (the engine keeps those with a contested journal)."""
    return _programs(max_prefix_ops, max_branches, max_concurrent_ops, max_branch_ops)


def before_race(db: Any, _keys: tuple[str, ...]) -> dict[str, Stored]:
    """The gateway's documents before the race (what G-INV-2/9/10 across the race compare with)."""
    return {path: item for path, item in read_project(db).items() if path.startswith(ROOT)}


def race_problems(_db: Any, _state: GatewayState, _keys: tuple[str, ...], before: Mapping[str, Stored],
                  project: Mapping[str, Stored]) -> list[str]:
    """G-INV-1..12 on the stored documents after the race and G-INV-2/9/10 across it (as the contests check)."""
    after = {path: item for path, item in project.items() if path.startswith(ROOT)}
    problems = [str(v) for v in invariant_violations({p: item.data for p, item in after.items()},
                                                     namespace_id=NAMESPACE)]
    return problems + stored_race_problems(before, after)


# Its CI share is about a minute (the reference test), so ci runs a few programs of up to 3 branches and 5 racing
# calls on one journal; thorough many more.
_CI = Budget(examples=5, known_bad_examples=40, shrink_seconds=10, minimize_seconds=15, max_branches=3,
             max_concurrent_ops=5)
BUDGETS = {
    "ci": _CI,
    "gate": _CI,  # the same as ci
    "thorough": Budget(examples=60, known_bad_examples=100, shrink_seconds=60, minimize_seconds=60, max_branches=4,
                       max_concurrent_ops=8),
}

SPEC = ParallelSpec(programs=programs, before_race=before_race, race_problems=race_problems, budgets=BUDGETS)
