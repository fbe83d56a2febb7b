"""Known-bad variants that only wire faults expose: bugs in what a call does when its commit's answer is lost.

Each behaves exactly like the reference whenever a commit is answered, refused or rejected, so the lockstep
machine without wire faults (`JournalMachine.wire_faults = False`: commit failures on the client-side path,
both calls of a lost-response rule answered) cannot tell it from the reference. Through the wire proxy a
commit can be applied while its answer is lost (google-cloud-firestore resends the Commit, the emulator
refuses the closed transaction: InvalidArgument; a lost answer without a retry is DeadlineExceeded), and
the lost-response rules (fencecheck/runners/lockstep.py, `Lockstep._run_response_lost`) judge the call against
both outcomes:

- `lost-answer-retried-as-new-call`: after a lost commit answer it runs the whole operation again, as a
  fresh call one lease later (so that its own lease, if the first commit took it, is no longer active and
  it cannot be told busy by itself): the retry takes its own lease over, appending a second revision and a
  second audit event (fence + 1), or answers a registration as existing;
- `lost-answer-read-as-refused`: it reads a lost commit answer as a refused commit ("nothing applied") and
  reports a definite `lease_rejected`, although the write was applied.

Like the concurrent catalogue, they stay out of `known_bad.journal.VARIANTS` (whose witnesses replay on the
in-memory fake Firestore, which cannot lose an answer); their witnesses replay on the emulator through the
proxy (tests/emulator/test_wire_lockstep.py), and the stateful known-bad runner catches them
(stateful_tests/test_known_bad.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from model.journal import Acquire, CommandRef, Register

from . import Mutation, Variant

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CMD = CommandRef(
    "test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000", "create_checkout_session", 1,
    '{"quantity":1}',
)
A = "0000000a-1ea5-4000-a000-000000000000"

_CLASSIFIED = """
        except Exception as error:  # classified here; the original is never chained into our error
            outcome = _classify(error)
"""
# What a lost commit answer surfaces as in google-cloud-firestore 2.34 (docs/wire-faults.md, findings).
_LOST = "isinstance(error, api_exceptions.InvalidArgument | api_exceptions.DeadlineExceeded)"

WIRE_CATALOGUE: tuple[Variant, ...] = (
    Variant(
        name="lost-answer-retried-as-new-call",
        rule="acquire.first:lost-answer",
        description="after a lost commit answer it runs the whole operation again as a new call one lease later: "
                    "it takes its own lease over and double-appends its audit",
        target="runner.run_transaction",
        original=_CLASSIFIED,
        broken=_CLASSIFIED + f"""\
            if outcome == "failure" and attempt == 1 and {_LOST}:
                # BUG: a lost commit answer: the whole operation once more, as a fresh call one lease later
                callback.retry_after_lost_answer = True
                continue
""",
        also=(Mutation(
            target="api._transaction_body",
            original="        decision = decide(request, registration, lifecycle)\n",
            broken="""\
        import dataclasses  # BUG (with runner.run_transaction): the retry decides as a new call, a lease later
        from datetime import timedelta
        if getattr(body, "retry_after_lost_answer", False):
            later = dataclasses.replace(request, now=request.now + timedelta(seconds=60))
            decision = decide(later, registration, lifecycle)
        else:
            decision = decide(request, registration, lifecycle)
""",
        ),),
        witness=(Register(CMD, T0), Acquire(CMD, A, T0 + timedelta(seconds=1), response_lost=True)),
    ),
    Variant(
        name="lost-answer-read-as-refused",
        rule="register.absent.new:lost-answer",
        description="a lost commit answer is read as a refused commit: a definite lease_rejected for a write that "
                    "was applied",
        target="runner.run_transaction",
        original=_CLASSIFIED,
        broken=_CLASSIFIED + f"""\
            if outcome == "failure" and {_LOST}:
                # BUG: a commit whose answer was lost is taken as refused ("not applied"): a definite failure
                raise CommandJournalError("lease_rejected") from None
""",
        witness=(Register(CMD, T0, response_lost=True),),
    ),
)
