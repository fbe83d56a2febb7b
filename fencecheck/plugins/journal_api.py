"""The journal's four functions as one implementation under test (`ReferenceAPI`): the reference's, a
known-bad variant's, any importable module's, or an implementation in another process
(`fencecheck.plugins.journal_exec`).

Its own module, below both the journal's plug-in (fencecheck/plugins/journal.py, which resolves a spec to
one) and journal_exec (which builds one over the process protocol), so each imports it and neither imports
the other's (tests/unit/test_core_imports_no_system.py: no import cycles). `fencecheck.plugins.journal`
still exports it: counterexample files and the suites import it from there.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from datetime import datetime
from types import ModuleType
from typing import Any

import attrs

from fencecheck.plugin import UndeclaredError
from model.journal import Acquire, Complete, Fail, Operation, Register


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
    def from_module(cls, module: str | ModuleType) -> ReferenceAPI:
        mod = importlib.import_module(module) if isinstance(module, str) else module
        return cls(
            mod.register_commerce_command,
            mod.acquire_commerce_command_lease,
            mod.complete_commerce_command,
            mod.fail_commerce_command,
            getattr(mod, "CommandJournalError", UndeclaredError),  # an error with a contract `.code` is enough
            mod.__name__,
        )

    def call(self, db: Any, op: Operation, clock: Callable[[], datetime], log: Any = None) -> Any:
        """Make the journal call `op` stands for (its command's kwargs plus the op's own fields) on `db`,
        with `clock`; `log` (an AttemptLog) goes to systems whose functions accept `attempt_log`."""
        kwargs = op.command.kwargs()
        if isinstance(op, Register):
            function = self.register
        else:
            kwargs["lease_id"] = op.lease_id
            if isinstance(op, Acquire):
                function = self.acquire
            else:
                kwargs["expected_fence_epoch"] = op.expected_fence_epoch
                if isinstance(op, Complete):
                    kwargs["terminal_reference_fingerprint"] = op.terminal_reference_fingerprint
                    function = self.complete
                elif isinstance(op, Fail):
                    function = self.fail
                else:
                    raise TypeError(f"not a journal call: {type(op).__name__}")
        if log is not None and accepts_attempt_log(function):
            kwargs["attempt_log"] = log
        return function(db=db, clock=clock, **kwargs)


def accepts_attempt_log(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return "attempt_log" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
