"""Reference lantern transaction layer on google-cloud-firestore (docs/lantern-contract.md).

Every writer of lantern state goes through one shared layer (decision E2, layer.py + decide.py): light
(manual and scheduled doors), extinguish, auto-extinguish on read, and the relight retire path.
"""

from .api import (
    activate_scheduled_lantern,
    create_venue,
    delete_venue,
    extinguish_lantern,
    light_lantern,
    read_active_lanterns,
    system_clock,
)
from .errors import ERROR_CODES, LanternError
from .outputs import ActiveLanterns, LanternEnded, LanternLit, LanternPin, VenueChanged
from .runner import AttemptLog

__all__ = [
    "ERROR_CODES",
    "ActiveLanterns",
    "AttemptLog",
    "LanternEnded",
    "LanternError",
    "LanternLit",
    "LanternPin",
    "VenueChanged",
    "activate_scheduled_lantern",
    "create_venue",
    "delete_venue",
    "extinguish_lantern",
    "light_lantern",
    "read_active_lanterns",
    "system_clock",
]
