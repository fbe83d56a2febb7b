"""A system under verification, as the harness sees it: the plug-in interface.

The harness's generic parts take a `SystemPlugin` and know nothing else of the system:

- the linearizability checker (`fencecheck.checker.linearizability.check`) steps the plug-in's model, searches each
  partition alone and compares the final stored documents with the model's;
- the history recorder and its JSON form (`fencecheck.checker.history`) classify answers and encode operations
  through it;
- the lockstep runner (`fencecheck.runners.lockstep.Lockstep`) and the stateful scaffolding run each operation on the
  model and on an implementation, read the stored documents back and compare;
- transition coverage (`fencecheck.checker.coverage`) counts the rows of its transition table;
- the contest runner (`fencecheck.runners.contest`) races operations and judges the history, and asks the plug-in
  what else the stored documents must show (`contest_problems`).

A *partition* is a part of the stored state that no operation reaches across: the journal's command key
(every operation names one), or the whole project (the lantern's operations span users, lanterns and
venues). The checker searches partitions one at a time (P-compositionality) and the lockstep reads back the
partitions an operation touched.

The plug-ins themselves are in `fencecheck.plugin.registry` (`plugin("journal")`, `plugin("lantern")`).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import attrs

from fencecheck.errors import PluginDefinitionError

Documents = dict[str, dict[str, Any]]
Observed = dict[str, Any] | str | None  # None: a fault, which answers nothing


class ModelResult(Protocol):
    """What a model step answers: the transition row that fired and the answer it predicts."""

    transition: str
    wrote: bool
    code: str | None

    @property
    def ok(self) -> bool: ...

    @property
    def output(self) -> dict[str, Any] | None: ...

    def matches(self, observed: Observed) -> bool: ...


class TransitionRow(Protocol):
    id: str
    reachable: bool


def _identity_text(text: str, _state: Any) -> str:
    return text


@attrs.frozen
class BrowserBoundary:
    """What browser clients must be denied (firestore.rules), as the rules probe (fencecheck.runners.rules_probe)
    requests it: `documents` are (target, path) with the path a template over one synthetic id `{id}` (64
    lowercase hex: the probe seeds one id's documents and creates under another, kept absent); `groups` are
    (target, collection id) of collection-group queries. Target names are the rules matrix's rows and are
    unique over every plug-in."""

    documents: tuple[tuple[str, str], ...] = ()
    groups: tuple[tuple[str, str], ...] = ()


def _no_variants() -> tuple[str, ...]:
    return ()


@attrs.frozen
class SuiteParts:
    """A system's parts of the shared suites (stateful_tests, race_tests, parallel_tests), which run them for every
    registered system that declares them: no suite keeps a list of systems of its own. Each part is named as
    `"module"` or `"module:attribute"` (`load_part`), imported only by the suites (the parts are test material:
    Hypothesis machines, scenarios, catalogues), or is a function called only by them.

    A part left None is a part the system does not have: each suite has one collected test per registered system
    and part that fails when it is missing (stateful_tests/test_suite_parts.py and its race and parallel twins),
    so a new system without a machine, race scenarios or parallel programs shows up as a failure, never as tests
    that quietly never ran."""

    # "module:Class": its lockstep machine's TestCase (a `stateful_tests.machine_runner.BoundToEmulator`), in a
    # module of the system's own tests (tests/systems/<system>/machine.py), which stateful_tests/conftest.py
    # collects wherever it is (the name does not match test_*.py, so no other suite collects it).
    machine: str | None = None
    # "module"s of further tests on its machine that the stateful suite collects with it (their lockstep steps
    # count towards its transition coverage), named like the machine's module, not test_*.py.
    machine_tests: tuple[str, ...] = ()
    # "module:attribute": how its machine runs the known-bad catalogue (a
    # `stateful_tests.known_bad_support.MachineCatalogue`), for stateful_tests/test_known_bad.py.
    machine_known_bad: str | None = None
    # "module": its race scenarios (`SCENARIOS`, `BY_NAME`, and `CATCHES`: concurrent variant -> the scenario that
    # must catch it, run by race_tests/test_race_known_bad.py; a module without `CATCHES` races no variant).
    races: str | None = None
    # "module": its known-bad catalogue (`variant(name)`, with `.rule` and `.description`; `known_bad_variants`
    # spells each variant's spec), which the known-bad suites name their variants from.
    catalogue: str | None = None
    # () -> the concurrent variants the parallel suite must catch (parallel_tests/test_parallel_known_bad.py),
    # by name; its parallel programs are the plug-in's `parallel`.
    parallel_variants: Callable[[], Sequence[str]] = _no_variants


@attrs.frozen
class MutationTargets:
    """What `fencecheck mutate` mutates of a system's reference (fencecheck.mutation): its importable package
    (`"reference.journal"`), copied whole for each mutant, and the files of it to mutate, by file name inside the
    package: `decisions`, where the contract lives (the decision modules; their score has its own goal), and
    `others` (the transaction runner, say). Empty: the system declares nothing to mutate, and `fencecheck
    mutate --system` says so. `equivalents` names the TOML file of the mutants triaged as equivalent
    (`"package:file.toml"`, fencecheck.mutation.equivalents)."""

    package: str | None = None
    decisions: tuple[str, ...] = ()
    others: tuple[str, ...] = ()
    equivalents: str | None = None

    @property
    def modules(self) -> tuple[str, ...]:
        return (*self.decisions, *self.others)


def load_part(where: str) -> Any:
    """What a `SuiteParts` field names: the module `"module"`, or the attribute of `"module:attribute"`."""
    module_name, _, attribute = where.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def _describe_repr(value: Any, *, epoch: Any = None) -> str:
    return repr(value)


def _never(_value: Any) -> bool:
    return False


def _no_near_misses(_state: Any, _op: Any) -> tuple[str, ...]:
    return ()


def _no_problems(*_args: Any) -> list[str]:
    return []


@attrs.frozen(kw_only=True)
class Model:
    """The pure model: a state, a step, the transition table it fires rows of, and the documents a state stores."""

    initial_state: Callable[[], Any]
    step: Callable[[Any, Any], tuple[Any, ModelResult]]
    transitions: Sequence[TransitionRow]
    documents: Callable[[Any, str], Documents]  # (state, partition) -> the exact stored documents of one partition
    describe_op: Callable[..., str] = _describe_repr  # (op, *, epoch=None) -> one line
    describe_state: Callable[..., str] = _describe_repr  # (state, *, epoch=None) -> lines
    # (model result, observed) -> the implementation answered what the model predicts (the lockstep's test;
    # the checker uses the result's own `matches`)
    answer_matches: Callable[[Any, Observed], bool] = lambda result, observed: exact_answer_matches(result, observed)
    # Whether the checker may place a definite read-only call of this operation greedily (see
    # fencecheck.checker.linearizability): sound only when a call that matches read-only in a state also leaves every
    # later state unchanged wherever it matches there.
    commutes_when_read_only: Callable[[Any], bool] = _never
    # (state, what was read back by path (each with `.data`), partitions) -> problems beyond an exact
    # document match (the journal's audit chain); called only when the documents matched.
    stored_problems: Callable[[Any, Mapping[str, Any], Iterable[str]], list[str]] = _no_problems
    shorten: Callable[[str, Any], str] = _identity_text  # abbreviate long ids in failure messages
    # (state before the call, op) -> the near-miss classes only the system can tell (fencecheck.checker.near_miss:
    # current-fence-other-holder, stored-but-one-field, clock-boundary); the core tells exact retries and
    # one-field changes itself. Counted per class in transition coverage.
    near_misses: Callable[[Any, Any], Iterable[str]] = _no_near_misses


# The one partition of a system whose operations span the whole project (the default `Partitions`).
PROJECT = "project"


@attrs.frozen(kw_only=True)
class Partitions:
    """How the stored state splits into parts no operation reaches across. The default is one partition, the
    whole project: every operation, state and path belongs to `PROJECT` and a partition's state is the state."""

    partition_of: Callable[[Any], str] = lambda _op: PROJECT  # the partition an operation touches
    partition_noun: str = "project"  # what a partition is called in explanations: "command key", "project"
    partitions_of_state: Callable[[Any], Iterable[str]] = lambda _state: (PROJECT,)  # the partitions it holds
    # None: the path belongs to no partition (a stray write)
    partition_of_path: Callable[[str], str | None] = lambda _path: PROJECT
    restrict: Callable[[Any, str], Any] = lambda state, _key: state  # the state of one partition, alone
    # (whole, part, key): `whole` with partition `key` taken from `part`
    merge: Callable[[Any, Any, str], Any] = lambda _whole, part, _key: part
    # An object that is the same (`is`) in two states exactly when the partition's documents cannot differ:
    # the lockstep recomputes a partition's expected documents only when it changes.
    partition_version: Callable[[Any, str], Any] = lambda state, _key: state


def _spec_name(impl: Any) -> str | None:
    name = getattr(impl, "name", None)
    return name if isinstance(name, str) else None


def _no_impl(_impl: Any) -> str | None:
    return None


@attrs.frozen(kw_only=True)
class Implementations:
    """The implementations under test: how one is found by spec, called, told apart and written to."""

    resolve: Callable[[str | None], Any]  # an implementation by spec ("" or None: the reference)
    unavailable_code: str  # the answer that means "may or may not have applied"
    # The operation table, the one place an operation becomes a call: op -> (the name of the implementation's
    # function, its keyword arguments beyond db, clock and attempt_log, as plain values: JSON and UTC datetimes),
    # so the in-process call (`SystemPlugin.invoke`) and a process protocol are both derived from it; a TypeError
    # for an op that is no call (a fault). Give it or `invoke`, never both.
    operation: Callable[[Any], tuple[str, dict[str, Any]]] | None = None
    # (impl, function name) -> the function the table's name stands for; default: `impl.api.<name>`.
    function: Callable[[Any, str], Callable[..., Any]] = lambda impl, name: getattr(impl.api, name)
    # The table's functions that are handed no clock (they never read the time); every other one gets `clock=`.
    clockless: tuple[str, ...] = ()
    # Every function of the table: the system's operations, each of which its races and parallel programs must call
    # (race_tests/test_race_suite_parts.py, parallel_tests/test_parallel_suite_parts.py).
    functions: tuple[str, ...] = ()
    # (impl, db, op, clock, log=None) -> the output object, or raises: a call of the system's own, for a system
    # without an operation table (there is then no process protocol to derive). None: derived from the table.
    invoke: Callable[..., Any] | None = None
    # (key, paths known there) -> the paths a step on that partition can write; None: read back the whole project.
    read_set: Callable[[str, Collection[str]], Iterable[str]] | None = None
    # (db, key, docs, *, current) -> store exactly `docs` for one partition (a fault's damage, a test's start).
    # None: read `read_set(key, docs)` (or the whole project without one) unless `current` is given, and make it
    # exactly `docs` (fencecheck.emulator.firestore_io.write_partition, which the lockstep applies).
    write_partition: Callable[..., None] | None = None
    clock_of: Callable[[Any], datetime | None] = lambda _op: None  # the clock reading a call is handed (None: none)
    # The contract error code, None for anything else (default: the error's `code` when it is a str, so an
    # implementation's error answers by its `.code`; a code the model does not predict is a mismatch).
    error_code: Callable[[Any, BaseException], str | None] = lambda _impl, error: code_attribute(error)
    # How an implementation is spelled (counterexamples, reports); default: its `name` when that is a str.
    spec_of: Callable[[Any], str | None] = _spec_name
    # How output names an implementation of this system ("the lantern reference", its spec); None: not one
    # of this system's (fencecheck.plugin.specs.describe_system asks every plug-in).
    describe_impl: Callable[[Any], str | None] = _no_impl
    # Specs that are this system's beyond those every system owns (`SystemPlugin.owns_spec`: `<name>:...`,
    # `known_bad.<name>:...` and its reference's spelling): each is owned when a spec equals it or, for one ending
    # in ":", starts with it. A spec no plug-in owns belongs to the one system whose `resolve` takes it (a bare
    # module with the journal's four functions: the journal).
    spec_prefixes: tuple[str, ...] = ()
    is_fault: Callable[[Any], bool] = _never  # a harness-side rewrite of stored documents, not a call
    commit_fails: Callable[[Any], bool] = _never  # the call runs on a client whose commits are rejected
    # The call runs through the wire proxy, which loses its first Commit's answer after the emulator applied it
    # (fencecheck/wire/lockstep.py): the answer may be the model's or the unavailable code, and the stored
    # documents say whether it applied.
    response_lost: Callable[[Any], bool] = _never


@attrs.frozen(kw_only=True)
class Codec:
    """How a history writes its operations down (docs/history-format.md). Either `operations` (type name ->
    attrs operation class: each operation is `{"type": name, <its attrs fields>}`, no header) or both
    `ops_to_json` and `ops_from_json` (a system with a history format of its own)."""

    operations: Mapping[str, type] = attrs.field(factory=dict)
    ops_to_json: Callable[[Sequence[Any]], tuple[dict[str, Any], list[Any]]] | None = None  # -> (header, entries)
    ops_from_json: Callable[[Mapping[str, Any], Sequence[Any]], list[Any]] | None = None  # (history JSON, entries)
    history_header_keys: tuple[str, ...] = ()  # the top-level keys `ops_to_json`'s header adds to a history

    def encode(self, ops: Sequence[Any], *, system: str = "the system's") -> tuple[dict[str, Any], list[Any]]:
        if self.ops_to_json is not None:
            return self.ops_to_json(ops)
        names = {cls: name for name, cls in self.operations.items()}
        entries = []
        for op in ops:
            if type(op) not in names:
                raise TypeError(f"not a {system} operation: {type(op).__name__}")
            entries.append({"type": names[type(op)], **attrs.asdict(op)})
        return {}, entries  # no header: every operation spells itself

    def decode(self, history: Mapping[str, Any], raw: Sequence[Any], *, system: str = "the system's") -> list[Any]:
        if self.ops_from_json is not None:
            return self.ops_from_json(history, raw)
        return [self._op_from_json(item, system) for item in raw]

    def _op_from_json(self, data: object, system: str) -> Any:
        if not isinstance(data, dict) or data.get("type") not in self.operations:
            raise ValueError(f"a {system} operation is an object whose type is one of {sorted(self.operations)}")
        cls = self.operations[data["type"]]
        names = [field.name for field in attrs.fields(cls)]
        if sorted(data) != sorted(["type", *names]):
            raise ValueError(f"a {data['type']} operation has exactly the keys {['type', *names]}")
        return cls(**{name: data[name] for name in names})


# The fields of each record that SystemPlugin hands on as its own (read-only) attributes, so the core reads
# `plugin.step` whatever record holds it; `documents_of` is the model's `documents`.
_DELEGATED = {
    "model": [f.name for f in attrs.fields(Model)],
    "partitions": [f.name for f in attrs.fields(Partitions)],
    "implementations": [f.name for f in attrs.fields(Implementations)],
    "codec": ["history_header_keys"],
}
_RENAMED = {"documents_of": ("model", "documents")}


@attrs.frozen(kw_only=True)  # by keyword only: each record is named where it is given
class SystemPlugin:
    """One system: its model, its partitions, its implementations and how its operations are written down,
    each a record (`Model`, `Partitions`, `Implementations`, `Codec`), plus what only some systems have."""

    name: str  # "journal", "lantern": file names, report sections and $FENCECHECK_SYSTEM prefixes use it
    model: Model
    implementations: Implementations
    codec: Codec
    partitions: Partitions = Partitions()  # default: the whole project is one partition

    # --- extensions: what only some systems have ----------------------------------------------------------
    # () -> the system's `fencecheck.parallel.ParallelSpec` (its strategy of contested calls and its checks of a
    # race), imported on first use: only the parallel engine needs Hypothesis strategies. None: the system has
    # no parallel programs yet.
    parallel: Callable[[], Any] | None = None
    # Its documents and collection groups a browser client must be denied; empty: the system has no browser
    # boundary of its own (the default-deny of firestore.rules covers it, and the probe does not ask).
    browser_denied: BrowserBoundary = BrowserBoundary()
    # Its catalogue of known-bad variants (`fencecheck gate --known-bad NAME`): name -> the spec that resolves
    # it, in catalogue order; loaded only when asked (the catalogue is test material).
    known_bad_variants: Callable[[], Mapping[str, str]] = lambda: {}
    # Its parts of the shared suites (its machine, race scenarios, known-bad runs); empty: it has none, which each
    # suite reports as a failing test (`SuiteParts`).
    suites: SuiteParts = SuiteParts()
    # What of its reference `fencecheck mutate` mutates (`MutationTargets`); empty: nothing.
    mutation: MutationTargets = MutationTargets()
    # --- counterexample files (fencecheck.runners.counterexamples) -------------------------------------------------
    # (the operations) -> the names of model classes a file must import beyond those it spells itself (every
    # attrs class and enum the operations and hoisted values hold is found by fencecheck.runners.counterexamples),
    # imported from the operations' own module.
    model_imports: Callable[[Sequence[Any]], Iterable[str]] = lambda _ops: ()
    # Values the operations share, spelled once in a file as constants C1, C2, ... (the journal's commands).
    hoisted: Callable[[Sequence[Any]], Sequence[Any]] = lambda _ops: ()
    # (the implementation's spec, None: the reference) -> how a file names what it replays: (its import lines,
    # its SYSTEM line or None, the replay call). None: the generic form, `SYSTEM = <NAME>.resolve(spec)` and
    # `replay(firestore_db, OPS, plugin=<NAME>, system=SYSTEM)`.
    counterexample_system: Callable[[str | None], tuple[list[str], str | None, str]] | None = None
    # --- contests (fencecheck.runners.contest) ---------------------------------------------------------------------
    # (model state after a contest's setup, the whole project read back after the setup and at the end (path
    # -> a document with `.data` and `.update_time`), the `fencecheck.runners.contest.Contest`) -> what must hold of
    # the stored documents whatever order the calls took, beyond what the checker sees (the journal's audit
    # chain and update times, the contest's expected terminal events from `Contest.facts`)
    contest_problems: Callable[[Any, Mapping[str, Any], Mapping[str, Any], Any], list[str]] = (
        lambda _state, _before, _after, _contest: []
    )
    # The same arguments -> what the contest expects of the stored documents only if the calls' answers imply
    # it (the journal's terminal events from `Contest.facts`: a race whose every caller went unanswered may
    # have stored none). A run that misses one while some caller went unanswered is contention, never a
    # contract finding (`fencecheck.runners.contest_results`); with every caller answered it is a contract finding.
    contest_expectations: Callable[[Any, Mapping[str, Any], Mapping[str, Any], Any], list[str]] = (
        lambda _state, _before, _after, _contest: []
    )

    def __attrs_post_init__(self) -> None:
        problems = definition_problems(self)
        if problems:
            raise PluginDefinitionError(f"SystemPlugin {self.name!r}: " + "; ".join(problems) + ". See "
                                        "docs/writing-a-plugin.md for what each field must be.")

    def __getattr__(self, attribute: str) -> Any:
        # Only reached for a name that is not a field: a record's field, read through (see _DELEGATED).
        if attribute in _RENAMED:
            record, field = _RENAMED[attribute]
            return getattr(object.__getattribute__(self, record), field)
        for record, names in _DELEGATED.items():
            if attribute in names:
                return getattr(object.__getattribute__(self, record), attribute)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attribute!r}")

    @property
    def reference(self) -> Any:
        """The reference implementation: what `resolve` answers for no spec."""
        return self.implementations.resolve(None)

    def ops_to_json(self, ops: Sequence[Any]) -> tuple[dict[str, Any], list[Any]]:
        return self.codec.encode(ops, system=self.name)

    def ops_from_json(self, history: Mapping[str, Any], raw: Sequence[Any]) -> list[Any]:
        return self.codec.decode(history, raw, system=self.name)

    def owns_spec(self, spec: str) -> bool:
        """Whether `spec` names an implementation of this system before any `resolve` is asked
        ($FENCECHECK_SYSTEM, `gate --system`/`--known-bad`, counterexample files; fencecheck.plugin.specs): one
        in its own namespace (`<name>:<module>`, `<name>:exec:<command>`), in its known-bad catalogue's
        (`known_bad.<name>:<variant>`), its reference's spelling (`spec_of(reference)`), or one its
        `implementations.spec_prefixes` adds."""
        claimed = (f"{self.name}:", f"known_bad.{self.name}:", *self.spec_prefixes)
        return (spec == self.spec_of(self.reference)
                or any(spec.startswith(p) if p.endswith(":") else spec == p for p in claimed))

    def function_of(self, op: Any) -> str | None:
        """The name of the table's function that `op` calls; None for a fault (no call) or a system without a
        table (`invoke`)."""
        if self.implementations.operation is None or self.is_fault(op):
            return None
        return self.implementations.operation(op)[0]

    @property
    def transition_ids(self) -> tuple[str, ...]:
        return tuple(row.id for row in self.transitions)

    def invoke(self, impl: Any, db: Any, op: Any, clock: Callable[[], datetime], log: Any = None) -> Any:
        """Make the call `op` stands for on `impl`: the table's function (`operation`, `function`), handed `db`,
        `clock` unless it is `clockless`, and `log` as `attempt_log` when it takes one; or the plug-in's own
        `invoke`, for a system without a table."""
        implementations = self.implementations
        if implementations.invoke is not None:
            return implementations.invoke(impl, db, op, clock, log)
        name, kwargs = implementations.operation(op)  # not None: a plug-in is built with one of the two
        function = implementations.function(impl, name)
        handed: dict[str, Any] = {"db": db}
        if name not in implementations.clockless:
            handed["clock"] = clock
        if accepts_attempt_log(function):
            handed["attempt_log"] = log
        return function(**handed, **kwargs)

    def answer(self, impl: Any, db: Any, op: Any, clock: Callable[[], datetime], log: Any = None) -> Observed:
        """What a caller of `impl` sees: its output as plain JSON (`impl_output_json`), or the contract error
        code (`error_code`). Anything that is not the contract's error propagates."""
        try:
            return impl_output_json(self.invoke(impl, db, op, clock, log))
        except Exception as error:
            code = self.error_code(impl, error)
            if code is None:
                raise
            return code


