"""Concurrent call histories of a system under test, recorded for the linearizability checker. The system is
named by its plug-in (`History.system`, `fencecheck.plugin.registry`), which encodes its operations and says which
answers are indefinite.

A `Call` is one operation as a caller saw it: who called, the model operation (carrying the clock
reading the call used), when it was invoked and when it completed (monotonic nanoseconds from the recorder's
clock, only used to order calls in real time), and its outcome:

- `Definite(observed)`: the output's JSON dict, or an error code that proves nothing was applied;
- `Indefinite(reason)`: the system's unavailable code (`journal_unavailable`, `lantern_unavailable`), a
  transport error, or no answer at all. The call may or may
  not have taken effect, at any time after its invocation (a commit abandoned by the client can still land).

A call may carry the wire proxy's faults that hit it (`WireFault`: kind, method, whether the request was
forwarded to the emulator and whether the client still learned the true outcome), so an explanation names
them and the definite share excuses only the calls whose answer a fault may have lost (`WireFault.lost_answer`).

A `History` is the calls plus, optionally, the documents stored at the end, per partition (the system's own
partitions: the journal's are its command key hashes). It has a JSON form (`to_json` / `from_json`) so histories
can be checked in as fixtures or saved as counterexamples.

`Recorder` builds a history from real calls made by many threads.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from fencecheck.checker.history_codec import documents_from_json, documents_to_json
from fencecheck.plugin.records import SystemPlugin, impl_output_json
from fencecheck.plugin.registry import UNNAMED_SYSTEM
from fencecheck.plugin.registry import plugin as plugin_named

HISTORY_FORMAT = "fencecheck.history/1"
NO_RETURN = "no_return"

Operation = Any  # an operation of the history's system, as its plug-in's model defines it
Observed = dict[str, Any] | str
Documents = dict[str, dict[str, Any]]
T = TypeVar("T")


def _frozen_observed(value: Observed) -> Observed:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return copy.deepcopy(value)
    raise TypeError("an observed answer is an output JSON dict or an error code string")


@attrs.frozen
class Definite:
    """The call answered: `observed` is the output's JSON dict, or a definite error code string."""

    # Dicts are not hashable: equality compares `observed`, the hash leaves it out (still consistent).
    observed: Observed = attrs.field(converter=_frozen_observed, hash=False)

    definite = True

    @property
    def is_error(self) -> bool:
        return isinstance(self.observed, str)


@attrs.frozen
class Indefinite:
    """The call may or may not have applied: the system's unavailable code, a transport error or no answer."""

    reason: str

    definite = False


Outcome = Definite | Indefinite


def _check_ns(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"{attribute.name} must be an int (monotonic nanoseconds) or None")


def _is_word(value: object) -> bool:
    # A label is "kind method" split at its one space: neither part may be empty or hold whitespace.
    return isinstance(value, str) and bool(value) and value.split() == [value]


