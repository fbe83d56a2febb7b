"""The lantern transaction layer as a harness plug-in (docs/lantern-contract.md).

One partition, the whole project: a light touches the user's guard, the lantern, its pin and a venue; an
extinguish the lantern, pin, guard and venue; a read every active lantern. So the checker searches a
history as one piece and the lockstep reads back the whole project after every step. Beyond an exact match
of the stored documents nothing is checked here: INV-1..5 are properties of the model's documents
(`model.lantern.invariant_violations`), which an exact match carries over; the stateful machine checks them
on what is stored, and the tests check them on the model.

An implementation is a `LanternSystem`: a module with the six operations and its own `LanternError`.
`resolve("")` is `reference.lantern`; `resolve("known_bad.lantern:<name>")` a known-bad copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import ModuleType
from typing import Any

import attrs

import reference.lantern
from fencecheck.checker.history_codec import datetime_from_json, datetime_to_json
from fencecheck.emulator.firestore_io import Stored, read_project, typed
from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin.records import (
    PROJECT,
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
from fencecheck.plugin.specs import implementation_module, import_module, module_of_spec
from model.lantern import (
    ERROR_CODES,
    TRANSITIONS,
    CreateVenue,
    DeleteVenue,
    Extinguish,
    FaultKind,
    InjectFault,
    LanternState,
    Light,
    ReadActive,
    ScheduledLight,
    describe_op,
    describe_state,
    documents,
    step,
)
from model.lantern.near_misses import near_misses

LANTERN_UNAVAILABLE = "lantern_unavailable"
COLLECTIONS = ("venues", "lanterns", "publicPins", "activeLanterns")
REFERENCE_SPEC = "reference.lantern"
VARIANT_PREFIX = "known_bad.lantern:"


@attrs.frozen
class LanternSystem:
    """A lantern implementation: `api` has the six operations and raises `error`, whose `.code` is the
    contract's error code (any exception with a contract `.code` counts too: `UndeclaredError` when `api` has
    no `LanternError`). `name` is how it is spelled (`reference.lantern`, `known_bad.lantern:<variant>`)."""

    name: str
    api: ModuleType
    error: type[Exception]

    @classmethod
    def of(cls, name: str, api: ModuleType) -> LanternSystem:
        return cls(name, api, getattr(api, "LanternError", UndeclaredError))  # a contract `.code` is enough


REFERENCE_LANTERN = LanternSystem.of(REFERENCE_SPEC, reference.lantern)


# The operation table: model operation -> (the function it calls, the op's fields that are its keyword arguments,
# beside db=, attempt_log= and clock=, which the venue operations are not handed: they never read the time).
CALLS: dict[type, tuple[str, tuple[str, ...]]] = {
    CreateVenue: ("create_venue", ("venue_id", "name", "latitude", "longitude", "radius_meters")),
    DeleteVenue: ("delete_venue", ("venue_id",)),
    Light: ("light_lantern", ("user_id", "lantern_id", "venue_id", "latitude", "longitude")),
    ScheduledLight: ("activate_scheduled_lantern", ("user_id", "lantern_id", "venue_id", "scheduled_for")),
    Extinguish: ("extinguish_lantern", ("user_id", "lantern_id")),
    ReadActive: ("read_active_lanterns", ()),
}
CLOCKLESS = ("create_venue", "delete_venue")
# What a user's module (`lantern:<module>`) must have: every function of the table.
FUNCTIONS = tuple(function for function, _fields in CALLS.values())


def resolve(spec: str | None) -> LanternSystem:
    """`reference.lantern` (or nothing), `known_bad.lantern:<variant>`, or `lantern:<module>`: a module of the
    user's with `FUNCTIONS` (and `LanternError` if it declares its error type), named by the whole spec."""
    spec = (spec or "").strip()
    if spec in ("", REFERENCE_SPEC, f"lantern:{REFERENCE_SPEC}"):
        return REFERENCE_LANTERN
    if module_of_spec("lantern", spec) is not None and not spec.startswith(f"lantern:{VARIANT_PREFIX}"):
        return LanternSystem.of(spec, implementation_module("lantern", spec, FUNCTIONS))
    spec = spec.removeprefix("lantern:")
    if not spec.startswith(VARIANT_PREFIX):
        raise SystemNotFoundError(f"lantern system {spec!r}: expected {REFERENCE_SPEC}, {VARIANT_PREFIX}<variant> "
                                  "or lantern:<module>.")
    from known_bad.lantern import variant  # the catalogue is test material: loaded only when named

    try:
        found = variant(spec[len(VARIANT_PREFIX):])
    except KeyError as error:
        raise SystemNotFoundError(f"lantern system {spec!r}: {error.args[0]}") from None
    return LanternSystem.of(found.system_spec, found.build())