# a file name, a section id and the `<system>:` of a spec: nothing that a path, a spec or a shell would split
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]*")
CORE_HISTORY_KEYS = frozenset({"format", "system", "calls", "finalDocuments"})


RECORDS = {"model": Model, "partitions": Partitions, "implementations": Implementations, "codec": Codec}


def _callable_problems(where: str, record: Any) -> list[str]:
    problems = []
    for field in attrs.fields(type(record)):
        value = getattr(record, field.name)
        optional = "None" in str(field.type)
        if "Callable" in str(field.type) and not callable(value) and not (optional and value is None):
            problems.append(f"{where}{field.name}: expected a callable{' or None' if optional else ''}, got "
                            f"{type(value).__name__}")
    return problems


def definition_problems(plugin: SystemPlugin) -> list[str]:
    """What `plugin`'s fields break of the interface, each naming the field as `record.field` (empty: none).
    Only what can be told without running the model: that a record is its record, a callable callable, a name a
    name, the transition table a table; what a step answers is the conformance test's
    (tests/unit/test_plugin_conformance.py)."""
    problems = []
    if not isinstance(plugin.name, str) or not NAME_PATTERN.fullmatch(plugin.name):
        problems.append(f"name: expected lowercase letters, digits, _ and -, not starting with _ or -, got "
                        f"{plugin.name!r}")
    whole = True
    for record_name, record_class in RECORDS.items():
        record = getattr(plugin, record_name)
        if not isinstance(record, record_class):
            problems.append(f"{record_name}: expected a fencecheck.plugin.{record_class.__name__}, got "
                            f"{type(record).__name__}")
            whole = False
        else:
            problems += _callable_problems(f"{record_name}.", record)
    problems += _callable_problems("", plugin)
    if not whole:
        return problems  # the checks below read fields of the records
    for where, value in (("partitions.partition_noun", plugin.partitions.partition_noun),
                         ("implementations.unavailable_code", plugin.implementations.unavailable_code)):
        if not isinstance(value, str) or not value:
            problems.append(f"{where}: expected a non-empty str, got {value!r}")
    rows = plugin.model.transitions
    ids = [getattr(row, "id", None) for row in rows]
    if any(not isinstance(i, str) for i in ids) or any(
            not isinstance(getattr(row, "reachable", None), bool) for row in rows):
        problems.append("model.transitions: expected rows with a str `id` and a bool `reachable`")
    elif len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        problems.append(f"model.transitions: row ids must be unique; repeated: {repeated}")
    problems += _codec_problems(plugin.codec)
    problems += _call_problems(plugin.implementations)
    prefixes = plugin.implementations.spec_prefixes
    if not isinstance(prefixes, tuple) or any(not isinstance(prefix, str) or not prefix for prefix in prefixes):
        problems.append(f"implementations.spec_prefixes: expected a tuple of non-empty str, got {prefixes!r}")
    return problems