def _check_word(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not _is_word(value):
        raise TypeError(f"a wire fault's {attribute.name} must be a non-empty string without whitespace, "
                        f"got {value!r}")


def _check_known_bool(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"a wire fault's {attribute.name} must be true, false or None (unknown), got {value!r}")


@attrs.frozen
class WireFault:
    """One fault the wire proxy applied to a call, as the history keeps it: the wire layer converts its
    `fencecheck.wire.faults.FaultEvent` (`fencecheck.wire.lanes.wire_fault`), so the history imports no wire.

    `kind` and `method` as the proxy names them ("fail-response", "Commit"); `forwarded`: the request reached
    the emulator; `definite`: the client still learns the true outcome (refused before the emulator, or merely
    delayed). Both are None for a fault read from an older history file, which kept only its label."""

    kind: str = attrs.field(validator=_check_word)
    method: str = attrs.field(validator=_check_word)
    forwarded: bool | None = attrs.field(validator=_check_known_bool)
    definite: bool | None = attrs.field(validator=_check_known_bool)

    def __attrs_post_init__(self) -> None:
        if (self.forwarded is None) != (self.definite is None):
            raise ValueError(f"{self.label}: forwarded and definite are both known or both unknown (an older "
                             "file's label)")

    @classmethod
    def from_label(cls, label: str) -> WireFault:
        """A fault an older file named by its label alone ("fail-response Commit"): what it did is unknown."""
        kind, _space, method = label.partition(" ")
        return cls(kind, method, None, None)

    @property
    def label(self) -> str:
        """Kind and method, e.g. "fail-response Commit" (the proxy's `FaultEvent.label`)."""
        return f"{self.kind} {self.method}"

    @property
    def known(self) -> bool:
        """Whether the fault says what it did (false only for an older file's label)."""
        return self.forwarded is not None

    @property
    def lost_answer(self) -> bool:
        """The fault may have lost the answer of a call that reached the emulator (fail-response,
        drop-response, cut-stream): the call may have applied without its caller learning how. A refused
        (reject) or delayed call loses nothing. An older file's label alone does not say, so it is not taken
        to have lost one: its call is not excused from the definite share (conservative)."""
        return self.forwarded is True and self.definite is False


@attrs.frozen
class Call:
    """One call of the history's system. `completed_at` is None for a call that never returned (then it is indefinite).
    `wire_faults`: the wire proxy's faults that hit it (`WireFault`), so an explanation says which calls were
    indefinite because of the wire and the definite share excuses those whose answer a fault lost."""

    id: int
    caller: str
    op: Operation
    invoked_at: int = attrs.field(validator=_check_ns)
    completed_at: int | None = attrs.field(validator=_check_ns)
    outcome: Outcome
    wire_faults: tuple[WireFault, ...] = attrs.field(
        default=(), converter=tuple, validator=attrs.validators.deep_iterable(attrs.validators.instance_of(WireFault))
    )

    @property
    def lost_answer_to_wire(self) -> bool:
        """Some wire fault of this call may have lost its answer (`WireFault.lost_answer`)."""
        return any(fault.lost_answer for fault in self.wire_faults)

    def __attrs_post_init__(self) -> None:
        if self.invoked_at is None:
            raise TypeError("invoked_at is required")
        if self.completed_at is not None and self.completed_at < self.invoked_at:
            raise ValueError(f"call {self.id} completes before it is invoked")
        if self.outcome.definite and self.completed_at is None:
            raise ValueError(f"call {self.id} has a definite outcome but no completion time")



@attrs.frozen
class History:
    """Calls (any order; ids unique) and, optionally, the stored documents at the end by command key hash.

    `final_documents[h]` must hold every stored document of key `h` ({} for none); keys left out are not
    checked.
    """

    calls: tuple[Call, ...] = attrs.field(converter=tuple)
    final_documents: Mapping[str, Documents] | None = attrs.field(default=None, eq=True, hash=False)
    # The plug-in's name: always given, since the core defaults to no system (a file that names none is read
    # as `fencecheck.plugin.registry.UNNAMED_SYSTEM`'s, `from_json`).
    system: str = attrs.field(kw_only=True)

    def __attrs_post_init__(self) -> None:
        ids = [call.id for call in self.calls]
        if len(set(ids)) != len(ids):
            raise ValueError("call ids must be unique")

    def by_id(self, call_id: int) -> Call:
        for call in self.calls:
            if call.id == call_id:
                return call
        raise KeyError(call_id)

    def with_final_documents(self, final_documents: Mapping[str, Documents] | None) -> History:
        return History(self.calls, final_documents, system=self.system)

    @property
    def plugin(self) -> SystemPlugin:
        return plugin_named(self.system)

    # --- JSON ---------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        # The plug-in writes its operations (and a header, e.g. the journal's commands table) in invocation order.
        ordered = sorted(self.calls, key=lambda c: (c.invoked_at, c.id))
        header, entries = self.plugin.ops_to_json([call.op for call in ordered])
        op_json = {call.id: entry for call, entry in zip(ordered, entries, strict=True)}
        out: dict[str, Any] = {"format": HISTORY_FORMAT}
        if self.system != UNNAMED_SYSTEM:  # the format as it was: a file that names no system is the journal's
            out["system"] = self.system
        out.update(header)
        out["calls"] = [_call_to_json(call, op_json[call.id]) for call in self.calls]
        if self.final_documents is not None:
            out["finalDocuments"] = {h: documents_to_json(docs) for h, docs in sorted(self.final_documents.items())}
        return out

    @classmethod
    def from_json(cls, data: object) -> History:
        if not isinstance(data, dict) or data.get("format") != HISTORY_FORMAT:
            raise ValueError(f"not a history: expected format {HISTORY_FORMAT!r}")
        system = data.get("system", UNNAMED_SYSTEM)  # written before histories named their system
        if not isinstance(system, str):
            raise ValueError("system must be a string")
        plugin = plugin_named(system)
        extra = sorted(set(data) - {"format", "system", "calls", "finalDocuments", *plugin.history_header_keys})
        if extra:
            raise ValueError(f"history: unknown keys {extra}")
        raw_calls = data.get("calls")
        if not isinstance(raw_calls, list):
            raise ValueError("calls must be a JSON array")
        for raw in raw_calls:
            if not isinstance(raw, dict) or "op" not in raw:
                raise ValueError("a call must be a JSON object with an op")
        ops = plugin.ops_from_json(data, [raw["op"] for raw in raw_calls])
        calls = tuple(_call_from_json(raw, op) for raw, op in zip(raw_calls, ops, strict=True))
        final = data.get("finalDocuments")
        if final is not None:
            if not isinstance(final, dict):
                raise ValueError("finalDocuments must be a JSON object")
            final = {h: documents_from_json(docs) for h, docs in final.items()}
        return cls(calls, final, system=system)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, ensure_ascii=False)

    @classmethod
    def loads(cls, text: str) -> History:
        return cls.from_json(json.loads(text))


