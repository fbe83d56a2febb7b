"""The gateway plug-in drives the reference through the generic lockstep runner (fencecheck.runners.lockstep) on the
emulator: answers, stored documents and update times exactly as the model predicts, a rejected commit, and
every injected fault kind (the damaged documents are stored exactly and every later call on that journal
answers `unrecognized_record` without writing)."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from fencecheck.runners.lockstep import Lockstep, LockstepMismatch, replay
from fencecheck.systems.gateway.plugin import GATEWAY
from model.gateway import FAULT_KINDS, InjectFault
from tests.systems.gateway.builders import REF, T0, A, B, begin, claim, get, hosted, provider_intent, record

pytestmark = pytest.mark.emulator
S = timedelta(seconds=1)


def test_a_consume_election_and_a_rejected_commit_in_lockstep(firestore_db):
    lock = Lockstep(firestore_db, plugin=GATEWAY)
    lock.check_documents()
    ops = [
        begin(T0),
        claim(A, T0 + S),
        claim(B, T0 + S),
        record(A, 1, hosted(at=T0 + S), T0 + 2 * S, commit_fails=True),
        record(A, 1, hosted(at=T0 + S), T0 + 2 * S),
        provider_intent(A, T0 + 3 * S),
        get(T0 + 4 * S),
    ]
    answers = [lock.run(op) for op in ops]
    assert [r.transition for r in answers] == ["begin.new", "claim.first", "claim.held_other", "any.commit_failed",
                                               "rcr.consumed", "tpi.first", "get.stored"]
    lock.check_project()


def test_every_fault_kind_is_stored_exactly_and_fails_closed(firestore_db):
    lock = Lockstep(firestore_db, plugin=GATEWAY)
    lock.check_documents()
    for n, kind in enumerate(FAULT_KINDS):
        ref = attrs.evolve(REF, operation_id=f"0f8fad5b-d9cb-469f-a165-70867728950{n}")
        for op in (begin(T0, ref=ref), claim(A, T0 + S, ref=ref), InjectFault(journal=ref, kind=kind),
                   get(T0 + 2 * S, ref=ref), claim(B, T0 + 60 * S, ref=ref), begin(T0 + 61 * S, ref=ref)):
            lock.run(op)
        assert lock.transitions["any.corrupt"] == 3 * (n + 1), kind
    lock.check_project()


def test_a_wrong_answer_is_a_mismatch(firestore_db):
    class Liar:
        """The reference, except that a lease holder's retry of claim (its second claim) is told `pending`."""

        claims = 0

        def __getattr__(self, name):
            return getattr(GATEWAY.reference.api, name)

        def claim_consume_intent(self, **kwargs):
            out = GATEWAY.reference.api.claim_consume_intent(**kwargs)
            self.claims += 1
            return {**out.to_json(), "outcome": "pending"} if self.claims == 2 else out

    liar = attrs.evolve(GATEWAY.reference, api=Liar())
    with pytest.raises(LockstepMismatch, match="(?s)at step 3: claim.*implementation answered .*'outcome': 'pending'"):
        replay(firestore_db, [begin(T0), claim(A, T0 + S), claim(A, T0 + 2 * S)], plugin=GATEWAY, system=liar)
