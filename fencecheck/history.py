"""Concurrent call histories of the command journal, recorded for the linearizability checker.

A `Call` is one journal operation as a caller saw it: who called, the model operation (carrying the clock
reading the call used), when it was invoked and when it completed (monotonic nanoseconds from the recorder's
clock, only used to order calls in real time), and its outcome:

- `Definite(observed)`: the output's JSON dict, or an error code that proves nothing was applied;
- `Indefinite(reason)`: `journal_unavailable`, a transport error, or no answer at all. The call may or may
  not have taken effect, at any time after its invocation (a commit abandoned by the client can still land).

A `History` is the calls plus, optionally, the documents stored at the end, per command key hash. It has a
JSON form (`to_json` / `from_json`) so histories can be checked in as fixtures or saved as counterexamples.

`Recorder` builds a history from real calls made by many threads.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from model.journal import Acquire, CommandRef, Complete, Fail, Register
from reference.journal.errors import CommandJournalError

from .history_codec import (
    command_from_json,
    command_to_json,
    documents_from_json,
    documents_to_json,
    op_from_json,
    op_to_json,
)

HISTORY_FORMAT = "fencecheck.history/1"
JOURNAL_UNAVAILABLE = "journal_unavailable"
NO_RETURN = "no_return"

JournalOp = Register | Acquire | Complete | Fail
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
    """The call may or may not have applied: `journal_unavailable`, a transport error or no answer."""

    reason: str

    definite = False


Outcome = Definite | Indefinite


def _check_ns(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"{attribute.name} must be an int (monotonic nanoseconds) or None")


@attrs.frozen
class Call:
    """One journal call. `completed_at` is None for a call that never returned (then it is indefinite)."""

    id: int
    caller: str
    op: JournalOp
    invoked_at: int = attrs.field(validator=_check_ns)
    completed_at: int | None = attrs.field(validator=_check_ns)
    outcome: Outcome

    def __attrs_post_init__(self) -> None:
        if self.invoked_at is None:
            raise TypeError("invoked_at is required")
        if self.completed_at is not None and self.completed_at < self.invoked_at:
            raise ValueError(f"call {self.id} completes before it is invoked")
        if self.outcome.definite and self.completed_at is None:
            raise ValueError(f"call {self.id} has a definite outcome but no completion time")

    @property
    def key_hash(self) -> str:
        return self.op.command.key_hash


@attrs.frozen
class History:
    """Calls (any order; ids unique) and, optionally, the stored documents at the end by command key hash.

    `final_documents[h]` must hold every stored document of key `h` ({} for none); keys left out are not
    checked.
    """

    calls: tuple[Call, ...] = attrs.field(converter=tuple)
    final_documents: Mapping[str, Documents] | None = attrs.field(default=None, eq=True, hash=False)

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
        return History(self.calls, final_documents)

    # --- JSON ---------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        names: dict[CommandRef, str] = {}
        for call in sorted(self.calls, key=lambda c: (c.invoked_at, c.id)):
            names.setdefault(call.op.command, f"c{len(names) + 1}")
        out: dict[str, Any] = {
            "format": HISTORY_FORMAT,
            "commands": {name: command_to_json(ref) for ref, name in names.items()},
            "calls": [_call_to_json(call, names) for call in self.calls],
        }
        if self.final_documents is not None:
            out["finalDocuments"] = {h: documents_to_json(docs) for h, docs in sorted(self.final_documents.items())}
        return out

    @classmethod
    def from_json(cls, data: object) -> History:
        if not isinstance(data, dict) or data.get("format") != HISTORY_FORMAT:
            raise ValueError(f"not a history: expected format {HISTORY_FORMAT!r}")
        extra = sorted(set(data) - {"format", "commands", "calls", "finalDocuments"})
        if extra:
            raise ValueError(f"history: unknown keys {extra}")
        raw_commands = data.get("commands", {})
        if not isinstance(raw_commands, dict):
            raise ValueError("commands must be a JSON object")
        commands = {name: command_from_json(raw) for name, raw in raw_commands.items()}
        raw_calls = data.get("calls")
        if not isinstance(raw_calls, list):
            raise ValueError("calls must be a JSON array")
        calls = tuple(_call_from_json(raw, commands) for raw in raw_calls)
        final = data.get("finalDocuments")
        if final is not None:
            if not isinstance(final, dict):
                raise ValueError("finalDocuments must be a JSON object")
            final = {h: documents_from_json(docs) for h, docs in final.items()}
        return cls(calls, final)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, ensure_ascii=False)

    @classmethod
    def loads(cls, text: str) -> History:
        return cls.from_json(json.loads(text))


def _call_to_json(call: Call, names: Mapping[CommandRef, str]) -> dict[str, Any]:
    outcome = call.outcome
    return {
        "id": call.id,
        "caller": call.caller,
        "invokedAt": call.invoked_at,
        "completedAt": call.completed_at,
        "op": op_to_json(call.op, command_names=names),
        "outcome": {"definite": outcome.observed} if outcome.definite else {"indefinite": outcome.reason},
    }


def _call_from_json(data: object, commands: Mapping[str, CommandRef]) -> Call:
    keys = ("id", "caller", "invokedAt", "completedAt", "op", "outcome")
    if not isinstance(data, dict) or sorted(data) != sorted(keys):
        raise ValueError(f"a call must be a JSON object with exactly the keys {list(keys)}")
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
        op_from_json(data["op"], commands=commands),
        data["invokedAt"],
        data["completedAt"],
        outcome,
    )


# --- recording -------------------------------------------------------------------------------------


def classify_exception(exc: BaseException) -> Outcome:
    """`journal_unavailable` and anything that is not a journal error are indefinite; other codes definite."""
    if isinstance(exc, CommandJournalError):
        if exc.code == JOURNAL_UNAVAILABLE:
            return Indefinite(JOURNAL_UNAVAILABLE)
        return Definite(exc.code)
    return Indefinite(f"transport:{type(exc).__name__}")


def observed_of(value: Any) -> dict[str, Any]:
    """The JSON form of a returned output (anything with `to_json()`, or a dict)."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        value = to_json()
    if not isinstance(value, dict):
        raise TypeError(f"a journal call returned {type(value).__name__}, not an output")
    return value