def _call_to_json(call: Call, op_json: Any) -> dict[str, Any]:
    outcome = call.outcome
    return {
        "id": call.id,
        "caller": call.caller,
        "invokedAt": call.invoked_at,
        "completedAt": call.completed_at,
        "op": op_json,
        "outcome": {"definite": outcome.observed} if outcome.definite else {"indefinite": outcome.reason},
    } | ({"wireFaults": [_wire_fault_to_json(f) for f in call.wire_faults]} if call.wire_faults else {})
    # wireFaults absent when none: a history without faults reads as it always did


WIRE_FAULT_KEYS = ("kind", "method", "forwarded", "definite")


def _wire_fault_to_json(fault: WireFault) -> dict[str, Any] | str:
    # An older file's label-only fault is written back as its label, so reading and writing it changes nothing.
    if not fault.known:
        return fault.label
    return {"kind": fault.kind, "method": fault.method, "forwarded": fault.forwarded, "definite": fault.definite}


def _wire_fault_from_json(data: object, where: str) -> WireFault:
    """A wireFaults entry: an object with exactly `WIRE_FAULT_KEYS` (kind and method non-empty strings,
    forwarded and definite true or false), or, from files written before the object form, the label
    "kind Method" alone: then whether it lost an answer is unknown and it is not taken to have."""
    if isinstance(data, str):
        kind, space, method = data.partition(" ")
        if not space or not _is_word(kind) or not _is_word(method):
            raise ValueError(f'{where}: a wire fault label must be "<kind> <Method>", got {data!r}')
        return WireFault.from_label(data)
    if not isinstance(data, dict) or sorted(data) != sorted(WIRE_FAULT_KEYS):
        raise ValueError(f"{where}: a wire fault must be a JSON object with exactly the keys {list(WIRE_FAULT_KEYS)} "
                         f"(or an older file's \"<kind> <Method>\" label), got {data!r}")
    for key in ("kind", "method"):
        if not _is_word(data[key]):
            raise ValueError(f"{where}: a wire fault's {key} must be a non-empty string without whitespace, got "
                             f"{data[key]!r}")
    for key in ("forwarded", "definite"):
        if not isinstance(data[key], bool):  # exactly a JSON boolean: 1 and "true" are not
            raise ValueError(f"{where}: a wire fault's {key} must be true or false, got {data[key]!r}")
    return WireFault(data["kind"], data["method"], data["forwarded"], data["definite"])


