"""Exceptions raised by fencecheck.

Every class also derives from the built-in type a caller would naturally catch (a missing
executable is a FileNotFoundError, a bad argument a ValueError, ...), so code that does not know
about fencecheck still handles them sensibly.
"""

from __future__ import annotations


class FencecheckError(Exception):
    """Base class of every error fencecheck raises on purpose."""


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


class SystemNotFoundError(FencecheckError, ImportError):
    """A journal system named by a counterexample or $FENCECHECK_SYSTEM cannot be imported or built."""


class CounterexampleError(FencecheckError, ValueError):
    """A saved counterexample is missing, of an unknown kind, or not in the expected format."""
