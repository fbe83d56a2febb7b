"""Implementations that are never available, for tests: every call of every operation answers the system's
unavailable error and writes nothing (it never touches the client it is handed).

- `JOURNAL`: the four journal functions, each raising `CommandJournalError("journal_unavailable")`; spelled
  `tests.fakes.unavailable:journal` wherever a journal spec goes (the journal plug-in resolves `module:name`
  through this module's `system(name)`).
- `LANTERN`: a `LanternSystem` whose six operations raise `LanternError("lantern_unavailable")`.
- `GATEWAY`: a `GatewaySystem` whose ten operations raise `GatewayError("gateway_unavailable")`.

The lantern and gateway plug-ins resolve only their references and known-bad variants, so those two are handed
over as objects (`implementation=LANTERN`); their names are labels in output, not specs.

Each reads the trusted clock it is handed exactly as often as the harness requires of every implementation
(`fencecheck.runners.contest.call_problems`, `Lockstep.check_clock`): once per call, and never for a call that takes
no time (a gateway namespace not declared linearizable is refused before the clock, docs/gateway-contract.md;
the lantern's venue operations are handed no clock). So a contest judges it as it judges the reference: every
answer indefinite, nothing stored, nothing wrong, and too few definite callers to mean anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any, NoReturn

from fencecheck.systems.gateway.plugin import GatewaySystem
from fencecheck.systems.journal.plugin import ReferenceAPI
from fencecheck.systems.lantern.plugin import LanternSystem
from reference.gateway import OPERATIONS as GATEWAY_OPERATIONS
from reference.gateway import GatewayError
from reference.gateway.constants import LINEARIZABLE
from reference.journal import CommandJournalError
from reference.lantern import LanternError

__all__ = ["GATEWAY", "JOURNAL", "LANTERN", "system"]

JOURNAL_SPEC = "tests.fakes.unavailable:journal"
LANTERN_OPERATIONS = ("light_lantern", "activate_scheduled_lantern", "extinguish_lantern", "read_active_lanterns",
                      "create_venue", "delete_venue")


def _always_unavailable(
    error: Callable[[], Exception], *, reads_clock: Callable[[Mapping[str, Any]], bool] = lambda _arguments: True
) -> Callable[..., NoReturn]:
    """An operation that reads its clock once when `reads_clock(arguments)` (and it was handed one), then raises
    `error()`. `attempt_log` is accepted and left at zero: no transaction is ever attempted."""

    def operation(*, db: Any, clock: Callable[[], Any] | None = None, attempt_log: Any = None,
                  **arguments: Any) -> NoReturn:
        if clock is not None and reads_clock(arguments):
            clock()
        raise error()

    return operation


def _journal() -> ReferenceAPI:
    def unavailable() -> CommandJournalError:
        return CommandJournalError("journal_unavailable")

    register, acquire, complete, fail = (_always_unavailable(unavailable) for _ in range(4))
    return ReferenceAPI(register, acquire, complete, fail, CommandJournalError, JOURNAL_SPEC)


def _lantern() -> LanternSystem:
    operation = _always_unavailable(lambda: LanternError("lantern_unavailable"))
    api = SimpleNamespace(**dict.fromkeys(LANTERN_OPERATIONS, operation), LanternError=LanternError)
    return LanternSystem.of("tests.fakes.unavailable:LANTERN", api)


def _gateway() -> GatewaySystem:
    operation = _always_unavailable(lambda: GatewayError("gateway_unavailable"),
                                    reads_clock=lambda arguments: arguments.get("consistency") == LINEARIZABLE)
    api = SimpleNamespace(**dict.fromkeys(GATEWAY_OPERATIONS, operation), GatewayError=GatewayError)
    return GatewaySystem.of("tests.fakes.unavailable:GATEWAY", api)


JOURNAL = _journal()
LANTERN = _lantern()
GATEWAY = _gateway()


def system(name: str) -> ReferenceAPI:
    """The journal system `tests.fakes.unavailable:<name>` names: only `journal` (a spec without a plug-in
    prefix is the journal's, so the lantern and gateway fakes are not reachable by spec)."""
    if name != "journal":
        raise KeyError(f"no unavailable journal named {name!r}; known: journal (the lantern and gateway fakes "
                       "are the objects tests.fakes.unavailable.LANTERN and GATEWAY)")
    return JOURNAL
