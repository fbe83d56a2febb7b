"""Reference command journal on google-cloud-firestore (seeds 000 and 001, SPEC.md)."""

from .api import (
    acquire_commerce_command_lease,
    complete_commerce_command,
    fail_commerce_command,
    register_commerce_command,
    system_clock,
)
from .errors import ERROR_CODES, CommandJournalError
from .outputs import LeaseAcquired, LeaseTimestamp, LifecycleObservation, RegistrationResult
from .runner import AttemptLog

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