def _call_problems(implementations: Implementations) -> list[str]:
    given = (implementations.operation is not None, implementations.invoke is not None)
    if given[0] == given[1]:
        return ["implementations.operation, implementations.invoke: give exactly one (the operation table, or a "
                f"call of the system's own), not {'both' if given[0] else 'neither'}"]
    for field in ("clockless", "functions"):
        names = getattr(implementations, field)
        if not isinstance(names, tuple) or any(not isinstance(name, str) or not name for name in names):
            return [f"implementations.{field}: expected a tuple of function names (non-empty str), got {names!r}"]
    return []


def _codec_problems(codec: Codec) -> list[str]:
    problems = []
    keys = codec.history_header_keys
    if not isinstance(keys, tuple) or any(not isinstance(key, str) for key in keys):
        problems.append(f"codec.history_header_keys: expected a tuple of str, got {keys!r}")
    elif CORE_HISTORY_KEYS & set(keys):
        problems.append(f"codec.history_header_keys: {sorted(CORE_HISTORY_KEYS & set(keys))} are the core's own "
                        "keys of a history (docs/history-format.md); pick other names")
    own = (codec.ops_to_json is None, codec.ops_from_json is None)
    if own[0] != own[1]:
        problems.append("codec.ops_to_json, codec.ops_from_json: give both (a history format of the system's "
                        "own) or neither (derived from `operations`)")
    elif own[0]:
        operations = codec.operations
        if not isinstance(operations, Mapping) or not operations:
            problems.append("codec.operations: expected type name -> attrs operation class (or give ops_to_json "
                            f"and ops_from_json), got {operations!r}")
        else:
            for type_name, cls in operations.items():
                if not isinstance(type_name, str) or not type_name or not attrs.has(cls):
                    problems.append(f"codec.operations: {type_name!r}: expected a non-empty str naming an attrs "
                                    f"class, got {cls!r}")
    return problems


