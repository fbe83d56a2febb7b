"""Concurrent known-bad variants: bugs that only a race can expose.

Every variant here behaves exactly like the reference when calls run one at a time: the sequential lockstep
machine (stateful_tests) cannot tell them apart from it. Each one breaks the rule that a call's decision and
its writes belong to one transaction, in a different way:

- `acquire-checked-outside-transaction`: the lease check (busy? first lease? takeover?) reads with plain,
  non-transactional reads; the transaction that follows writes the decision blind (`set`, no reads), so
  two acquires that both saw a free lease both get it.
- `finish-split-transactions`: complete and fail read and decide in one transaction and write in a second
  one (blind again), so a finish that commits in between is overwritten and both callers are told they
  finished the command.
- `audit-id-from-stale-read`: the next audit event id (R+1) is derived from a lifecycle read while the call
  is prepared, before the transaction; when another caller commits revision R+1 in between, the
  transaction finds "its" next audit already stored and fails closed with `unrecognized_record`.

The first two write with `set` because the reference's `create` preconditions (revision-1 audit, audit R+1,
first lifecycle) would otherwise turn the lost update into a rejected commit: the create is the reference's
last line of defence, and a variant that kept it would only ever answer `journal_unavailable` (indefinite,
which the checker rightly accepts), never a wrong answer.

They are `known_bad.journal.Variant`s like the sequential catalogue (`variants.py`), loaded and patched by
`known_bad.loader` the same way, and found by `known_bad.journal.variant(name)` / `system(name)`; they are
kept out of `known_bad.journal.VARIANTS` because that catalogue is the one the sequential machine must
catch, each variant with a sequential witness; these have none (their `witness` is empty). The parallel
suite (parallel_tests/test_parallel_known_bad.py) must catch each of them.
"""

from __future__ import annotations

from . import Variant

# `api._run`, as it stands in the reference: one read-write transaction (plus a lock-free look) per call.
_RUN_TRANSACTION = """
    return run_transaction(
        db,
        _transaction_body(db, request),
        look=_transaction_body(db, request, read_only=True),
        log=attempt_log,
    )
"""

# `api._transaction_body` from its key to the read of the next audit (R+1), and the stale variant of it.
_BODY_NEXT_AUDIT = """
key = command.command_key_hash

def body(transaction: Any) -> Any:
    first = _read(
        transaction, db, (identity.root_path(key), identity.audit_path(key, 1), identity.lifecycle_path(key))
    )
    root, registration_audit, stored_lifecycle = first.values()
    registration = lifecycle = None
    if root is None and registration_audit is None:
        if stored_lifecycle is not None:
            raise unrecognized()  # orphan lifecycle
    else:
        registration = parse_registration(root, registration_audit, command)
        if stored_lifecycle is None:
            (next_audit,) = _read(transaction, db, (identity.audit_path(key, 2),)).values()
        else:
            lifecycle = parse_lifecycle(stored_lifecycle, command, registration)
            partner, next_audit = _read(
                transaction,
                db,
                (identity.audit_path(key, lifecycle.revision), identity.audit_path(key, lifecycle.revision + 1)),
            ).values()
"""

_BODY_NEXT_AUDIT_STALE = """
key = command.command_key_hash
# BUG: the next audit event id is derived from the lifecycle as read while the call is prepared, before
# the transaction (once per call: every attempt and the lock-free look reuse it); a revision committed
# meanwhile makes it stale.
prepared = (db.document(identity.lifecycle_path(key)).get().to_dict() or {}).get("commandRevision", 1)

def body(transaction: Any) -> Any:
    first = _read(
        transaction, db, (identity.root_path(key), identity.audit_path(key, 1), identity.lifecycle_path(key))
    )
    root, registration_audit, stored_lifecycle = first.values()
    registration = lifecycle = None
    if root is None and registration_audit is None:
        if stored_lifecycle is not None:
            raise unrecognized()  # orphan lifecycle
    else:
        registration = parse_registration(root, registration_audit, command)
        if stored_lifecycle is None:
            (next_audit,) = _read(transaction, db, (identity.audit_path(key, 2),)).values()
        else:
            lifecycle = parse_lifecycle(stored_lifecycle, command, registration)
            next_id = prepared + 1 if isinstance(prepared, int) else lifecycle.revision + 1
            (partner,) = _read(transaction, db, (identity.audit_path(key, lifecycle.revision),)).values()
            (next_audit,) = _read(transaction, db, (identity.audit_path(key, next_id),)).values()
"""

CONCURRENT_CATALOGUE: tuple[Variant, ...] = (
    Variant(
        name="acquire-checked-outside-transaction",
        rule="acquire.active.other_holder:concurrent",
        description="acquire decides from plain (non-transactional) reads and then writes its decision blind in a "
        "transaction: two acquires that both saw the lease free both get it",
        target="api._run",
        original=_RUN_TRANSACTION,
        broken="""
            if request.operation == ACQUIRE:
                # BUG: check-then-act. The lease check reads outside any transaction; only a decision that writes
                # runs a transaction, and that one writes blind (set, no reads): nothing the decision depended on
                # is locked or checked again when it commits.
                from types import SimpleNamespace

                writes: list = []
                keep = lambda reference, document: writes.append((reference, document))
                output = _transaction_body(db, request)(SimpleNamespace(get_all=db.get_all, create=keep, set=keep))
                if writes:
                    run_transaction(db, lambda tx: [tx.set(r, d) for r, d in writes], log=attempt_log)
                    return output
            return run_transaction(
                db,
                _transaction_body(db, request),
                look=_transaction_body(db, request, read_only=True),
                log=attempt_log,
            )
        """,
    ),
    Variant(
        name="finish-split-transactions",
        rule="complete.terminal.conflict:concurrent",
        description="complete and fail read and decide in one transaction and write in a second (blind): a finish "
        "committed in between is overwritten and both callers are told they finished",
        target="api._run",
        original=_RUN_TRANSACTION,
        broken="""
            if request.operation in (COMPLETE, FAIL):
                # BUG: read-then-write split across two transactions. The first reads and decides (its read locks
                # end when it commits, having written nothing); the second writes that decision blind.
                from types import SimpleNamespace

                writes: list = []

                def read_and_decide(transaction: Any) -> Any:
                    writes.clear()  # an aborted attempt's decision is not kept
                    keep = lambda reference, document: writes.append((reference, document))
                    staged = SimpleNamespace(get_all=transaction.get_all, create=keep, set=keep)
                    return _transaction_body(db, request)(staged)

                output = run_transaction(db, read_and_decide, log=attempt_log)
                if writes:
                    run_transaction(db, lambda tx: [tx.set(r, d) for r, d in writes], log=attempt_log)
                return output
            return run_transaction(
                db,
                _transaction_body(db, request),
                look=_transaction_body(db, request, read_only=True),
                log=attempt_log,
            )
        """,
    ),
    Variant(
        name="audit-id-from-stale-read",
        rule="any.corrupt:stale-next-audit-id",
        description="the next audit id (R+1) comes from a lifecycle read before the transaction: after a concurrent "
        "commit of revision R+1 the call finds that audit stored and answers unrecognized_record",
        target="api._transaction_body",
        original=_BODY_NEXT_AUDIT,
        broken=_BODY_NEXT_AUDIT_STALE,
    ),
)
