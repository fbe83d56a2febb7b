"""Lockstep runner: apply each operation to the pure model and to a reference on Firestore, and compare.

    lockstep = Lockstep(db, plugin=plugin("journal"))   # db: a google.cloud.firestore.Client on the emulator
    result, observed = lockstep.apply(op)    # model Result, and the reference's answer (to_json() or code)
    lockstep.check_answer(op, result, observed)
    lockstep.check_documents()               # the touched key's stored documents == the model's, exact types
    lockstep.run(op)                         # the three above; raises LockstepMismatch
    lockstep.check_project()                 # every stored document of the project == documents(model state)
    replay(db, ops, plugin=...)              # run every op of a recorded program on a fresh project

The runner is system-neutral: a `SystemPlugin` (`plugin=`, found by name: `fencecheck.plugin.registry.plugin`) supplies
the model, the partitions, the implementation call and the extra stored-document checks. Operations carry
their own clock reading (`plugin.clock_of(op)`); the runner hands the implementation a clock that returns it
(and checks it was read exactly once, or never for a call handed none). A fault operation is applied by
writing exactly the model's documents for its partition; a `commit_fails` operation runs on a
`CommitFailureClient`. The implementation is injectable (`system=`, e.g. `plugin.resolve(spec)`), so
a swapped implementation runs in the same harness.

What is read back when, for the journal (partition: a command key). A plug-in without a read set (the
lantern: one partition, the whole project) reads back the whole project after every operation.
The comparison is the same everywhere: stored documents equal the model's exactly
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

import contextlib
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from fencecheck.checker import near_miss
from fencecheck.emulator.firestore_io import (
    CommitFailureClient,
    Stored,
    read_paths,
    read_project,
    typed,
    write_partition,
)
from fencecheck.errors import CheckFailed, UsageError
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.registry import UNNAMED_SYSTEM
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.problems import Problem, ProblemKind, kind_of_exception
from fencecheck.wire.faults import on
from fencecheck.wire.lockstep import COMMIT_RESPONSE_LOST, commits_rejected
from fencecheck.wire.session import emulator_host_of, open_session

__all__ = ["FULL_CHECK_EVERY", "Lockstep", "LockstepMismatch", "OnceClock", "replay"]

Observed = dict[str, Any] | str | None  # an output's to_json(), an error code, or None for a fault


class LockstepMismatch(CheckFailed):
    """The implementation disagreed with the model (answer, stored documents, update times or audit chain):
    `kind` contract; or a step where it raised instead of answering: `kind` the raised exception's
    (`fencecheck.problems.kind_of_exception`: crash, or an exec: implementation's hang or protocol failure).
    `problem` is the mismatch as the one structured finding it carries."""

    def __init__(self, text: str, kind: ProblemKind = ProblemKind.CONTRACT) -> None:
        super().__init__(text, (Problem(kind, text),))

    @property
    def problem(self) -> Problem:
        return self.problems[0]

    @property
    def kind(self) -> ProblemKind:
        return self.problem.kind

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt from (text, kind), not from the base's arguments
        return type(self), (self.message, self.kind)


class OnceClock:
    """A trusted clock that always reads `now` and counts its readings (the reference must read it once)."""

    def __init__(self, now: datetime) -> None:
        self.now, self.reads = now, 0

    def __call__(self) -> datetime:
        self.reads += 1
        return self.now


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
        plugin: SystemPlugin,  # the system the run is of: the core defaults to none
        system: Any = None,
        epoch: datetime | None = None,
        coverage: Counter[str] | None = None,
        full_check_every: int | None = FULL_CHECK_EVERY,
        wire: Any = None,
    ) -> None:
        self.db = db
        # A `fencecheck.wire.WireSession` (a proxy in front of the same emulator, a client of the same project):
        # commit-failure steps then run on it, their commits rejected on the wire, and lost-response steps
        # (`plugin.response_lost`) need it. Read-backs always use `db`.
        self.wire = wire
        self.plugin = plugin
        self.system = plugin.reference if system is None else system  # the implementation under test
        self.epoch = epoch  # times in messages are shown relative to it (default: the first op's time)
        self.full_check_every = full_check_every  # None or 0: the whole project only when check_project is called
        self.state = plugin.initial_state()
        self.ops: list[Any] = []
        self.transitions: Counter[str] = Counter()
        self.near_misses: defaultdict[str, Counter[str]] = defaultdict(Counter)  # class -> transitions it reached
        self.mismatched = False  # a LockstepMismatch was raised (the machine's teardown then skips its check)
        self._coverage = coverage
        self._clock_reads: tuple[int, int] | None = None  # (reads, required) of the latest call; None for a fault
        self._pending: set[str] = set()  # keys operations touched since they were last read back
        self._project_checked = False  # the whole project was read back at least once
        self._since_project = 0  # operations applied since the last whole-project read-back
        self._project_read: dict[str, Stored] | None = None  # that read-back, while no operation followed it
        self._seen: dict[str, dict[str, _Seen]] = {}  # per key: path -> its last read-back
        self._typed: dict[str, tuple[Any, dict[str, Any]]] = {}  # per key: (record, its typed documents)

    # --- applying ------------------------------------------------------------------------------

    def apply(self, op: Any, *, db: Any = None) -> tuple[Any, Observed]:
        """Step the model and run the reference on the same op; returns (model result, observed answer).
        `db`: the client the implementation is handed (default: `self.db`, or a commit-failing one)."""
        plugin = self.plugin
        fault = plugin.is_fault(op)
        now = plugin.clock_of(op)
        if self.epoch is None and now is not None:
            self.epoch = now
        h = plugin.partition_of(op)
        # Counted wherever transition coverage is: the near-miss classes of the call, told before it runs.
        near = () if fault or self._coverage is None else near_miss.classes(plugin, self.state, op, self.ops)
        new_state, result = plugin.step(self.state, op)
        if fault and result.wrote:
            # The rewrite deletes what it finds at the key's paths: read them back first (a stray write there by
            # an earlier step on another key would be erased unseen). A mismatch is reported at the previous step.
            current = self._check_keys([h], before=op)
        self.ops.append(op)
        self._project_read = None  # from here on the store may differ from the last whole-project read-back
        clock = None
        if fault:
            observed: Observed = None
            if result.wrote:
                write_partition(plugin.implementations, self.db, h, plugin.documents_of(new_state, h), current=current)
        else:
            clock = OnceClock(now)
            try:
                with self._client_for(op, db) as client:
                    observed = plugin.answer(self.system, client, op, clock)
            except Exception as error:  # a crash is a disagreement too, of the crash's kind; reported with the program
                self.state = new_state
                raise self._mismatch(op, [f"the implementation raised {type(error).__name__}: {error}"],
                                     kind_of_exception(error)) from error
        self.state = new_state
        self._pending.add(h)
        self._since_project += 1
        self.transitions[result.transition] += 1
        if self._coverage is not None:
            self._coverage[result.transition] += 1
        for name in near:
            self.near_misses[name][result.transition] += 1
            near_miss.PROCESS_COUNTS[plugin.name][name][result.transition] += 1
        # A call that is handed no clock reading must not read one; every other call reads it exactly once.
        self._clock_reads = None if clock is None else (clock.reads, 0 if now is None else 1)
        return result, observed

    @contextlib.contextmanager
    def _client_for(self, op: Any, db: Any) -> Iterator[Any]:
        """The client a call runs on: `db` if given; for a commit-failure step, a client whose commits fail
        on the server (`CommitFailureClient`), or with a wire session its client, every commit of the call
        rejected by the proxy before it reaches the emulator (`fencecheck.wire.lockstep.commits_rejected`)."""
        if db is not None or not self.plugin.commit_fails(op):
            yield self.db if db is None else db
        elif self.wire is None:
            yield CommitFailureClient(self.db)
        else:
            with commits_rejected(self.wire) as client:
                yield client

    def check_answer(self, op: Any, result: Any, observed: Observed) -> None:
        """The implementation answered what the model predicts (exact types and key order), reading the clock
        exactly once."""
        if not self.plugin.answer_matches(result, observed):
            # `ok`, not the built-in models' `outcome`: a plug-in's result need only be a ModelResult
            expected = result.output if result.ok else result.code
            raise self._mismatch(
                op,
                [
                    f"model expects {expected!r} (transition {result.transition})",
                    f"implementation answered {observed!r}",
                ],
            )
        self.check_clock(op)

    def check_clock(self, op: Any) -> None:
        """The latest call read the clock exactly once (never, when it was handed no reading)."""
        if self._clock_reads is not None and self._clock_reads[0] != self._clock_reads[1]:
            reads, wanted = self._clock_reads
            raise self._mismatch(op, [f"the reference read the clock {reads} times "
                                      f"({'exactly once' if wanted else 'never: the call takes no time'})"])

    def run(self, op: Any) -> Any:
        """Apply `op` to both sides, then check the answer and the stored documents (`check_documents`).
        A lost-response step (`plugin.response_lost`) runs on the wire (`_run_response_lost`) and returns
        None when the stored documents show it did not apply."""
        if self.plugin.response_lost(op):
            return self._run_response_lost(op)
        result, observed = self.apply(op)
        self.check_answer(op, result, observed)
        self.check_documents()
        return result

    def _run_response_lost(self, op: Any) -> Any:
        """A lost-response step (`plugin.response_lost(op)`): on the wire session's client, the call's first
        Commit is forwarded and its answer replaced by UNAVAILABLE (`fencecheck.wire.lockstep`).
        The client's own retry logic runs (google-cloud-firestore's gapic layer resends the Commit; the emulator
        refuses the closed transaction), no harness retry. The step then has two possible outcomes, and the stored
        documents say which happened: applied (the model's state after the step) or not applied (the state before
        it). The model follows that one. The answer must be the unavailable code (the caller cannot know) or, when
        it applied, the model's own answer; anything else, or documents that are neither, is a mismatch. A call
        that sent no Commit (an answer decided before committing) is checked as an ordinary step. Returns the
        model's result, or None when the step did not apply."""
        wire, plugin = self.wire, self.plugin
        if wire is None:
            raise UsageError("a lost-response step runs on the wire: give the Lockstep a WireSession (wire=...)")
        before = self.state
        seen = len(wire.proxy.log.events())
        with wire.proxy.faults(on("Commit", COMMIT_RESPONSE_LOST)):
            result, observed = self.apply(op, db=wire.db)
        hits = wire.proxy.log.events()[seen:]
        if not hits:  # no Commit was sent: nothing was lost, an ordinary step
            self.check_answer(op, result, observed)
            self.check_documents()
            return result
        lost = ", ".join(event.label for event in hits)
        applied = True
        try:
            self.check_documents()
        except LockstepMismatch as as_applied:
            self.state, self.mismatched = before, False  # the other outcome: nothing applied
            try:
                self.check_documents()
            except LockstepMismatch as as_not_applied:
                raise self._mismatch(op, [
                    f"the wire lost the commit's answer ({lost}); the stored documents are neither the model's "
                    "with the step applied nor without it",
                    "against the step applied:", *_problem_lines(as_applied),
                    "against the step not applied:", *_problem_lines(as_not_applied),
                ]) from None
            applied = False
            self.transitions -= Counter({result.transition: 1})
            if self._coverage is not None:
                self._coverage -= Counter({result.transition: 1})
        unavailable = plugin.unavailable_code
        if observed != unavailable and not (applied and plugin.answer_matches(result, observed)):
            model = result.output if result.ok else result.code
            allowed = f"{model!r} or {unavailable!r}" if applied else f"{unavailable!r} (nothing was applied)"
            raise self._mismatch(op, [
                f"the wire lost the commit's answer ({lost}); the stored documents show the step "
                f"{'applied' if applied else 'not applied'} (transition {result.transition})",
                f"model allows {allowed}",
                f"implementation answered {observed!r}",
            ])
        self.check_clock(op)
        return result if applied else None

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
        keys = set(self.plugin.partitions_of_state(self.state)) | self._seen.keys()
        expected = {path: doc for h in keys for path, doc in self._expected(h).items()}
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
            # every stored path is the model's (else the comparison failed): it belongs to a partition
            by_key.setdefault(self.plugin.partition_of_path(path), {})[path] = item
        self._remember(by_key, expected)
        self._pending.clear()
        self._project_checked, self._since_project = True, 0
        self._project_read = stored

    def stored_project(self) -> dict[str, Stored]:
        """Every stored document of the project: the last whole-project read-back when no operation was
        applied since (nothing else writes to the project, so it is what the emulator holds), else a read."""
        return self._project_read if self._project_read is not None else read_project(self.db)

    def _check_keys(self, keys: Collection[str], *, before: Any = None) -> dict[str, Stored]:
        """Read back the read set of each key in `keys` in one batched get and compare it with the model (see
        `check_documents`); returns what was found. `before`: the operation about to rewrite these keys.
        A plug-in without a read set (one partition: the whole project) reads back the project instead."""
        if self.plugin.read_set is None:
            self.check_project()
            return self.stored_project() if before is not None else {}
        stored = read_paths(self.db, [path for h in keys for path in self._read_set(h)])
        expected = {path: doc for h in keys for path, doc in self._expected(h).items()}
        problems = self._compare(stored, expected, keys)
        if problems:
            scope = ", ".join(h[:8] for h in keys)
            head = f"stored documents differ (read-back of key {scope}):"
            if before is not None:
                head = (f"stored documents differ (read-back of key {scope} before the next operation, "
                        f"{self.plugin.describe_op(before, epoch=self.epoch)}, rewrites it):")
            raise self._mismatch(self.ops[-1] if self.ops else None, [head, *problems])
        by_key: dict[str, dict[str, Stored]] = {h: {} for h in keys}
        for path, item in stored.items():
            by_key[self.plugin.partition_of_path(path)][path] = item
        self._remember(by_key, expected)
        self._pending.difference_update(keys)
        return stored

    def _read_set(self, key_hash: str) -> list[str]:
        """The plug-in's read set of this key, given every path the model expects or the last read-back found."""
        return list(self.plugin.read_set(key_hash, {*self._expected(key_hash), *self._seen.get(key_hash, ())}))

    def _expected(self, key_hash: str) -> dict[str, Any]:
        """The model's documents of one key in typed() form, recomputed only when the key's record changed."""
        version = self.plugin.partition_version(self.state, key_hash)
        cached = self._typed.get(key_hash)
        if cached is None or cached[0] is not version:
            docs = self.plugin.documents_of(self.state, key_hash)
            cached = (version, {path: typed(doc) for path, doc in docs.items()})
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
            problems = self.plugin.stored_problems(self.state, stored, keys)
        return problems

    def _remember(self, by_key: Mapping[str, Mapping[str, Stored]], expected: Mapping[str, Any]) -> None:
        """After a successful comparison: the update times (and predicted content) of each key read back."""
        n = len(self.ops)
        for h, items in by_key.items():
            self._seen[h] = {path: _Seen(item.update_time, expected[path], n) for path, item in items.items()}

    # --- reporting ----------------------------------------------------------------------------

    def program(self) -> list[str]:
        return [self.plugin.describe_op(op, epoch=self.epoch) for op in self.ops]

    def _mismatch(self, op: Any, lines: list[str], kind: ProblemKind = ProblemKind.CONTRACT) -> LockstepMismatch:
        self.mismatched = True
        where = "before any operation"
        if op is not None:
            where = f"at step {len(self.ops)}: {self.plugin.describe_op(op, epoch=self.epoch)}"
        program = self.program()
        shown = program[-25:]
        listing = [f"  {len(program) - len(shown) + i + 1}. {text}" for i, text in enumerate(shown)]
        text = "\n".join(
            [
                f"lockstep mismatch {where}",
                *(f"  {line}" for line in lines),
                "model state after the step (as the model predicts it):",
                *(f"  {line}" for line in self.plugin.describe_state(self.state, epoch=self.epoch).splitlines()),
                "program:",
                *listing,
            ]
        )
        return LockstepMismatch(self.plugin.shorten(text, self.state), kind)


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


