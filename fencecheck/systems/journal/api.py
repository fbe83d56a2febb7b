"""The journal's operation table (`call_arguments`, the one place a journal operation becomes a call) and its
four functions as one implementation under test (`ReferenceAPI`): the reference's, a known-bad variant's, any
importable module's, or an implementation in another process (`fencecheck.systems.journal.exec`, whose
requests are derived from the same table).

Its own module, below both the journal's plug-in (fencecheck/systems/journal/plugin.py, which resolves a spec to
one) and `exec` (which builds one over the process protocol), so each imports it and neither imports
the other's (tests/unit/test_core_imports_no_system.py: no import cycles). `fencecheck.systems.journal.plugin`
still exports it: counterexample files and the suites import it from there.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import attrs

from fencecheck.plugin.records import UndeclaredError
from model.journal import Acquire, Complete, Fail, Register

# The operation table's functions, as the seeds name them: model operation -> its function. The process protocol
# (`exec`) sends each name camelCased, as the seeds' JavaScript spells it.
FUNCTIONS: dict[type, str] = {
    Register: "register_commerce_command",
    Acquire: "acquire_commerce_command_lease",
    Complete: "complete_commerce_command",
    Fail: "fail_commerce_command",
}


def call_arguments(op: Any) -> tuple[str, dict[str, Any]]:
    """The journal's operation table (`Implementations.operation`): (function name, keyword arguments beyond db,
    clock and attempt_log): the command's inputs, then the op's own fields in the seeds' order."""
    function = FUNCTIONS.get(type(op))
    if function is None:
        raise TypeError(f"not a journal call: {type(op).__name__}")
    kwargs = op.command.kwargs()
    if not isinstance(op, Register):
        kwargs["lease_id"] = op.lease_id
    if isinstance(op, Complete | Fail):
        kwargs["expected_fence_epoch"] = op.expected_fence_epoch
    if isinstance(op, Complete):
        kwargs["terminal_reference_fingerprint"] = op.terminal_reference_fingerprint
    return function, kwargs


@attrs.frozen
class ReferenceAPI:
    """The four journal functions (keyword-only, `db=` and `clock=`) and the error type carrying `.code`
    (`UndeclaredError` for a module without `CommandJournalError`: any exception whose `.code` is one of
    the contract's codes is its contract error)."""

    register: Callable[..., Any]
    acquire: Callable[..., Any]
    complete: Callable[..., Any]
    fail: Callable[..., Any]
    error_type: type[BaseException]
    module: str | None = None  # importable name, so a counterexample can name the same system

    @classmethod
    def from_functions(cls, functions: Callable[[str], Callable[..., Any]], error_type: type[BaseException],
                       module: str | None) -> ReferenceAPI:
        """The journal whose function of each table name (`FUNCTIONS`) is `functions(name)`."""
        return cls(**{_FIELDS[name]: functions(name) for name in FUNCTIONS.values()}, error_type=error_type,
                   module=module)

    @classmethod
    def from_module(cls, module: str | ModuleType) -> ReferenceAPI:
        mod = importlib.import_module(module) if isinstance(module, str) else module
        error_type = getattr(mod, "CommandJournalError", UndeclaredError)  # an error with a contract `.code` is enough
        return cls.from_functions(lambda name: getattr(mod, name), error_type, mod.__name__)

    def function(self, name: str) -> Callable[..., Any]:
        """The function of the operation table's `name` (`Implementations.function`)."""
        return getattr(self, _FIELDS[name])


_FIELDS = dict(zip(FUNCTIONS.values(), ("register", "acquire", "complete", "fail"), strict=True))
