"""The journal over the implementation process protocol: `journal:exec:<command line>` as a system spec.

`exec_journal(command_line)` is a `ReferenceAPI` like any Python journal, so the lockstep machine, the races,
the parallel programs, replay and the gate take it unchanged. Each of its four functions turns the journal's
operation table (`fencecheck.systems.journal.api.call_arguments`: the reference's function names and keyword
arguments) into the protocol's request (`docs/implementation-protocol.md`: the same names camelCased, as the
seeds spell them, and the trusted clock reading read once, as the reference reads it) and sends it to the
process that serves the client's emulator host and project (`fencecheck.protocol.process.ImplementationPool`).

An `error` answer is raised as `ExecContractError` carrying the contract's code: the plug-in judges it as it
judges the reference's `CommandJournalError`. Everything else that goes wrong (a crash, a hang, a malformed
answer, a protocol error) is an `ImplementationFailure` or `ProtocolErrorAnswer`: not the contract's error, so
every runner counts it as an error, never as a verdict.

Each call goes to the process for the emulator host and project of the client it is handed: a client
through a wire proxy (a lockstep's wire session, a race's or a parallel program's wire lane,
`fencecheck.wire.lanes`) gets a process pointed at that proxy, so every wire fault reaches the implementation.
A client that fails commits by wrapping the Python client (`fencecheck.emulator.firestore_io.CommitFailureClient`)
cannot reach another process's commits: such a call is refused with `ExecFaultUnsupported` (an error, never a
verdict); the suites never hand it one.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from fencecheck.checker.history_codec import datetime_to_json
from fencecheck.emulator.firestore_io import CommitFailureClient
from fencecheck.errors import FencecheckError, UsageError
from fencecheck.problems import ProblemKind
from fencecheck.protocol.process import VERSIONS, ImplementationPool, exec_command_of, parse_command
from fencecheck.systems.journal.api import ReferenceAPI

SPEC_PREFIX = "journal:exec:"
ACCEPTED_VERSIONS = VERSIONS  # version 1 was the journal's alone: the first Node journal speaks only it


class ExecContractError(FencecheckError):
    """The implementation answered the contract's error `code` (immutable, as every fencecheck error)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)

    @property
    def code(self) -> str:
        return self.args[0]


class ExecFaultUnsupported(FencecheckError, RuntimeError):
    """A fault the harness injects by wrapping the Python client, asked of an implementation in another process:
    the harness's mistake (`problem_kind` harness), not the implementation's."""

    problem_kind = ProblemKind.HARNESS


def is_exec_spec(spec: str | None) -> bool:
    """`journal:exec:<command>`, or `exec:<command>` (the journal is the default system)."""
    spec = (spec or "").strip()
    return exec_command_of(spec) is not None and spec.startswith((SPEC_PREFIX, "exec:"))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _target(db: Any) -> tuple[str, str]:
    """The emulator host and project the call's client talks to: the process must use the same."""
    if isinstance(db, CommitFailureClient):
        raise ExecFaultUnsupported(
            "a commit-failure call against an exec: implementation: the harness fails commits by wrapping the "
            "Python client, which another process never uses. Run this rule through the wire proxy."
        )
    host = getattr(db, "_emulator_host", None) or os.environ.get("FIRESTORE_EMULATOR_HOST")
    project = getattr(db, "project", None)
    if not host or not isinstance(project, str):
        raise UsageError("an exec: implementation needs a Firestore client bound to the emulator and a project")
    return host, project


@functools.cache
def pool_of(spec: str) -> ImplementationPool:
    """The processes of `spec`'s implementation: one pool per spec and interpreter, so every suite of a session
    shares them."""
    return ImplementationPool(parse_command(exec_command_of(spec) or ""), system="journal", accepted=ACCEPTED_VERSIONS)


@functools.cache
def exec_journal(spec: str) -> ReferenceAPI:
    """The journal implementation that `spec` (`journal:exec:<command>` or `exec:<command>`) starts."""
    command_line = exec_command_of(spec) or ""
    pool = pool_of(spec)

    def operation(function: str) -> Callable[..., Any]:
        """The table's `function` as a request: its name and its argument names camelCased (protocol v1)."""
        name = _camel(function)

        def call(*, db: Any, clock: Callable[[], datetime], **kwargs: Any) -> dict[str, Any]:
            kwargs.pop("attempt_log", None)  # another process's transaction attempts are not observable here
            host, project = _target(db)
            args = {_camel(key): value for key, value in kwargs.items()}
            answer = pool.call(host, project, name, args, datetime_to_json(clock()))
            if answer.error is not None:
                raise ExecContractError(answer.error)
            return answer.output  # type: ignore[return-value]

        call.__name__ = function
        return call

    return ReferenceAPI.from_functions(operation, ExecContractError, f"{SPEC_PREFIX}{command_line}")
