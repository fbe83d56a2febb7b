"""Lockstep runner: apply each operation to the pure model and to a reference on Firestore, and compare.

    lockstep = Lockstep(db)                  # db: a google.cloud.firestore.Client on the emulator
    result, observed = lockstep.apply(op)    # model Result, and the reference's answer (to_json() or code)
    lockstep.check_answer(op, result, observed)
    lockstep.check_documents()               # the touched key's stored documents == the model's, exact types
    lockstep.run(op)                         # the three above; raises LockstepMismatch
    lockstep.check_project()                 # every stored document of the project == documents(model state)
    replay(db, ops)                          # run every op of a recorded program on a fresh project

Operations carry their own clock reading (`op.now`); the runner hands the reference a clock that returns
it (and checks it was read exactly once). `InjectFault` is applied by writing exactly the model's documents
for that key; `commit_fails=True` runs the call on a `CommitFailureClient`. The reference functions are
injectable (`system=ReferenceAPI.from_module(...)`), so a swapped implementation runs in the same harness.

What is read back when. The comparison is the same everywhere: stored documents equal the model's exactly
(types included), none is stored that the model does not have, a document whose predicted content did not
change since it was last read back kept its update time, and every valid record's audit chain is
contiguous up to its lifecycle revision. What changes is how much is read:

- after every operation (`check_documents`, called by `run`): one batched get (`firestore_io.read_paths`)
  of the operation's command key: the paths a step on that key can write (root, revision-1 audit,
  lifecycle, the audit after the highest revision: where a read-only answer that wrongly writes, or a
  second audit, lands), every path the model expects there and every path the key's last read-back found
  (so a deletion shows). An operation of the journal names one key, and a correct one writes nothing else;
- before an `InjectFault` rewrites a key: the same read of that key, against the model before the fault
  (the rewrite deletes what it finds there, which would erase a stray write by an earlier step unseen);
  after it, the key again, like every step. A `commit_fails` step is read back like any other step
  (nothing may have changed; the commit-failure sentinel is not the journal's);
- the whole project (`check_project`: `firestore_io.read_project`, one kindless query of every document
  at every depth): at the first check (before any operation: the project must be empty), then every
  `full_check_every` operations (FULL_CHECK_EVERY by default), at the end of every state-machine example
  (its teardown, before the project is emptied) and at the end of `replay`. A write anywhere else (another
  key, a top-level document, a document below a key's root or an audit id off the paths above) is found
  there, up to FULL_CHECK_EVERY operations later, or at once when a later step reads back that key; the
  failing program is the same and Hypothesis shrinks it as before. (Reading each key's whole scope with a
  range query instead, `firestore_io.read_key_scope`, costs the emulator about as much as a transaction,
  twice the batched get: measured in benchmarks/stateful_throughput.py.)
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime
from types import ModuleType
from typing import Any, NamedTuple

import attrs

from fencecheck.firestore_io import (
    CommitFailureClient,
    Stored,
    key_of,
    read_paths,
    read_project,
    typed,
    write_key,
)
from model.journal import (
    MAX_REVISION,
    Acquire,
    CommandRecord,
    Complete,
    Fail,
    InjectFault,
    JournalState,
    Operation,
    Register,
    Result,
    describe_op,
    describe_state,
    documents_for,
    step,
)
from reference.journal.identity import audit_path, lifecycle_path, root_path

Observed = dict[str, Any] | str | None  # an output's to_json(), an error code, or None for a fault


@attrs.frozen
class ReferenceAPI:
    """The four journal functions (keyword-only, `db=` and `clock=`) and the error type carrying `.code`."""

    register: Callable[..., Any]
    acquire: Callable[..., Any]
    complete: Callable[..., Any]
    fail: Callable[..., Any]
    error_type: type[BaseException]
    module: str | None = None  # importable name, so a counterexample can name the same system

    @classmethod
    def from_module(cls, module: str | ModuleType) -> ReferenceAPI:
        mod = importlib.import_module(module) if isinstance(module, str) else module
        return cls(
            mod.register_commerce_command,
            mod.acquire_commerce_command_lease,
            mod.complete_commerce_command,
            mod.fail_commerce_command,
            mod.CommandJournalError,
            mod.__name__,
        )

    def call(self, db: Any, op: Operation, clock: Callable[[], datetime], log: Any = None) -> Any:
        """Make the journal call `op` stands for (its command's kwargs plus the op's own fields) on `db`,
        with `clock`; `log` (an AttemptLog) goes to systems whose functions accept `attempt_log`."""
        kwargs = op.command.kwargs()
        if isinstance(op, Register):
            function = self.register
        else:
            kwargs["lease_id"] = op.lease_id
            if isinstance(op, Acquire):
                function = self.acquire
            else:
                kwargs["expected_fence_epoch"] = op.expected_fence_epoch
                if isinstance(op, Complete):
                    kwargs["terminal_reference_fingerprint"] = op.terminal_reference_fingerprint
                    function = self.complete
                elif isinstance(op, Fail):
                    function = self.fail
                else:
                    raise TypeError(f"not a journal call: {type(op).__name__}")
        if log is not None and _accepts_attempt_log(function):
            kwargs["attempt_log"] = log
        return function(db=db, clock=clock, **kwargs)


def _accepts_attempt_log(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return "attempt_log" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


REFERENCE = ReferenceAPI.from_module("reference")


class LockstepMismatch(AssertionError):
    """The reference disagreed with the model (answer, stored documents, update times or audit chain)."""


class OnceClock:
    """A trusted clock that always reads `now` and counts its readings (the reference must read it once)."""

    def __init__(self, now: datetime) -> None:
        self.now, self.reads = now, 0

    def __call__(self) -> datetime:
        self.reads += 1
        return self.now


def _call_reference(system: ReferenceAPI, db: Any, op: Operation, clock: OnceClock) -> Observed:
    try:
        return system.call(db, op, clock).to_json()
    except system.error_type as error:
        return error.code


def _answer_matches(result: Result, observed: Observed) -> bool:
    if isinstance(observed, str) or observed is None:
        return result.outcome is None and result.code == observed
    expected = result.output
    # Exact types (True is not 1) and the seeds' key order.
    return expected is not None and list(expected) == list(observed) and typed(expected) == typed(observed)


def _short(text: str, state: JournalState) -> str:
    for h in state.keys():
        text = text.replace(h, h[:8])
    return text


_AUDIT_REVISION = re.compile(r"^auditEvents/commerce_command_([0-9a-f]{64})_(\d{10})$")

# Operations between two whole-project read-backs (between them each step reads back its own key's scope).
FULL_CHECK_EVERY = 16


class _Seen(NamedTuple):
    """A document as last read back: its update time, the model's (typed) content then, after which step."""

    update_time: tuple[int, int]
    expected: Any
    step: int


