"""The command journal as a harness plug-in (seeds 000/001, docs/journal-decisions.md).

Partitions are command keys: every operation names one (`op.command.key_hash`) and a correct call writes
only inside that key's scope (`checkoutRequests/{h}` and below it, `auditEvents/commerce_command_{h}_*`).
Beyond an exact document match, a read-back checks each valid record's audit chain.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin.records import (
    BrowserBoundary,
    Codec,
    Implementations,
    Model,
    MutationTargets,
    Partitions,
    SuiteParts,
    SystemPlugin,
    accepts_attempt_log,  # noqa: F401 (exported: files import it from here, with ReferenceAPI)
    contract_error_code,
    exact_answer_matches,
)
from fencecheck.plugin.specs import import_module
from fencecheck.runners.lockstep import Lockstep
from fencecheck.runners.lockstep import replay as lockstep_replay
from fencecheck.systems.journal.api import FUNCTIONS, ReferenceAPI, call_arguments
from fencecheck.systems.journal.codec import command_from_json, command_to_json, op_from_json, op_to_json
from fencecheck.systems.journal.counterexamples import counterexample_system, hoisted
from fencecheck.systems.journal.exec import exec_journal, is_exec_spec
from fencecheck.systems.journal.store import key_of, write_key
from fencecheck.systems.journal.structure import contest_expectations, contest_problems
from model.journal import (
    TRANSITIONS,
    VALID_FAULTS,
    CommandRecord,
    CommandRef,
    FaultKind,
    InjectFault,
    JournalState,
    Operation,
    describe_op,
    describe_state,
    documents_for,
    step,
)
from model.journal.constants import ERROR_CODES
from model.journal.near_misses import near_misses
from reference.journal.identity import audit_path, lifecycle_path, root_path

JOURNAL_UNAVAILABLE = "journal_unavailable"


REFERENCE = ReferenceAPI.from_module("reference")




def shorten(text: str, state: JournalState) -> str:
    for h in state.keys():
        text = text.replace(h, h[:8])
    return text


# --- partitions ------------------------------------------------------------------------------------------


def restrict(state: JournalState, key_hash: str) -> JournalState:
    record = state.get(key_hash)
    return JournalState.empty() if record is None else JournalState.empty().with_record(key_hash, record)


def merge(whole: JournalState, part: JournalState, key_hash: str) -> JournalState:
    record = part.get(key_hash)
    return whole if record is None else whole.with_record(key_hash, record)


AUDIT_REVISION = re.compile(r"^auditEvents/commerce_command_([0-9a-f]{64})_(\d{10})$")


def read_set(key_hash: str, known: Collection[str]) -> list[str]:
    """The paths a step on this key can write: the root, the revision-1 audit, the lifecycle and the audit
    after the highest revision (where a read-only answer that wrongly writes, or a second audit, lands), plus
    every path `known` there (the model's, and the last read-back's, so a deletion shows)."""
    paths = set(known)
    top = 1
    for path in paths:
        match = AUDIT_REVISION.match(path)
        if match:
            top = max(top, int(match.group(2)))
    paths.update((root_path(key_hash), lifecycle_path(key_hash), audit_path(key_hash, 1),
                  audit_path(key_hash, top + 1)))
    return sorted(paths)


REBASED_FROM = min(VALID_FAULTS.values())  # no record reaches this high but by a rebase fault


def _contiguous(revisions: list[int], top: int) -> bool:
    """1..top, or 1..k then a run from a rebase's revision up to top."""
    low = [revision for revision in revisions if revision < REBASED_FROM]
    high = [revision for revision in revisions if revision >= REBASED_FROM]
    if low != list(range(1, len(low) + 1)) or revisions[-1:] != [top]:
        return False
    return high == list(range(high[0], top + 1)) if high else len(low) == top


def audit_chain_problems(state: JournalState, stored: Mapping[str, Any], keys: Iterable[str]) -> list[str]:
    """Per valid record of `keys` (`stored`: what was read back of them, each with `.data`): audit revisions
    1..R (a record rebased near the maximum by a VALID_FAULTS fault keeps one gap, below the revision it was
    rebased to), the audit at R matches the lifecycle, and each event starts where the previous one ended."""
    audits: dict[str, dict[int, Mapping[str, Any]]] = {}
    for path, item in stored.items():
        match = AUDIT_REVISION.match(path)
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
        if not _contiguous(revisions, top):
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