def known_bad_variants() -> dict[str, str]:
    """The catalogue's variants (known_bad/lantern/), each by its spec."""
    catalogue = import_module("known_bad.lantern", "the lantern's known-bad catalogue")
    return {v.name: v.system_spec for v in catalogue.VARIANTS}


def call_arguments(op: Any) -> tuple[str, dict[str, Any]]:
    """(function name, keyword arguments) of a call (`Implementations.operation`): the op's fields of `CALLS`."""
    if type(op) not in CALLS:
        raise TypeError(f"not a lantern call: {type(op).__name__}")
    function, fields = CALLS[type(op)]
    return function, {field: getattr(op, field) for field in fields}


def _error_code(impl: LanternSystem, error: BaseException) -> str | None:
    """As the journal's: the declared error's code, else any exception's `.code` that is a contract code."""
    if isinstance(error, impl.error):
        return error.code
    return contract_error_code(error, ERROR_CODES)


def write_project(db: Any, _key: str, docs: Mapping[str, Mapping[str, Any]], *,
                  current: Mapping[str, Stored] | None = None) -> None:
    """Make the project hold exactly `docs` (one batch): a fault's damage, or the documents a test starts from."""
    current = read_project(db) if current is None else current
    batch = db.batch()
    for path in current.keys() - docs.keys():
        batch.delete(db.document(path))
    for path, doc in docs.items():
        if path not in current or typed(current[path].data) != typed(doc):
            batch.set(db.document(path), dict(doc))
    batch.commit()


def _partition_of_path(path: str) -> str | None:
    parts = path.split("/")
    return PROJECT if len(parts) == 2 and parts[0] in COLLECTIONS else None


# --- operations as JSON ---------------------------------------------------------------------------------------

_OPS: dict[str, tuple[type, tuple[str, ...]]] = {
    "create_venue": (CreateVenue, ("venue_id", "name", "latitude", "longitude", "radius_meters")),
    "delete_venue": (DeleteVenue, ("venue_id",)),
    "light": (Light, ("user_id", "lantern_id", "venue_id", "latitude", "longitude", "now")),
    "scheduled_light": (ScheduledLight, ("user_id", "lantern_id", "venue_id", "scheduled_for", "now")),
    "extinguish": (Extinguish, ("user_id", "lantern_id", "now")),
    "read_active": (ReadActive, ("now",)),
    "fault": (InjectFault, ("kind", "subject", "now")),
}
_TYPE_NAMES = {cls: name for name, (cls, _fields) in _OPS.items()}
_TIMES = ("now", "scheduled_for")
_LOSSY = (Light, ScheduledLight, Extinguish)  # the operations a lost-response step can carry


def op_to_json(op: Any) -> dict[str, Any]:
    name = _TYPE_NAMES.get(type(op))
    if name is None:
        raise TypeError(f"not a lantern operation: {type(op).__name__}")
    out: dict[str, Any] = {"type": name}
    for field in _OPS[name][1]:
        value = getattr(op, field)
        if field in _TIMES and value is not None:
            value = datetime_to_json(value)
        elif isinstance(value, FaultKind):
            value = value.value
        out[field] = value
    if getattr(op, "response_lost", False):
        out["responseLost"] = True  # only when set: older histories stay identical
    return out


