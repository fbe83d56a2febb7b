"""A foreign journal implementation, for tests only: the reference's behaviour in another shape.

Its four functions return frozen `types.MappingProxyType` outputs (the lease expiry nested as one too)
instead of the reference's output classes, and raise `FrozenJournalError`, a class of its own that is no
subclass of the reference's and carries the contract's code as `.code`. The module has no
`CommandJournalError`, so the harness can tell its errors only by their code. Spelled
`tests.fakes.frozen_journal` wherever a system spec goes ($FENCECHECK_SYSTEM, `resolve_system`).

`SEEN` counts what it handed back, so a test can tell that both shapes were exercised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import reference

SEEN: Counter[str] = Counter()  # "output", "nested" (an output holding a nested mapping), "error:<code>"


class FrozenJournalError(Exception):
    """This implementation's own error: a message of its own, the contract's code as a read-only `.code`."""

    def __init__(self, code: str) -> None:
        super().__init__(f"frozen journal: {code}")
        self._code = code

    @property
    def code(self) -> str:
        return self._code


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    return value


def _wrap(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        try:
            output = function(**kwargs).to_json()
        except reference.CommandJournalError as error:
            SEEN[f"error:{error.code}"] += 1
            raise FrozenJournalError(error.code) from None
        SEEN["output"] += 1
        SEEN["nested"] += any(isinstance(item, Mapping) for item in output.values())
        return _frozen(output)

    call.__name__ = function.__name__
    return call


register_commerce_command = _wrap(reference.register_commerce_command)
acquire_commerce_command_lease = _wrap(reference.acquire_commerce_command_lease)
complete_commerce_command = _wrap(reference.complete_commerce_command)
fail_commerce_command = _wrap(reference.fail_commerce_command)