class Lockstep:
    """Model state + Firestore + the program applied so far (`ops`) and the transitions it fired."""

    def __init__(
        self,
        db: Any,
        *,
        system: ReferenceAPI | None = None,
        epoch: datetime | None = None,
        coverage: Counter[str] | None = None,
        full_check_every: int | None = FULL_CHECK_EVERY,
    ) -> None:
        self.db = db
        self.system = system or REFERENCE
        self.epoch = epoch  # times in messages are shown relative to it (default: the first op's time)
        self.full_check_every = full_check_every  # None or 0: the whole project only when check_project is called
        self.state = JournalState.empty()
        self.ops: list[Operation] = []
        self.transitions: Counter[str] = Counter()
        self.mismatched = False  # a LockstepMismatch was raised (the machine's teardown then skips its check)
        self._coverage = coverage
        self._clock_reads: int | None = None  # of the latest op (None for a fault)
        self._pending: set[str] = set()  # keys operations touched since they were last read back
        self._project_checked = False  # the whole project was read back at least once
        self._since_project = 0  # operations applied since the last whole-project read-back
        self._seen: dict[str, dict[str, _Seen]] = {}  # per key: path -> its last read-back
        self._typed: dict[str, tuple[Any, dict[str, Any]]] = {}  # per key: (record, its typed documents)

    # --- applying ------------------------------------------------------------------------------

    def apply(self, op: Operation) -> tuple[Result, Observed]:
        """Step the model and run the reference on the same op; returns (model result, observed answer)."""
        if self.epoch is None and not isinstance(op, InjectFault):
            self.epoch = op.now
        h = op.command.key_hash
        new_state, result = step(self.state, op)
        if isinstance(op, InjectFault) and result.wrote:
            # The rewrite deletes what it finds at the key's paths: read them back first (a stray write there by
            # an earlier step on another key would be erased unseen). A mismatch is reported at the previous step.
            current = self._check_keys([h], before=op)
        self.ops.append(op)
        if isinstance(op, InjectFault):
            observed: Observed = None
            if result.wrote:
                write_key(self.db, h, documents_for(new_state, h), current=current)
        else:
            clock = OnceClock(op.now)
            db = CommitFailureClient(self.db) if op.commit_fails else self.db
            try:
                observed = _call_reference(self.system, db, op, clock)
            except Exception as error:  # a crash is a disagreement too; report it with the program
                self.state = new_state
                raise self._mismatch(op, [f"the reference raised {type(error).__name__}: {error}"]) from error
        self.state = new_state
        self._pending.add(h)
        self._since_project += 1
        self.transitions[result.transition] += 1
        if self._coverage is not None:
            self._coverage[result.transition] += 1
        self._clock_reads = None if isinstance(op, InjectFault) else clock.reads
        return result, observed

    def check_answer(self, op: Operation, result: Result, observed: Observed) -> None:
        """The reference answered what the model predicts (exact types and key order), reading the clock
        exactly once."""
        if not _answer_matches(result, observed):
            expected = result.output if result.outcome is not None else result.code
            raise self._mismatch(
                op,
                [
                    f"model expects {expected!r} (transition {result.transition})",
                    f"reference answered {observed!r}",
                ],
            )
        if self._clock_reads not in (None, 1):
            raise self._mismatch(op, [f"the reference read the clock {self._clock_reads} times (exactly once)"])

    def run(self, op: Operation) -> Result:
        """Apply `op` to both sides, then check the answer and the stored documents (`check_documents`)."""
        result, observed = self.apply(op)
        self.check_answer(op, result, observed)
        self.check_documents()
        return result

    # --- checking the stored documents --------------------------------------------------------

    def check_documents(self) -> None:
        """Read back what the operations since the last check could have written, and compare it with the model.

        Normally that is the touched key (`_read_set`, one batched get: root, revision-1 audit, lifecycle, the
        audit after the highest revision, every path the model expects or the last read-back found): its
        documents equal the model's exactly (types included), nothing the model lacks is stored there, those
        whose predicted content did not change since they were last read back kept their update time, and
        the key's audit chain is contiguous up to its lifecycle revision (`_compare`). The first check, and
        the first after `full_check_every` operations, reads back the whole project instead
        (`check_project`). A no-op when nothing was applied since the last check."""
        if not self._project_checked or (
            self._pending and self.full_check_every and self._since_project >= self.full_check_every
        ):
            self.check_project()
        elif self._pending:
            self._check_keys(sorted(self._pending))

    def check_project(self) -> None:
        """Read back every document of the project and compare all of it with the model, as `check_documents`
        does for one key: no document outside the model's (another key's, a top-level one), every key's
        documents exact, update times of unchanged documents kept (since each was last read back), every
        valid record's audit chain contiguous. Always reads, even when nothing was applied since."""
        stored = read_project(self.db)
        keys = set(self.state.keys()) | self._seen.keys()
        expected = {path: doc for h in self.state.keys() for path, doc in self._expected(h).items()}
        problems = self._compare(stored, expected, keys)
        if problems:
            raise self._mismatch(
                self.ops[-1] if self.ops else None,
                [
                    "stored documents differ (whole-project read-back; a step reads back only its own key, so "
                    "the write may come from an earlier step):",
                    *problems,
                ],
            )
        by_key: dict[str, dict[str, Stored]] = {h: {} for h in keys}
        for path, item in stored.items():
            by_key.setdefault(key_of(path), {})[path] = item  # every stored path is the model's: never None
        self._remember(by_key, expected)
        self._pending.clear()
        self._project_checked, self._since_project = True, 0

    def _check_keys(self, keys: Collection[str], *, before: Operation | None = None) -> dict[str, Stored]:
        """Read back the read set of each key in `keys` in one batched get and compare it with the model (see
        `check_documents`); returns what was found. `before`: the operation about to rewrite these keys."""
        stored = read_paths(self.db, [path for h in keys for path in self._read_set(h)])
        expected = {path: doc for h in keys for path, doc in self._expected(h).items()}
        problems = self._compare(stored, expected, keys)
        if problems:
            scope = ", ".join(h[:8] for h in keys)
            head = f"stored documents differ (read-back of key {scope}):"
            if before is not None:
                head = (f"stored documents differ (read-back of key {scope} before the next operation, "
                        f"{describe_op(before, epoch=self.epoch)}, rewrites it):")
            raise self._mismatch(self.ops[-1] if self.ops else None, [head, *problems])
        by_key: dict[str, dict[str, Stored]] = {h: {} for h in keys}
        for path, item in stored.items():
            by_key[key_of(path)][path] = item
        self._remember(by_key, expected)
        self._pending.difference_update(keys)
        return stored

    def _read_set(self, key_hash: str) -> list[str]:
        """The paths a step on this key can write: the root, the revision-1 audit, the lifecycle and the audit
        after the highest revision, plus every path the model expects or the last read-back found."""
        known = {*self._expected(key_hash), *self._seen.get(key_hash, ())}
        top = 1
        for path in known:
            match = _AUDIT_REVISION.match(path)
            if match:
                top = max(top, int(match.group(2)))
        known.update((root_path(key_hash), lifecycle_path(key_hash), audit_path(key_hash, 1),
                      audit_path(key_hash, top + 1)))
        return sorted(known)

    def _expected(self, key_hash: str) -> dict[str, Any]:
        """The model's documents of one key in typed() form, recomputed only when the key's record changed."""
        record = self.state.get(key_hash)
        cached = self._typed.get(key_hash)
        if cached is None or cached[0] is not record:
            docs = documents_for(self.state, key_hash)
            cached = (record, {path: typed(doc) for path, doc in docs.items()})
            self._typed[key_hash] = cached
        return cached[1]

    def _compare(self, stored: Mapping[str, Stored], expected: Mapping[str, Any], keys: Iterable[str]) -> list[str]:
        """Problems of `stored` (what was read back for `keys`) against `expected` (the model's documents of
        `keys`): content, extra and missing documents, update times of unchanged documents, audit chains."""
        problems = _document_problems(stored, expected)
        for h in keys:
            for path, seen in self._seen.get(h, {}).items():
                if path in stored and path in expected and seen.expected == expected[path]:
                    if stored[path].update_time != seen.update_time:
                        since = f"after step {seen.step}" if seen.step else "before the first step"
                        problems.append(f"{path}: rewritten although its content did not change (update time "
                                        f"moved since it was read back {since})")
        if not problems:
            problems = _audit_chain_problems(self.state, stored, keys)
        return problems

    def _remember(self, by_key: Mapping[str, Mapping[str, Stored]], expected: Mapping[str, Any]) -> None:
        """After a successful comparison: the update times (and predicted content) of each key read back."""
        n = len(self.ops)
        for h, items in by_key.items():
            self._seen[h] = {path: _Seen(item.update_time, expected[path], n) for path, item in items.items()}

    # --- reporting ----------------------------------------------------------------------------

    def program(self) -> list[str]:
        return [describe_op(op, epoch=self.epoch) for op in self.ops]

    def _mismatch(self, op: Operation | None, lines: list[str]) -> LockstepMismatch:
        self.mismatched = True
        where = "before any operation"
        if op is not None:
            where = f"at step {len(self.ops)}: {describe_op(op, epoch=self.epoch)}"
        program = self.program()
        shown = program[-25:]
        listing = [f"  {len(program) - len(shown) + i + 1}. {text}" for i, text in enumerate(shown)]
        text = "\n".join(
            [
                f"lockstep mismatch {where}",
                *(f"  {line}" for line in lines),
                "model state after the step (as the model predicts it):",
                *(f"  {line}" for line in describe_state(self.state, epoch=self.epoch).splitlines()),
                "program:",
                *listing,
            ]
        )
        return LockstepMismatch(_short(text, self.state))


