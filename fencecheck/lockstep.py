"""Lockstep runner: apply each operation to the pure model and to a reference on Firestore, and compare.

    lockstep = Lockstep(db)                  # db: a google.cloud.firestore.Client on the emulator
    result, observed = lockstep.apply(op)    # model Result, and the reference's answer (to_json() or code)
    lockstep.check_answer(op, result, observed)
    lockstep.check_documents()               # stored documents == documents(model state), exact types
    lockstep.run(op)                         # the three above; raises LockstepMismatch
    replay(db, ops)                          # run every op of a recorded program on a fresh project

Operations carry their own clock reading (`op.now`); the runner hands the reference a clock that returns
it (and checks it was read exactly once). `InjectFault` is applied by writing exactly the model's documents
for that key; `commit_fails=True` runs the call on a `CommitFailureClient`. The reference functions are
injectable (`system=ReferenceAPI.from_module(...)`), so a swapped implementation runs in the same harness.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from types import ModuleType
from typing import Any

import attrs

from fencecheck.firestore_io import CommitFailureClient, Stored, read_project, typed, write_key
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
    documents,
    documents_for,
    step,
)

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


REFERENCE = ReferenceAPI.from_module("reference")


class LockstepMismatch(AssertionError):
    """The reference disagreed with the model (answer, stored documents, update times or audit chain)."""


class _OnceClock:
    def __init__(self, now: datetime) -> None:
        self.now, self.reads = now, 0

    def __call__(self) -> datetime:
        self.reads += 1
        return self.now


def _call_reference(system: ReferenceAPI, db: Any, op: Operation, clock: _OnceClock) -> Observed:
    kwargs = op.command.kwargs()
    if isinstance(op, Register):
        function = system.register
    else:
        kwargs["lease_id"] = op.lease_id
        if isinstance(op, Acquire):
            function = system.acquire
        else:
            kwargs["expected_fence_epoch"] = op.expected_fence_epoch
            if isinstance(op, Complete):
                kwargs["terminal_reference_fingerprint"] = op.terminal_reference_fingerprint
                function = system.complete
            else:
                assert isinstance(op, Fail)
                function = system.fail
    try:
        return function(db=db, clock=clock, **kwargs).to_json()
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


class Lockstep:
    """Model state + Firestore + the program applied so far (`ops`) and the transitions it fired."""

    def __init__(
        self,
        db: Any,
        *,
        system: ReferenceAPI | None = None,
        epoch: datetime | None = None,
        coverage: Counter[str] | None = None,
    ) -> None:
        self.db = db
        self.system = system or REFERENCE
        self.epoch = epoch  # times in messages are shown relative to it (default: the first op's time)
        self.state = JournalState.empty()
        self.ops: list[Operation] = []
        self.transitions: Counter[str] = Counter()
        self._coverage = coverage
        self._unchecked = 0
        self._clock_reads: int | None = None  # of the latest op (None for a fault)
        self._last_stored: dict[str, Stored] = {}
        self._last_expected: dict[str, Any] = {}

    # --- applying ------------------------------------------------------------------------------

    def apply(self, op: Operation) -> tuple[Result, Observed]:
        """Step the model and run the reference on the same op; returns (model result, observed answer)."""
        if self.epoch is None and not isinstance(op, InjectFault):
            self.epoch = op.now
        self.ops.append(op)
        new_state, result = step(self.state, op)
        if isinstance(op, InjectFault):
            observed: Observed = None
            if result.wrote:
                h = op.command.key_hash
                write_key(self.db, h, documents_for(new_state, h))
        else:
            clock = _OnceClock(op.now)
            db = CommitFailureClient(self.db) if op.commit_fails else self.db
            try:
                observed = _call_reference(self.system, db, op, clock)
            except Exception as error:  # a crash is a disagreement too; report it with the program
                self.state = new_state
                raise self._mismatch(op, [f"the reference raised {type(error).__name__}: {error}"]) from error
        self.state = new_state
        self._unchecked += 1
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
        """Apply `op` to both sides, then check the answer and every stored document."""
        result, observed = self.apply(op)
        self.check_answer(op, result, observed)
        self.check_documents()
        return result

    # --- checking the stored documents --------------------------------------------------------

    def check_documents(self) -> None:
        """Stored documents equal the model's exactly (types included); documents whose predicted content did
        not change kept their update time; every valid record's audit chain is contiguous up to its
        lifecycle revision. A no-op when nothing was applied since the last check."""
        if self._unchecked == 0 and self.ops:
            return
        stored = read_project(self.db)
        expected = {path: typed(doc) for path, doc in documents(self.state).items()}
        problems = _document_problems(stored, expected)
        for path, previous in self._last_stored.items():
            unchanged = path in expected and self._last_expected.get(path) == expected[path]
            if unchanged and path in stored and stored[path].update_time != previous.update_time:
                problems.append(f"{path}: rewritten although its content did not change (update time moved)")
        if not problems:
            problems = _audit_chain_problems(self.state, stored)
        if problems:
            raise self._mismatch(self.ops[-1] if self.ops else None, ["stored documents differ:", *problems])
        self._last_stored, self._last_expected, self._unchecked = stored, expected, 0

    # --- reporting ----------------------------------------------------------------------------

    def program(self) -> list[str]:
        return [describe_op(op, epoch=self.epoch) for op in self.ops]

    def _mismatch(self, op: Operation | None, lines: list[str]) -> LockstepMismatch:
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


def _audit_chain_problems(state: JournalState, stored: Mapping[str, Stored]) -> list[str]:
    """Per valid record: audit revisions 1..R (a record rebased to the maximum by the revision_at_maximum
    fault keeps one gap below R), the audit at R matches the lifecycle, and each event starts where the
    previous one ended."""
    audits: dict[str, dict[int, Mapping[str, Any]]] = {}
    for path, item in stored.items():
        match = _AUDIT_REVISION.match(path)
        if match:
            audits.setdefault(match.group(1), {})[int(match.group(2))] = item.data
    problems = []
    for h, record in state.records:
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
    """Run a recorded program on `db` (an empty project), checking every answer and every stored document."""
    lockstep = Lockstep(db, system=system)
    lockstep.check_documents()
    for op in ops:
        lockstep.run(op)
    return lockstep
