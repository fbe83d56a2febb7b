"""The gateway journal as a harness plug-in (seed 003, docs/gateway-contract.md).

Partitions are journals: every operation names one (`op.journal`: namespace and journal key) and a correct
call writes only that journal's record and its events, `gatewayNamespaces/{ns}/journals/{key}` and
`.../events/{revision:010d}`. A partition is spelled `{ns}/{key}`. Beyond an exact document match nothing is
checked here: G-INV-1..12 are properties of documents (`model.gateway.invariant_violations`), which an
exact match with the model's carries over; the stateful machine checks them on what is stored, and a
contest's `contest_problems` (`structure.py`) on what a race stored, across the race too.

An implementation is a `GatewaySystem`: a module with the ten operations and its own `GatewayError`.
`resolve("")` is `reference.gateway`; `resolve("known_bad.gateway:<name>")` a known-bad copy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from types import ModuleType
from typing import Any

import attrs

import reference.gateway
from fencecheck.checker.history_codec import datetime_from_json, datetime_to_json
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
    UndeclaredError,
    contract_error_code,
    exact_answer_matches,
)
from fencecheck.plugin.specs import implementation_module, module_of_spec
from fencecheck.systems.gateway.structure import contest_problems
from model.gateway import (
    TRANSITIONS,
    ApplyEvidence,
    Begin,
    ClaimConsume,
    CloseWindow,
    Evidence,
    GatewayState,
    Get,
    HostedAnswer,
    InjectFault,
    JournalRef,
    ManualTerminal,
    RecordConsume,
    ReportSubmission,
    TakeProviderIntent,
    TakeReconcileLease,
    describe_op,
    describe_state,
    step,
    stored_documents,
)
from model.gateway.constants import ERROR_CODES, GATEWAY_UNAVAILABLE, LINEARIZABLE
from model.gateway.near_misses import near_misses

REFERENCE_SPEC = "reference.gateway"
VARIANT_PREFIX = "known_bad.gateway:"


@attrs.frozen
class GatewaySystem:
    """A gateway implementation: `api` has the ten operations and raises `error`, whose `.code` is the
    contract's error code (any exception with a contract `.code` counts too: `UndeclaredError` when `api` has
    no `GatewayError`). `name` is how it is spelled (`reference.gateway`, `known_bad.gateway:<variant>`)."""

    name: str
    api: Any
    error: type[Exception]

    @classmethod
    def of(cls, name: str, api: ModuleType | Any) -> GatewaySystem:
        return cls(name, api, getattr(api, "GatewayError", UndeclaredError))


REFERENCE_GATEWAY = GatewaySystem.of(REFERENCE_SPEC, reference.gateway)


def resolve(spec: str | None) -> GatewaySystem:
    """`reference.gateway` (or nothing), `known_bad.gateway:<variant>`, or `gateway:<module>`: a module of the
    user's with the ten functions of `FUNCTIONS` (and `GatewayError` if it declares its error type), named by the
    whole spec."""
    spec = (spec or "").strip()
    if spec in ("", REFERENCE_SPEC, f"gateway:{REFERENCE_SPEC}"):
        return REFERENCE_GATEWAY
    if module_of_spec("gateway", spec) is not None and not spec.startswith(f"gateway:{VARIANT_PREFIX}"):
        return GatewaySystem.of(spec, implementation_module("gateway", spec, FUNCTIONS.values()))
    spec = spec.removeprefix("gateway:")
    if not spec.startswith(VARIANT_PREFIX):
        raise SystemNotFoundError(f"gateway system {spec!r}: expected {REFERENCE_SPEC}, {VARIANT_PREFIX}<variant> "
                                  "or gateway:<module>.")
    from known_bad.gateway import variant  # the catalogue is test material: loaded only when named

    try:
        found = variant(spec[len(VARIANT_PREFIX):])
    except KeyError as error:
        raise SystemNotFoundError(f"gateway system {spec!r}: {error.args[0]}") from None
    return GatewaySystem.of(found.system_spec, found.build())


def held_classes(ops: Sequence[Any]) -> set[str]:
    """The model classes of the attrs values the operations hold, at any depth (a JournalRef, a HostedAnswer,
    an Evidence): a counterexample file spells them, so it imports them (`SystemPlugin.model_imports`)."""
    found: set[str] = set()
    pending = list(ops)
    while pending:
        value = pending.pop()
        for field in attrs.fields(type(value)):
            inner = getattr(value, field.name)
            if attrs.has(type(inner)):
                found.add(type(inner).__name__)
                pending.append(inner)
    return found


def known_bad_variants() -> dict[str, str]:
    """The catalogue's variants (known_bad/gateway/), sequential and concurrent, each by its spec: `fencecheck
    gate --known-bad NAME` finds a gateway variant here."""
    from known_bad.gateway import VARIANTS  # test material: loaded only when asked

    return {v.name: v.system_spec for v in VARIANTS}


# --- calls ---------------------------------------------------------------------------------------------

# model operation -> the public function it stands for
FUNCTIONS: dict[type, str] = {
    Begin: "begin_gateway_journal",
    Get: "get_gateway_journal",
    ClaimConsume: "claim_consume_intent",
    RecordConsume: "record_consume_response",
    TakeProviderIntent: "take_provider_intent",
    ReportSubmission: "report_provider_submission",
    TakeReconcileLease: "take_reconcile_lease",
    ApplyEvidence: "apply_settlement_evidence",
    ManualTerminal: "record_manual_terminal",
    CloseWindow: "close_submission_window",
}


def call_arguments(op: Any) -> tuple[str, dict[str, Any]]:
    """The gateway's operation table (`Implementations.operation`): (public function name, keyword arguments
    without db, clock and attempt_log) for a model operation: request and provider input as the parsed JSON, the
    simulated hosted answer and evidence as plain dicts. Every function is handed the clock, also one a namespace
    not declared linearizable refuses before reading it (`_clock_of`)."""
    function = FUNCTIONS.get(type(op))
    if function is None:
        raise TypeError(f"not a gateway call: {type(op).__name__}")
    ref = op.journal
    kwargs: dict[str, Any] = {
        "namespace": ref.namespace_id,
        "consistency": ref.consistency,
        "gateway_binding_id": ref.gateway_binding_id,
        "operation_id": ref.operation_id,
        "provider": ref.provider,
        "request": json.loads(ref.request),
        "provider_input": json.loads(ref.provider_input),
        "region": op.region,
    }
    if hasattr(op, "lease_id"):
        kwargs["lease_id"] = op.lease_id
    if hasattr(op, "expected_fence_epoch"):
        kwargs["expected_fence_epoch"] = op.expected_fence_epoch
    if isinstance(op, RecordConsume):
        kwargs["answer"] = attrs.asdict(op.answer)
    elif isinstance(op, ReportSubmission):
        kwargs.update(claim_id=op.claim_id, provider_submission_id=op.provider_submission_id,
                      payment_reference=op.payment_reference, caller_outcome=op.caller_outcome)
    elif isinstance(op, ApplyEvidence):
        kwargs["evidence"] = attrs.asdict(op.evidence)
    elif isinstance(op, ManualTerminal):
        kwargs.update(processor_result=op.processor_result,
                      claimed_independent_verification=op.claimed_independent_verification,
                      submission_fenced=op.submission_fenced)
    return function, kwargs


def _error_code(impl: GatewaySystem, error: BaseException) -> str | None:
    """As the journal's: the declared error's code, else any exception's `.code` that is a contract code."""
    if isinstance(error, impl.error):
        return error.code
    return contract_error_code(error, ERROR_CODES)


# --- partitions ------------------------------------------------------------------------------------------

_PATH = re.compile(r"^gatewayNamespaces/([^/]+)/journals/([^/]+)(?:/.*)?$")
_EVENT = re.compile(r"/events/(\d{10})$")


def partition(namespace_id: str, journal_key: str) -> str:
    return f"{namespace_id}/{journal_key}"


def _key(partition_name: str) -> tuple[str, str]:
    namespace_id, _, journal_key = partition_name.partition("/")
    return namespace_id, journal_key


def partition_of(op: Any) -> str:
    return partition(op.journal.namespace_id, op.journal.journal_key)


def partition_of_path(path: str) -> str | None:
    """The journal whose scope holds `path`: its record and every document below it; else None."""
    match = _PATH.match(path)
    return None if match is None else partition(match.group(1), match.group(2))


def restrict(state: GatewayState, name: str) -> GatewayState:
    record = state.get(_key(name))
    return GatewayState.empty() if record is None else GatewayState.empty().with_record(_key(name), record)


def merge(whole: GatewayState, part: GatewayState, name: str) -> GatewayState:
    record = part.get(_key(name))
    return whole if record is None else whole.with_record(_key(name), record)


def documents_of(state: GatewayState, name: str) -> dict[str, dict[str, Any]]:
    record = state.get(_key(name))
    return {} if record is None else stored_documents(record)


def read_set(name: str, known: Collection[str]) -> list[str]:
    """The paths a step on this journal can write: the record, the first event and the event after the
    highest one known (where a read-only answer that wrongly writes, or a second event, lands), plus every
    path `known` there (the model's, and the last read-back's, so a deletion shows)."""
    record_at = "gatewayNamespaces/{}/journals/{}".format(*_key(name))
    paths = set(known)
    top = 1
    for path in paths:
        match = _EVENT.search(path)
        if match:
            top = max(top, int(match.group(1)))
    paths.update((record_at, f"{record_at}/events/{1:010d}", f"{record_at}/events/{top + 1:010d}"))
    return sorted(paths)


def _clock_of(op: Any) -> datetime | None:
    """The reading a call is handed; None for a fault (no call) and for a namespace not declared
    linearizable, which is refused before the clock is read (precedence step 1): such a call must not read it."""
    if isinstance(op, InjectFault) or op.journal.consistency != LINEARIZABLE:
        return None
    return op.now


def shorten(text: str, state: GatewayState) -> str:
    for (_ns, key), _record in state.records:
        text = text.replace(key, key[:8])
    return text


# --- operations as JSON ------------------------------------------------------------------------------------

_OPS: dict[str, type] = {
    "begin": Begin,
    "get": Get,
    "claim": ClaimConsume,
    "record_consume": RecordConsume,
    "take_provider_intent": TakeProviderIntent,
    "report": ReportSubmission,
    "take_reconcile_lease": TakeReconcileLease,
    "apply_evidence": ApplyEvidence,
    "manual_terminal": ManualTerminal,
    "close_window": CloseWindow,
    "fault": InjectFault,
}
_TYPE_NAMES = {cls: name for name, cls in _OPS.items()}
_NESTED: dict[str, type] = {"answer": HostedAnswer, "evidence": Evidence}


def _fields(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in attrs.fields(cls))


def op_to_json(op: Any, journal_names: Mapping[JournalRef, str]) -> dict[str, Any]:
    name = _TYPE_NAMES.get(type(op))
    if name is None:
        raise TypeError(f"not a gateway operation: {type(op).__name__}")
    out: dict[str, Any] = {"type": name}
    for field in _fields(type(op)):
        value = getattr(op, field)
        if field == "journal":
            value = journal_names[value]
        elif field in _NESTED:
            value = attrs.asdict(value)
        elif isinstance(value, datetime):
            value = datetime_to_json(value)
        out[field] = value
    return out


def op_from_json(data: object, journals: Mapping[str, JournalRef]) -> Any:
    if not isinstance(data, dict) or data.get("type") not in _OPS:
        raise ValueError(f"a gateway operation is an object whose type is one of {sorted(_OPS)}")
    cls = _OPS[data["type"]]
    fields = _fields(cls)
    if sorted(data) != sorted(("type", *fields)):
        raise ValueError(f"a {data['type']} operation has exactly the keys {['type', *fields]}")
    values: dict[str, Any] = {}
    for field in fields:
        value = data[field]
        if field == "journal":
            if not isinstance(value, str) or value not in journals:
                raise ValueError(f"a {data['type']} operation names a journal of the journals table")
            value = journals[value]
        elif field in _NESTED:
            nested = _NESTED[field]
            if not isinstance(value, dict) or sorted(value) != sorted(_fields(nested)):
                raise ValueError(f"{field} has exactly the keys {list(_fields(nested))}")
            value = nested(**value)
        elif field == "now":
            value = datetime_from_json(value)
        values[field] = value
    return cls(**values)


def ops_to_json(ops: Sequence[Any]) -> tuple[dict[str, Any], list[Any]]:
    """Journals are written once, in a `journals` table, and operations name them (`j1`, `j2`, ...)."""
    names: dict[JournalRef, str] = {}
    for op in ops:
        names.setdefault(op.journal, f"j{len(names) + 1}")
    header = {"journals": {name: attrs.asdict(ref) for ref, name in names.items()}}
    return header, [op_to_json(op, names) for op in ops]


def ops_from_json(header: Mapping[str, Any], raw: Sequence[Any]) -> list[Any]:
    table = header.get("journals", {})
    if not isinstance(table, dict):
        raise ValueError("journals must be a JSON object")
    journals = {}
    for name, value in table.items():
        if not isinstance(value, dict) or sorted(value) != sorted(_fields(JournalRef)):
            raise ValueError(f"journal {name!r} has exactly the keys {list(_fields(JournalRef))}")
        journals[name] = JournalRef(**value)
    return [op_from_json(item, journals) for item in raw]


def _parallel_spec() -> Any:
    from fencecheck.systems.gateway.parallel import (
        SPEC,  # Hypothesis and the parallel engine load only for parallel programs
    )

    return SPEC


GATEWAY = SystemPlugin(
    name="gateway",
    model=Model(
        initial_state=GatewayState.empty,
        step=step,
        transitions=TRANSITIONS,
        documents=documents_of,
        describe_op=describe_op,
        describe_state=describe_state,
        answer_matches=exact_answer_matches,  # exact types (True is not 1) and the contract's key order
        # Not claimed: a read-only answer here can depend on the clock (a lease active or not), so placing one
        # greedily is not known to be sound; the checker then searches every order.
        commutes_when_read_only=lambda _op: False,
        shorten=shorten,
        near_misses=near_misses,
    ),
    partitions=Partitions(
        partition_of=partition_of,
        partition_noun="journal",
        partitions_of_state=lambda state: [partition(ns, key) for (ns, key), _record in state.records],
        partition_of_path=partition_of_path,
        restrict=restrict,
        merge=merge,
        partition_version=lambda state, name: state.get(_key(name)),
    ),
    implementations=Implementations(
        resolve=resolve,
        unavailable_code=GATEWAY_UNAVAILABLE,
        operation=call_arguments,
        functions=tuple(FUNCTIONS.values()),
        read_set=read_set,
        clock_of=_clock_of,
        error_code=_error_code,
        describe_impl=lambda impl: (("the gateway reference" if impl is REFERENCE_GATEWAY else impl.name)
                                    if isinstance(impl, GatewaySystem) else None),
        is_fault=lambda op: isinstance(op, InjectFault),
        commit_fails=lambda op: bool(getattr(op, "commit_fails", False)),
    ),
    codec=Codec(
        ops_to_json=ops_to_json,
        ops_from_json=ops_from_json,
        history_header_keys=("journals",),
    ),
    # G34: no browser client reads or writes a namespace, record or event, nor queries their groups
    browser_denied=BrowserBoundary(
        documents=(
            ("gateway_namespace", "gatewayNamespaces/{id}"),
            ("gateway_record", "gatewayNamespaces/{id}/journals/{id}"),
            ("gateway_event", "gatewayNamespaces/{id}/journals/{id}/events/0000000001"),
        ),
        groups=(
            ("group_gateway_namespaces", "gatewayNamespaces"),
            ("group_journals", "journals"),
            ("group_events", "events"),
        ),
    ),
    known_bad_variants=known_bad_variants,
    model_imports=held_classes,
    contest_problems=contest_problems,  # G-INV-1..12 on the stored documents after a race (structure.py)
    parallel=_parallel_spec,
    suites=SuiteParts(
        machine="tests.systems.gateway.machine:TestGatewayMachine",
        machine_tests=("tests.systems.gateway.machine_journeys",),
        machine_known_bad="tests.systems.gateway.machine:KNOWN_BAD",
        races="tests.systems.gateway.races",
        catalogue="known_bad.gateway",
        parallel_variants=lambda: ("claim_outside_the_transaction",),
    ),
    mutation=MutationTargets(package="reference.gateway", decisions=("decide.py",), others=("runner.py",),
                             equivalents="fencecheck.systems.gateway:equivalent_mutants.toml"),
)
