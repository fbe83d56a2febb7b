"""The compare-and-set register as a fencecheck plug-in: `CAS_REGISTER`, a `fencecheck.plugin.SystemPlugin`.

Nothing in fencecheck/ names this module. It is registered for a run with
`--plugin examples.cas_register.plugin:CAS_REGISTER`, or for good by an entry point of the group
`fencecheck.systems` in the package's metadata (README.md here):

    [project.entry-points."fencecheck.systems"]
    cas_register = "examples.cas_register.plugin:CAS_REGISTER"

What each part is for: the model and the partitions are what the linearizability checker needs
(`fencecheck check`); the history codec (its operation classes by type name) what reading a saved history needs;
the implementation side (`resolve`, the operation table `call_arguments`, `read_set`) what the lockstep runner
and the contest runner need against the emulator.
"""

from __future__ import annotations

from collections.abc import Collection
from types import ModuleType
from typing import Any

import attrs

from examples.cas_register import implementation
from examples.cas_register.model import (
    TRANSITIONS,
    UNAVAILABLE,
    CasState,
    CompareAndSet,
    Read,
    Write,
    describe_op,
    describe_state,
    documents,
    step,
)
from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin import (
    Codec,
    Implementations,
    Model,
    Partitions,
    SuiteParts,
    SystemPlugin,
    contract_error_code,
    exact_answer_matches,
)
from fencecheck.plugin.specs import implementation_module, module_of_spec

NAME = "cas_register"
PREFIX = "casRegisters/"
# The operation table: model operation -> the function it calls; the op's attrs fields are its keyword arguments.
CALLS: dict[type, str] = {Read: "read_register", Write: "write_register", CompareAndSet: "compare_and_set"}
FUNCTIONS = tuple(CALLS.values())


@attrs.frozen
class CasSystem:
    """An implementation: a module with `FUNCTIONS`, named by its spec."""

    name: str
    api: ModuleType


REFERENCE = CasSystem(f"{NAME}:{implementation.__name__}", implementation)


def resolve(spec: str | None) -> CasSystem:
    """"" or the reference's spec: the reference; `cas_register:<module>`: a module with `FUNCTIONS`."""
    spec = (spec or "").strip()
    if spec in ("", REFERENCE.name):
        return REFERENCE
    if module_of_spec(NAME, spec) is None:
        raise SystemNotFoundError(f"{NAME} system {spec!r}: expected {NAME}:<module>, a module with "
                                  f"{', '.join(FUNCTIONS)}.")
    return CasSystem(spec, implementation_module(NAME, spec, FUNCTIONS))


def call_arguments(op: Any) -> tuple[str, dict[str, Any]]:
    """(function name, keyword arguments): the one place an operation becomes a call (in process, or a protocol)."""
    if type(op) not in CALLS:
        raise TypeError(f"not a {NAME} call: {type(op).__name__}")
    return CALLS[type(op)], attrs.asdict(op)


# --- partitions: one per key ----------------------------------------------------------------------------


def restrict(state: CasState, key: str) -> CasState:
    value = state.get(key)
    return CasState.empty() if value is None else CasState.empty().with_value(key, value)


def merge(whole: CasState, part: CasState, key: str) -> CasState:
    value = part.get(key)
    return whole if value is None else whole.with_value(key, value)


def partition_of_path(path: str) -> str | None:
    key = path.removeprefix(PREFIX)
    return key if path.startswith(PREFIX) and key and "/" not in key else None


def read_set(key: str, known: Collection[str]) -> list[str]:
    return sorted({*known, f"{PREFIX}{key}"})


def _known_bad_variants() -> dict[str, str]:
    from examples.cas_register.known_bad import specs  # the catalogue is test material, loaded when asked

    return specs()


def _parallel_spec() -> Any:
    from examples.cas_register.parallel import SPEC  # Hypothesis and the parallel engine load only for its suite

    return SPEC


# --- operations as JSON -----------------------------------------------------------------------------------

_OPS: dict[str, type] = {"read": Read, "write": Write, "cas": CompareAndSet}


CAS_REGISTER = SystemPlugin(
    name=NAME,
    model=Model(
        initial_state=CasState.empty,
        step=step,
        transitions=TRANSITIONS,
        documents=documents,
        describe_op=describe_op,
        describe_state=describe_state,
        answer_matches=exact_answer_matches,
        # A read never writes, and a compare-and-set that found another value wrote nothing: either leaves every
        # later state as it was wherever it matches.
        commutes_when_read_only=lambda op: isinstance(op, Read | CompareAndSet),
    ),
    partitions=Partitions(
        partition_of=lambda op: op.key,
        partition_noun="register",
        partitions_of_state=lambda state: state.keys(),
        partition_of_path=partition_of_path,
        restrict=restrict,
        merge=merge,
        partition_version=lambda state, key: state.get(key),
    ),
    implementations=Implementations(
        resolve=resolve,
        unavailable_code=UNAVAILABLE,
        operation=call_arguments,  # called as `impl.api.<name>(db=..., attempt_log=..., **arguments)`
        functions=FUNCTIONS,
        clockless=FUNCTIONS,  # each is handed no clock
        read_set=read_set,
        # The contract's one error answer is its unavailable code (implementation.CasUnavailable carries it).
        error_code=lambda _impl, error: contract_error_code(error, (UNAVAILABLE,)),
        describe_impl=lambda impl: (("the cas_register reference" if impl is REFERENCE else impl.name)
                                    if isinstance(impl, CasSystem) else None),
    ),
    codec=Codec(
        operations=_OPS,  # each operation as {"type": <its name here>, <its attrs fields>}
    ),
    parallel=_parallel_spec,
    known_bad_variants=_known_bad_variants,
    suites=SuiteParts(machine="examples.cas_register.machine:TestCasRegisterMachine",
                      races="examples.cas_register.races", catalogue="examples.cas_register.known_bad"),
)