def _problem_lines(error: LockstepMismatch, limit: int = 6) -> list[str]:
    # the mismatch's own text: its head line, then its problems, up to the model state it appends
    lines = str(error).splitlines()[1:]
    problems = [line for line in lines[: next((i for i, line in enumerate(lines) if not line.startswith("  ")),
                                              len(lines))]]
    return [f"  {line}" for line in problems[:limit]]


def needs_wire(plugin: SystemPlugin, ops: Iterable[Any], db: Any) -> bool:
    """A program replayed on `db` runs on a wire proxy: for any lost-response step, and for a commit-failure step
    whenever `db` is an emulator's client, as the machines ran it (the one path an implementation in another
    process can take: it refuses the client-side `CommitFailureClient`). The unit tests' in-memory fake has no
    wire; its commit failures stay client-side."""
    ops = list(ops)
    if any(plugin.response_lost(op) for op in ops):
        return True
    return getattr(db, "_emulator_host", None) is not None and any(plugin.commit_fails(op) for op in ops)


def replay(
    db: Any, ops: Iterable[Any], *, system: Any = None, plugin: SystemPlugin | None = None, wire: Any = None
) -> Lockstep:
    """Run a recorded program on `db` (an empty project), checking every answer and, as the state machine
    does, the stored documents: the touched key after each step, the whole project every FULL_CHECK_EVERY
    operations and once more at the end. With `wire`, commit-failure and lost-response steps run on it; a
    program that needs one (`needs_wire`) and has no `wire` gets a wire proxy of its own in front of `db`'s
    emulator, stopped at the end. (`plugin` None: a journal file written before its own `replay`,
    `fencecheck.systems.journal.plugin.replay`, existed: such a file names no system, so it is the registry's
    UNNAMED_SYSTEM's, as a history that names none is.)"""
    plugin = plugin_named(UNNAMED_SYSTEM) if plugin is None else plugin
    ops = list(ops)
    with contextlib.ExitStack() as stack:
        if wire is None and needs_wire(plugin, ops, db):
            wire = stack.enter_context(open_session(emulator_host_of(db), db.project))
        lockstep = Lockstep(db, plugin=plugin, system=system, wire=wire)
        lockstep.check_documents()
        for op in ops:
            lockstep.run(op)
        lockstep.check_project()
    return lockstep