def _call_from_json(data: object, op: Any) -> Call:
    keys = ("id", "caller", "invokedAt", "completedAt", "op", "outcome")
    if not isinstance(data, dict) or sorted(set(data) - {"wireFaults"}) != sorted(keys):
        raise ValueError(f"a call must be a JSON object with exactly the keys {list(keys)} (and optionally wireFaults)")
    raw_faults = data.get("wireFaults", [])
    if not isinstance(raw_faults, list) or ("wireFaults" in data and not raw_faults):
        raise ValueError(f"call {data.get('id')!r}: wireFaults must be a non-empty JSON array of wire faults (left "
                         f"out when there are none), got {raw_faults!r}")
    wire_faults = tuple(_wire_fault_from_json(item, f"call {data.get('id')!r} wireFaults[{index}]")
                        for index, item in enumerate(raw_faults))
    raw = data["outcome"]
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ValueError('outcome must be {"definite": answer} or {"indefinite": reason}')
    if "definite" in raw:
        if not isinstance(raw["definite"], dict | str):
            raise ValueError("a definite answer is an output object or an error code string")
        outcome: Outcome = Definite(raw["definite"])
    elif "indefinite" in raw and isinstance(raw["indefinite"], str):
        outcome = Indefinite(raw["indefinite"])
    else:
        raise ValueError('outcome must be {"definite": answer} or {"indefinite": reason}')
    if not isinstance(data["id"], int) or not isinstance(data["caller"], str):
        raise ValueError("call id must be an int and caller a string")
    return Call(
        data["id"],
        data["caller"],
        op,
        data["invokedAt"],
        data["completedAt"],
        outcome,
        wire_faults,
    )


# --- recording -------------------------------------------------------------------------------------


def classifier(plugin: SystemPlugin, impl: Any) -> Callable[[BaseException], Outcome]:
    """How a raised exception of `impl` reads: its unavailable code and anything that is not its contract
    error are indefinite; other codes definite."""

    def classify(exc: BaseException) -> Outcome:
        code = plugin.error_code(impl, exc)
        if code is None:
            return Indefinite(f"transport:{type(exc).__name__}")
        return Indefinite(code) if code == plugin.unavailable_code else Definite(code)

    return classify


observed_of = impl_output_json  # the JSON form of a returned output (anything with `to_json()`, or a dict)


class Recorder:
    """Records a system's calls made from any number of threads.

    `call(caller, op, fn)` reads the monotonic clock, runs `fn()` (the real call, which should use
    `op.now` as its clock reading), reads the clock again and records the outcome; it returns what `fn`
    returned or re-raises what it raised. Ids follow invocation order.
    """

    def __init__(
        self,
        clock: Callable[[], int] = time.monotonic_ns,
        *,
        classify: Callable[[BaseException], Outcome],  # the system's: `classifier(plugin, implementation)`
        system: str,  # the plug-in's name, written into the history
    ) -> None:
        self._clock = clock
        self._classify = classify
        self.system = system
        self._lock = threading.Lock()
        self._next_id = 0
        self._done: list[Call] = []
        self._pending: dict[int, tuple[str, Operation, int]] = {}

    def call(self, caller: str, op: Operation, fn: Callable[[], T], *,
             wire_faults: Callable[[], Sequence[WireFault]] | None = None) -> T:
        """`wire_faults()`, asked once the call has ended, gives the wire proxy's faults that hit it
        (`fencecheck.wire.lanes.WireLanes.call`)."""
        with self._lock:
            call_id = self._next_id
            self._next_id += 1
            invoked_at = self._clock()
            self._pending[call_id] = (caller, op, invoked_at)
        try:
            value = fn()
        except BaseException as exc:
            completed_at = self._clock()
            outcome = self._classify(exc) if isinstance(exc, Exception) else Indefinite("interrupted")
            self._finish(call_id, completed_at, outcome, wire_faults)
            raise
        completed_at = self._clock()
        try:
            outcome = Definite(observed_of(value))
        except TypeError:
            self._finish(call_id, completed_at, Indefinite("unrecognized_return"), wire_faults)
            raise
        self._finish(call_id, completed_at, outcome, wire_faults)
        return value

    def _finish(self, call_id: int, completed_at: int, outcome: Outcome,
                wire_faults: Callable[[], Sequence[WireFault]] | None = None) -> None:
        faults = tuple(wire_faults()) if wire_faults is not None else ()
        with self._lock:
            caller, op, invoked_at = self._pending.pop(call_id)
            self._done.append(Call(call_id, caller, op, invoked_at, completed_at, outcome, faults))

    def calls(self) -> tuple[Call, ...]:
        """Completed calls, then calls still running as indefinite ones that never returned; by id."""
        with self._lock:
            pending = [
                Call(call_id, caller, op, invoked_at, None, Indefinite(NO_RETURN))
                for call_id, (caller, op, invoked_at) in self._pending.items()
            ]
            return tuple(sorted([*self._done, *pending], key=lambda c: c.id))

    def history(self, final_documents: Mapping[str, Documents] | None = None) -> History:
        return History(self.calls(), None if final_documents is None else dict(final_documents), system=self.system)


