"""A wire session: a fault proxy in front of the emulator and a Firestore client of one project through it.

The lockstep runner takes one (`Lockstep(db, plugin=..., wire=...)`) to run its commit-failure and lost-response steps
on the wire (`fencecheck/wire/lockstep.py`); its read-backs stay on the direct client. The pytest fixtures
(`wire_proxy`, one per test process, and `wire_session`, per test: `fencecheck.suites.pytest_plugin`) start the proxy
with the emulator fixtures; `open_session` starts one for a block (a replay without fixtures).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import attrs

from fencecheck.wire.proxy import WireProxy


@attrs.frozen
class WireSession:
    """`db` is a client of `project_id` whose every call goes through `proxy` (faulted only by its plan)."""

    proxy: WireProxy
    db: Any
    project_id: str

    def kinds(self) -> Counter[str]:
        """Fault events applied so far, per kind and method (`FaultEvent.label`)."""
        return Counter(event.label for event in self.proxy.log.events())


@contextlib.contextmanager
def session_on(proxy: WireProxy, project_id: str) -> Iterator[WireSession]:
    """A session on a running proxy: a new client of `project_id` through it, closed after the block."""
    from fencecheck.emulator.lifecycle import close_client

    db = proxy.client(project_id)
    try:
        yield WireSession(proxy, db, project_id)
    finally:
        close_client(db)


@contextlib.contextmanager
def open_session(upstream: str, project_id: str) -> Iterator[WireSession]:
    """A proxy of its own in front of `upstream` (the emulator's host:port) for the block, stopped on any exit."""
    with WireProxy(upstream) as proxy, session_on(proxy, project_id) as session:
        yield session


def emulator_host_of(db: Any) -> str:
    """The emulator a fencecheck client talks to (every fencecheck client is an emulator client)."""
    host = getattr(db, "_emulator_host", None)
    if not host:
        from fencecheck.errors import UsageError

        raise UsageError("a wire proxy needs a client of the Firestore emulator (FIRESTORE_EMULATOR_HOST)")
    return host