# --- implementations and histories -------------------------------------------------------------------------


HINT = ("Expected an importable module with the four journal functions (bare, or journal:<module>), "
        "known_bad.journal:<variant>, or journal:exec:<command line>.")


def resolve_system(spec: str | None) -> ReferenceAPI:
    """The ReferenceAPI a spec names; the reference itself (the `REFERENCE` object) for None, "" or
    "reference", so identity checks against REFERENCE keep meaning "the real thing".

    A spec is spelled as counterexample files spell it: an importable module with the four journal functions,
    and `CommandJournalError` if it declares its error type (without one, its errors are told by their `.code`
    alone: `ReferenceAPI.from_module`), or `package.module:name` for a named system the module builds with
    `system(name)` (the known-bad catalogue: `known_bad.journal:<variant>`), or `journal:exec:<command line>`
    for one that speaks docs/implementation-protocol.md; any of the first two may be prefixed `journal:`."""
    spec = (spec or "").strip()
    if is_exec_spec(spec):  # `journal:exec:<command line>`: an implementation in another process
        return exec_journal(spec)
    # `journal:<module>` names the system explicitly (fencecheck.plugin.specs); the module is spelled as before
    spec = spec.removeprefix("journal:")
    if spec in ("", REFERENCE.module):
        return REFERENCE
    module_name, named, name = spec.partition(":")
    module = import_module(module_name, f"journal system {spec!r}", HINT)
    if named:
        build = getattr(module, "system", None)
        if not callable(build):
            raise SystemNotFoundError(f"journal system {spec!r}: {module_name} has no system(name) function. {HINT}")
        try:
            return build(name)
        except KeyError as error:  # known_bad.journal.variant lists the known names in its message
            raise SystemNotFoundError(f"journal system {spec!r}: {error.args[0] if error.args else error}") from None
    try:
        return ReferenceAPI.from_module(module)
    except AttributeError as error:
        raise SystemNotFoundError(f"journal system {spec!r}: {error}. {HINT}") from None


def describe_impl(impl: Any) -> str | None:
    if not isinstance(impl, ReferenceAPI):
        return None
    return "the reference" if impl is REFERENCE else (impl.module or "an unnamed system")


def parallel_variants() -> tuple[str, ...]:
    """The concurrent variants (known_bad/journal/concurrent_variants.py): only a race shows them."""
    catalogue = import_module("known_bad.journal", "the journal's known-bad catalogue")
    return tuple(v.name for v in catalogue.CONCURRENT_VARIANTS)


def known_bad_variants() -> dict[str, str]:
    """The catalogue's sequential, concurrent and wire-only variants (known_bad/journal/), each by its spec."""
    catalogue = import_module("known_bad.journal", "the journal's known-bad catalogue")
    return {v.name: catalogue.SYSTEM_SPEC.format(name=v.name)
            for v in (*catalogue.VARIANTS, *catalogue.CONCURRENT_VARIANTS, *catalogue.WIRE_VARIANTS)}


def replay(db: Any, ops: Iterable[Operation], *, system: Any = None) -> Lockstep:
    """`fencecheck.runners.lockstep.replay` on the journal: what its counterexample files call."""
    return lockstep_replay(db, ops, plugin=JOURNAL, system=system)


def _error_code(impl: ReferenceAPI, error: BaseException) -> str | None:
    """The declared error type's code, whatever it is (a code outside the contract is a wrong answer, held
    against the implementation), else any exception's `.code` that is one of the contract's codes."""
    if isinstance(error, impl.error_type):
        return error.code
    return contract_error_code(error, ERROR_CODES)


def ops_to_json(ops: Sequence[Operation]) -> tuple[dict[str, Any], list[Any]]:
    """Commands are written once, in a `commands` table, and operations name them (`c1`, `c2`, ...). An injected
    fault (a contest's setup may hold one) is `{"type": "inject_fault", "command": name, "kind": kind}`."""
    names: dict[CommandRef, str] = {}
    for op in ops:
        names.setdefault(op.command, f"c{len(names) + 1}")
    header = {"commands": {name: command_to_json(ref) for ref, name in names.items()}}
    return header, [_op_to_json(op, names) for op in ops]