# --- histories from the model itself ---------------------------------------------------------------


@attrs.frozen
class Planned:
    """A call to simulate: it takes effect at instant `at` (`invoked_at <= at`, and `at <= completed_at`
    when it completes). `lost` makes its answer indefinite with that reason; `applies=False` (for a lost
    answer only) makes it take no effect at all."""

    caller: str
    op: Operation
    invoked_at: int
    completed_at: int | None
    at: int
    lost: str | None = None
    applies: bool = True

    def __attrs_post_init__(self) -> None:
        if self.at < self.invoked_at or (self.completed_at is not None and self.at > self.completed_at):
            raise ValueError("the effect instant must lie within the call's interval")
        if self.completed_at is None and self.lost is None:
            raise ValueError("a call without completion must have a lost answer")
        if not self.applies and self.lost is None:
            raise ValueError("only a call with a lost answer may not apply")


def simulate(
    planned: list[Planned] | tuple[Planned, ...],
    *,
    plugin: SystemPlugin,
    step: Callable[[Any, Any], tuple[Any, Any]] | None = None,
    initial_state: Any = None,
    documents_of: Callable[[Any], dict[str, dict[str, Any]]] | None = None,
) -> tuple[History, Any]:
    """Run planned calls through the model in order of their effect instants (ties by list position) and
    record what each caller would have seen: a history that is linearizable by construction. A model answer
    that is the system's unavailable code is recorded as indefinite, as `Recorder` would. The history carries
    the final documents of every partition touched (`documents_of(state)`, when given, is filtered by path).
    Returns (history, final model state)."""
    step = plugin.step if step is None else step
    state = plugin.initial_state() if initial_state is None else initial_state
    outcomes: dict[int, Outcome] = {}
    for index in sorted(range(len(planned)), key=lambda i: (planned[i].at, i)):
        plan = planned[index]
        if plan.applies:
            state, result = step(state, plan.op)
            answer: Observed = result.output if result.ok else result.code
        if plan.lost is not None:
            outcomes[index] = Indefinite(plan.lost)
        elif answer == plugin.unavailable_code:
            outcomes[index] = Indefinite(plugin.unavailable_code)
        else:
            outcomes[index] = Definite(answer)
    calls = tuple(Call(i, p.caller, p.op, p.invoked_at, p.completed_at, outcomes[i]) for i, p in enumerate(planned))
    keys = sorted({plugin.partition_of(p.op) for p in planned})
    if documents_of is None:
        final = {h: plugin.documents_of(state, h) for h in keys}
    else:
        every = documents_of(state)
        final = {h: {path: doc for path, doc in every.items() if plugin.partition_of_path(path) == h} for h in keys}
    return History(calls, final, system=plugin.name), state
