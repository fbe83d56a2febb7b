"""The systems the harness verifies, each as a `fencecheck.plugin.SystemPlugin`, by name."""

from __future__ import annotations

from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin import SystemPlugin


def plugin(name: str) -> SystemPlugin:
    """The plug-in called `name` ("journal", "lantern" or "gateway"); imported on first use."""
    if name == "journal":
        from .journal import JOURNAL

        return JOURNAL
    if name == "lantern":
        from .lantern import LANTERN

        return LANTERN
    if name == "gateway":
        from .gateway import GATEWAY

        return GATEWAY
    raise SystemNotFoundError(f"no system called {name!r}: expected one of {', '.join(SYSTEM_NAMES)}.")


SYSTEM_NAMES = ("journal", "lantern", "gateway")