class Recorder:
    """Records journal calls made from any number of threads.

    `call(caller, op, fn)` reads the monotonic clock, runs `fn()` (the real call, which should use
    `op.now` as its clock reading), reads the clock again and records the outcome; it returns what `fn`
    returned or re-raises what it raised. Ids follow invocation order.
    """

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._next_id = 0
        self._done: list[Call] = []
        self._pending: dict[int, tuple[str, JournalOp, int]] = {}

    def call(self, caller: str, op: JournalOp, fn: Callable[[], T]) -> T:
        with self._lock:
            call_id = self._next_id
            self._next_id += 1
            invoked_at = self._clock()
            self._pending[call_id] = (caller, op, invoked_at)
        try:
            value = fn()
        except BaseException as exc:
            completed_at = self._clock()
            outcome = classify_exception(exc) if isinstance(exc, Exception) else Indefinite("interrupted")
            self._finish(call_id, completed_at, outcome)
            raise
        completed_at = self._clock()
        try:
            outcome = Definite(observed_of(value))
        except TypeError:
            self._finish(call_id, completed_at, Indefinite("unrecognized_return"))
            raise
        self._finish(call_id, completed_at, outcome)
        return value

    def _finish(self, call_id: int, completed_at: int, outcome: Outcome) -> None:
        with self._lock:
            caller, op, invoked_at = self._pending.pop(call_id)
            self._done.append(Call(call_id, caller, op, invoked_at, completed_at, outcome))

    def calls(self) -> tuple[Call, ...]:
        """Completed calls, then calls still running as indefinite ones that never returned; by id."""
        with self._lock:
            pending = [
                Call(call_id, caller, op, invoked_at, None, Indefinite(NO_RETURN))
                for call_id, (caller, op, invoked_at) in self._pending.items()
            ]
            return tuple(sorted([*self._done, *pending], key=lambda c: c.id))

    def history(self, final_documents: Mapping[str, Documents] | None = None) -> History:
        return History(self.calls(), None if final_documents is None else dict(final_documents))


# --- histories from the model itself ---------------------------------------------------------------


@attrs.frozen
class Planned:
    """A call to simulate: it takes effect at instant `at` (`invoked_at <= at`, and `at <= completed_at`
    when it completes). `lost` makes its answer indefinite with that reason; `applies=False` (for a lost
    answer only) makes it take no effect at all."""

    caller: str
    op: JournalOp
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
    step: Callable[[Any, Any], tuple[Any, Any]] | None = None,
    initial_state: Any = None,
    documents_of: Callable[[Any], dict[str, dict[str, Any]]] | None = None,
) -> tuple[History, Any]:
    """Run planned calls through the model in order of their effect instants (ties by list position) and
    record what each caller would have seen: a history that is linearizable by construction. A model answer
    `journal_unavailable` is recorded as indefinite, as `Recorder` would. The history carries the final
    documents of every key touched. Returns (history, final model state)."""
    from model.journal import JournalState, documents_for
    from model.journal import step as model_step

    step = model_step if step is None else step
    state = JournalState.empty() if initial_state is None else initial_state
    outcomes: dict[int, Outcome] = {}
    for index in sorted(range(len(planned)), key=lambda i: (planned[i].at, i)):
        plan = planned[index]
        if plan.applies:
            state, result = step(state, plan.op)
            answer: Observed = result.output if result.ok else result.code
        if plan.lost is not None:
            outcomes[index] = Indefinite(plan.lost)
        elif answer == JOURNAL_UNAVAILABLE:
            outcomes[index] = Indefinite(JOURNAL_UNAVAILABLE)
        else:
            outcomes[index] = Definite(answer)
    calls = tuple(Call(i, p.caller, p.op, p.invoked_at, p.completed_at, outcomes[i]) for i, p in enumerate(planned))
    keys = sorted({p.op.command.key_hash for p in planned})
    if documents_of is None:
        final = {h: documents_for(state, h) for h in keys}
    else:
        every = documents_of(state)
        final = {h: {path: doc for path, doc in every.items() if h in path} for h in keys}
    return History(calls, final), state
