"""Reference implementations under test, one package per system.

The command journal's public API is importable from here directly, as SPEC.md describes it.
"""

from .journal import (
    ERROR_CODES,
    AttemptLog,
    CommandJournalError,
    LeaseAcquired,
    LeaseTimestamp,
    LifecycleObservation,
    RegistrationResult,
    acquire_commerce_command_lease,
    complete_commerce_command,
    fail_commerce_command,
    register_commerce_command,
    system_clock,
)

__all__ = [
    "ERROR_CODES",
    "AttemptLog",
    "CommandJournalError",
    "LeaseAcquired",
    "LeaseTimestamp",
    "LifecycleObservation",
    "RegistrationResult",
    "acquire_commerce_command_lease",
    "complete_commerce_command",
    "fail_commerce_command",
    "register_commerce_command",
    "system_clock",
]