def op_from_json(data: object) -> Any:
    if not isinstance(data, dict) or data.get("type") not in _OPS:
        raise ValueError(f"a lantern operation is an object whose type is one of {sorted(_OPS)}")
    cls, fields = _OPS[data["type"]]
    lost = data.get("responseLost", False)
    if ("responseLost" in data and lost is not True) or (lost and cls not in _LOSSY):
        raise ValueError("responseLost is true or left out, on a light or an extinguish only")
    if sorted(set(data) - {"responseLost"}) != sorted(("type", *fields)):
        raise ValueError(f"a {data['type']} operation has exactly the keys {['type', *fields]} (and responseLost)")
    values: dict[str, Any] = {"response_lost": True} if lost else {}
    for field in fields:
        value = data[field]
        if field in _TIMES and value is not None:
            value = datetime_from_json(value)
        elif field == "kind":
            value = FaultKind(value)
        values[field] = value
    return cls(**values)


def ops_to_json(ops: Sequence[Any]) -> tuple[dict[str, Any], list[Any]]:
    return {}, [op_to_json(op) for op in ops]


def ops_from_json(_header: Mapping[str, Any], raw: Sequence[Any]) -> list[Any]:
    return [op_from_json(item) for item in raw]


def _clock_of(op: Any) -> datetime | None:
    return op.now if isinstance(op, Light | ScheduledLight | Extinguish | ReadActive) else None


def _parallel_spec() -> Any:
    from fencecheck.systems.lantern.parallel import (
        SPEC,  # Hypothesis and the parallel engine load only for parallel programs
    )

    return SPEC


LANTERN = SystemPlugin(
    name="lantern",
    model=Model(
        initial_state=LanternState.empty,
        step=step,
        transitions=TRANSITIONS,
        documents=lambda state, _key: documents(state),
        describe_op=describe_op,
        describe_state=describe_state,
        near_misses=near_misses,
        answer_matches=exact_answer_matches,  # exact types (True is not 1) and key order, nested too
        # An error answer leaves every state unchanged; a success writes, or is the retry of a light whose lantern
        # exists (lanterns are never deleted, so it stays a retry); tests/systems/lantern/test_lantern_model.py
        # checks both.
        # Not a read of the active lanterns: one that retires nothing now can retire, with the same answer, a
        # lantern lit earlier in time by a call placed before it.
        commutes_when_read_only=lambda op: not isinstance(op, ReadActive),
    ),
    # the whole project is one partition (the default); a path outside its collections is a stray write
    partitions=Partitions(partition_of_path=_partition_of_path),
    implementations=Implementations(
        resolve=resolve,
        unavailable_code=LANTERN_UNAVAILABLE,
        operation=call_arguments,
        functions=FUNCTIONS,
        clockless=CLOCKLESS,
        write_partition=write_project,
        clock_of=_clock_of,
        error_code=_error_code,
        describe_impl=lambda impl: (("the lantern reference" if impl is REFERENCE_LANTERN else impl.name)
                                    if isinstance(impl, LanternSystem) else None),
        is_fault=lambda op: isinstance(op, InjectFault),
        response_lost=lambda op: bool(getattr(op, "response_lost", False)),
    ),
    codec=Codec(
        ops_to_json=ops_to_json,
        ops_from_json=ops_from_json,
    ),
    known_bad_variants=known_bad_variants,
    parallel=_parallel_spec,
    suites=SuiteParts(
        machine="tests.systems.lantern.machine:TestLanternMachine",
        machine_known_bad="tests.systems.lantern.machine:KNOWN_BAD",
        races="tests.systems.lantern.races",
        catalogue="known_bad.lantern",
        # Not finding_3_venue_in_read_set: what it breaks is B1's promise that lights at one venue never abort, a
        # cost the checker does not judge (every history it makes is linearizable); the race suite's 24-way
        # contest catches it.
        parallel_variants=lambda: ("finding_5_read_then_write_extinguish", "rejected_a3_auto_extinguish_batch"),
    ),
    mutation=MutationTargets(package="reference.lantern", decisions=("decide.py",), others=("runner.py",),
                             equivalents="fencecheck.systems.lantern:equivalent_mutants.toml"),
)