def _document_problems(stored: Mapping[str, Stored], expected: Mapping[str, Any]) -> list[str]:
    problems = []
    for path in sorted(stored.keys() - expected.keys()):
        problems.append(f"{path}: stored, but the model has no such document: {stored[path].data!r}")
    for path in sorted(expected.keys() - stored.keys()):
        problems.append(f"{path}: missing (the model expects it)")
    for path in sorted(stored.keys() & expected.keys()):
        actual = typed(stored[path].data)
        if actual != expected[path]:
            want, got = dict(expected[path][1]), dict(actual[1])
            for field in sorted(want.keys() | got.keys()):
                if want.get(field) != got.get(field):
                    problems.append(f"{path}: field {field}: stored {got.get(field)!r}, model {want.get(field)!r}")
    return problems


def _audit_chain_problems(state: JournalState, stored: Mapping[str, Stored], keys: Iterable[str]) -> list[str]:
    """Per valid record of `keys` (`stored`: what was read back of them): audit revisions 1..R (a record rebased to the
    maximum by the revision_at_maximum fault keeps one gap below R), the audit at R matches the lifecycle, and
    each event starts where the previous one ended."""
    audits: dict[str, dict[int, Mapping[str, Any]]] = {}
    for path, item in stored.items():
        match = _AUDIT_REVISION.match(path)
        if match:
            audits.setdefault(match.group(1), {})[int(match.group(2))] = item.data
    problems = []
    for h in sorted(keys):
        record = state.get(h)
        if not isinstance(record, CommandRecord):
            continue
        chain = audits.get(h, {})
        revisions = sorted(chain)
        lc = record.lifecycle
        top = 1 if lc is None else lc.revision
        contiguous = revisions[:-1] == list(range(1, len(revisions))) and revisions[-1:] == [top]
        if not contiguous or (len(revisions) != top and top != MAX_REVISION):
            problems.append(f"{h[:8]}: audit revisions {revisions} are not contiguous up to revision {top}")
            continue
        for revision in revisions:
            event = chain[revision]
            if event.get("commandRevision") != revision:
                problems.append(f"{h[:8]}: audit {revision} carries commandRevision {event.get('commandRevision')!r}")
            previous = chain.get(revision - 1)  # across the rebase gap there is no previous event to match
            if previous is not None and event.get("fromState") != previous.get("toState"):
                problems.append(f"{h[:8]}: audit {revision} starts in {event.get('fromState')!r}, not where "
                                f"audit {revision - 1} ended ({previous.get('toState')!r})")
        last = chain[top]
        want_state = "registered" if lc is None else lc.state
        if last.get("toState") != want_state or (lc is not None and last.get("fenceEpoch") != lc.fence_epoch):
            problems.append(f"{h[:8]}: audit {top} does not match the lifecycle ({want_state})")
    return problems


def replay(db: Any, ops: Iterable[Operation], *, system: ReferenceAPI | None = None) -> Lockstep:
    """Run a recorded program on `db` (an empty project), checking every answer and, as the state machine
    does, the stored documents: the touched key after each step, the whole project every FULL_CHECK_EVERY
    operations and once more at the end."""
    lockstep = Lockstep(db, system=system)
    lockstep.check_documents()
    for op in ops:
        lockstep.run(op)
    lockstep.check_project()
    return lockstep