def _op_to_json(op: Operation, names: Mapping[CommandRef, str]) -> dict[str, Any]:
    if isinstance(op, InjectFault):
        return {"type": "inject_fault", "command": names[op.command], "kind": op.kind.value}
    return op_to_json(op, command_names=names)


def ops_from_json(header: Mapping[str, Any], raw: Sequence[Any]) -> list[Operation]:
    raw_commands = header.get("commands", {})
    if not isinstance(raw_commands, dict):
        raise ValueError("commands must be a JSON object")
    commands = {name: command_from_json(value) for name, value in raw_commands.items()}
    return [_op_from_json(item, commands) for item in raw]


def _op_from_json(item: Any, commands: Mapping[str, CommandRef]) -> Operation:
    if isinstance(item, dict) and item.get("type") == "inject_fault":
        if sorted(item) != ["command", "kind", "type"]:
            raise ValueError(f"an inject_fault entry has exactly type, command and kind, not {sorted(item)}")
        if item["command"] not in commands:
            raise ValueError(f"inject_fault names no known command: {item['command']!r}")
        return InjectFault(commands[item["command"]], FaultKind(item["kind"]))
    return op_from_json(item, commands=commands)


def _parallel_spec() -> Any:
    from fencecheck.systems.journal.parallel import (
        SPEC,  # Hypothesis and the parallel engine load only for parallel programs
    )

    return SPEC


JOURNAL = SystemPlugin(
    name="journal",
    model=Model(
        initial_state=JournalState.empty,
        step=step,
        transitions=TRANSITIONS,
        documents=documents_for,
        describe_op=describe_op,
        describe_state=describe_state,
        answer_matches=exact_answer_matches,  # exact types (True is not 1) and the seeds' key order, nested too
        # fences only grow and terminal states absorb: see fencecheck.checker.linearizability
        commutes_when_read_only=lambda _op: True,
        stored_problems=audit_chain_problems,
        shorten=shorten,
        near_misses=near_misses,
    ),
    partitions=Partitions(
        partition_of=lambda op: op.command.key_hash,
        partition_noun="command key",
        partitions_of_state=lambda state: state.keys(),
        partition_of_path=key_of,
        restrict=restrict,
        merge=merge,
        partition_version=lambda state, key_hash: state.get(key_hash),
    ),
    implementations=Implementations(
        resolve=resolve_system,
        unavailable_code=JOURNAL_UNAVAILABLE,
        operation=call_arguments,
        functions=tuple(FUNCTIONS.values()),
        function=ReferenceAPI.function,  # a ReferenceAPI holds its functions by the table's names
        write_partition=write_key,
        read_set=read_set,
        clock_of=lambda op: None if isinstance(op, InjectFault) else op.now,
        error_code=_error_code,
        spec_of=lambda impl: impl.module,
        describe_impl=describe_impl,
        is_fault=lambda op: isinstance(op, InjectFault),
        commit_fails=lambda op: bool(getattr(op, "commit_fails", False)),
        response_lost=lambda op: bool(getattr(op, "response_lost", False)),
    ),
    codec=Codec(
        ops_to_json=ops_to_json,
        ops_from_json=ops_from_json,
        history_header_keys=("commands",),
    ),
    browser_denied=BrowserBoundary(
        documents=(
            ("root", "checkoutRequests/{id}"),
            ("lifecycle", "checkoutRequests/{id}/lifecycle/current"),
            ("audit", "auditEvents/commerce_command_{id}_0000000001"),
        ),
        groups=(("group_lifecycle", "lifecycle"), ("group_audit", "auditEvents"), ("group_root", "checkoutRequests")),
    ),
    parallel=_parallel_spec,
    known_bad_variants=known_bad_variants,
    hoisted=hoisted,
    counterexample_system=counterexample_system,
    contest_problems=contest_problems,
    contest_expectations=contest_expectations,  # the contest's terminal events, only as the answers imply
    suites=SuiteParts(
        machine="tests.systems.journal.machine:TestJournalLockstep",
        machine_known_bad="tests.systems.journal.machine:KNOWN_BAD",
        races="tests.systems.journal.races",
        catalogue="known_bad.journal",
        parallel_variants=parallel_variants,
    ),
    mutation=MutationTargets(package="reference.journal", decisions=("decide.py",), others=("runner.py",),
                             equivalents="fencecheck.systems.journal:equivalent_mutants.toml"),
)