def impl_output_json(value: Any) -> dict[str, Any]:
    """An implementation's output as the plain JSON the model predicts: the object's `.to_json()`, or the
    object itself when it is a `Mapping` (a dict, a frozen `MappingProxyType`, ...). Nested mappings become
    dicts and nested lists and tuples lists, recursively (a nested object with `.to_json()` is converted the
    same way); keys keep their order and every other value is kept as it is (True stays True, never 1), so
    the comparison after it stays exact. Anything else is not an output: TypeError."""
    to_json = getattr(value, "to_json", None)
    if not isinstance(value, Mapping) and callable(to_json):
        value = to_json()
    if not isinstance(value, Mapping):
        raise TypeError(f"a call returned {type(value).__name__}, not an output (a Mapping, or an object "
                        "with .to_json() that returns one)")
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    to_json = getattr(value, "to_json", None)
    return _plain(to_json()) if callable(to_json) else value


def exact_json(value: Any) -> Any:
    """A comparison key for plain JSON that keeps every difference a caller could see: key order (nested too)
    and the exact type of every value (True is not 1, 1 is not 1.0)."""
    if isinstance(value, dict):
        return ("object", tuple((key, exact_json(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("array", tuple(exact_json(item) for item in value))
    return (type(value), value)


def exact_answer_matches(result: ModelResult, observed: Observed) -> bool:
    """The model's predicted answer, exactly: the same error code, an output equal as `exact_json`, or (None:
    an injected fault, which answers nothing) a row that predicts no answer."""
    if observed is None:
        return result.output is None and result.code is None
    if isinstance(observed, str):
        return not result.ok and result.code == observed
    expected = result.output
    return expected is not None and exact_json(expected) == exact_json(observed)


class UndeclaredError(Exception):
    """The error type of an implementation that declares none of its own: nothing raises it, so that
    implementation's errors are told by their `.code` alone (`contract_error_code`)."""


def accepts_attempt_log(function: Callable[..., Any]) -> bool:
    """Whether `function` takes an `attempt_log` keyword (by name, or any keyword): `SystemPlugin.invoke` hands
    it the attempt log only then, so an implementation that keeps none need not declare the parameter."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return "attempt_log" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def code_attribute(error: BaseException) -> str | None:
    """The error's `code` attribute as a plain str, or None when it has none (`SystemPlugin.error_code`'s default)."""
    code = getattr(error, "code", None)
    return str.__str__(code) if isinstance(code, str) else None


def contract_error_code(error: BaseException, codes: Collection[str]) -> str | None:
    """The contract error code `error` carries, or None when it is not the contract's error. The contract's
    error is recognized by its `code` attribute, a string that is one of `codes`, whatever its class: an
    implementation may raise an exception class of its own. The code comes back as the contract spells it
    (a plain str, also for a str subclass such as a StrEnum member)."""
    code = getattr(error, "code", None)
    if not isinstance(code, str):
        return None
    for known in codes:
        if code == known:
            return known
    return None
