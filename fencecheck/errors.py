"""Exceptions raised by fencecheck.

Every class also derives from the built-in type a caller would naturally catch (a missing
executable is a FileNotFoundError, a bad argument a ValueError, ...), so code that does not know
about fencecheck still handles them sensibly.
"""

from __future__ import annotations

from collections.abc import Iterable

from fencecheck.problems import Problem, ProblemKind

# What Python itself sets on any exception it raises, chains or reports (`add_note` included).
_RUNTIME_ATTRIBUTES = frozenset({"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__"})


class FencecheckError(Exception):
    """Base class of every error fencecheck raises on purpose. Immutable: once it exists, no attribute (its
    arguments included) can be set or deleted, except what the interpreter records on every exception."""

    def __setattr__(self, name: str, value: object) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError(f"{type(self).__name__} is immutable")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name not in _RUNTIME_ATTRIBUTES:
            raise AttributeError(f"{type(self).__name__} is immutable")
        super().__delattr__(name)


class EmulatorNotFoundError(FencecheckError, FileNotFoundError):
    """No Firestore emulator could be found (jar, command, gcloud SDK or firebase-tools cache)."""


class JavaNotFoundError(FencecheckError, FileNotFoundError):
    """The emulator is a jar and needs Java, but no usable java executable was found."""


class EmulatorStartError(FencecheckError, RuntimeError):
    """The emulator process exited early or did not answer in time."""


class PortInUseError(FencecheckError, OSError):
    """An explicitly requested port is already bound by another process."""


class EmulatorUnreachableError(FencecheckError, ConnectionError):
    """FIRESTORE_EMULATOR_HOST names an emulator that does not answer."""


class UsageError(FencecheckError, ValueError):
    """Bad input: a malformed host string, an invalid project id, rules that do not compile, ..."""


class EmulatorTargetError(UsageError):
    """FIRESTORE_EMULATOR_HOST outside the loopback range, or a project id not starting with ``demo-``:
    refused before any client is built or any request is sent."""


class SystemNotFoundError(FencecheckError, ImportError):
    """A journal system named by a counterexample or $FENCECHECK_SYSTEM cannot be imported or built."""


class PluginRegistrationError(UsageError):
    """A system registered from outside fencecheck (an entry point of `fencecheck.systems`, `--plugin`,
    $FENCECHECK_PLUGINS) that names no SystemPlugin, or whose name another registration has too."""


class PluginDefinitionError(UsageError):
    """A `SystemPlugin` built with a field that cannot work: the message names the plug-in, the field, what was
    expected and what it got (`fencecheck.plugin`, checked when the plug-in object is built)."""


class CounterexampleError(FencecheckError, ValueError):
    """A saved counterexample is missing, of an unknown kind, or not in the expected format."""


class CheckFailed(FencecheckError, AssertionError):
    """A check of the suites failed: `message` says what broke, `problems` (`fencecheck.problems.Problem`) what
    was found, each of its kind. The project's pytest plug-in records their kinds with the failing test, which is
    how `fencecheck gate --known-bad` learns them (never from the message's text)."""

    def __init__(self, message: str, problems: Iterable[Problem]) -> None:
        super().__init__(message, tuple(problems))

    @property
    def message(self) -> str:
        return self.args[0]

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self.args[1]

    def __str__(self) -> str:
        return self.message


class ContractFailure(CheckFailed):
    """A check found a property of the contract broken (a stored invariant, say): the message is the finding."""

    def __init__(self, message: str) -> None:
        super().__init__(message, (Problem(ProblemKind.CONTRACT, message),))

    def __reduce__(self) -> tuple[object, ...]:  # rebuilt from its message, not from the base's arguments
        return type(self), (self.message,)
