"""Wire lanes: a fault proxy per caller of a race or a parallel program, so each fault event names its call.

A plan counts calls per method, not per caller, and a proxy cannot tell whose RPC it forwards (another
process's client carries nothing that says). So each caller that needs the wire gets a lane of its own: a
`WireProxy` in front of the same emulator with the lane's plan, and a client of the same project through it
(`Lane.db`; an implementation in another process is started against `Lane.db`'s host, the proxy's). A lane's
calls are sequential (one racer, one branch), so the events its proxy logs during a call are that call's
(`WireLanes.call`).

Two kinds of lane (`fencecheck.runners.contest`, `fencecheck.parallel.execute`):

- rejecting (`WireLanes.rejecting(name)`): every Commit is rejected before it reaches the emulator (the lockstep
  machines' `COMMIT_REJECTED`: definite, nothing applied). A racer's commit-failing first attempt runs there.
  `WireLanes.rejection_problems()` checks what its log shows: every Commit the lane received was rejected and
  none was forwarded;
- mixed (`WireLanes.mixed(name)`): the seeded fault mix (`fencecheck.wire.mix.FaultMix`), the lane's plan drawn
  from the mix's seed and the lane's name, so a run is repeated exactly by its seed.

Lanes start on first use (a proxy is a grpc server, a few threads) and `close()` stops every one of them
and closes their clients; `WireLanes` is a context manager, closed on every exit path of its block.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from fencecheck.checker.history import WireFault
from fencecheck.wire.faults import FaultEvent, FaultKind, FaultPlan, on
from fencecheck.wire.lockstep import COMMIT_REJECTED
from fencecheck.wire.mix import FaultMix
from fencecheck.wire.proxy import WireProxy
from fencecheck.wire.session import emulator_host_of

T = TypeVar("T")

REJECTING_PLAN = FaultPlan((on("Commit", COMMIT_REJECTED, times=None),))
_REJECTING_SUFFIX = "/commit-rejected"


def wire_fault(event: FaultEvent) -> WireFault:
    """A proxy's fault event as a history's call keeps it: converted here, in the wire layer, because the
    history is the core's and imports nothing of the wire."""
    return WireFault(event.kind.value, event.method, event.forwarded, event.definite)


@attrs.define(eq=False)
class Lane:
    """One caller's proxy and its client of the project through it."""

    name: str
    proxy: WireProxy
    db: Any
    rejecting: bool
    _seen: int = 0  # events already handed to a call

    def take(self) -> tuple[FaultEvent, ...]:
        """The events logged since the last `take` (the lane's calls are sequential: the last call's)."""
        events = self.proxy.log.events()
        taken, self._seen = events[self._seen:], len(events)
        return taken


class WireLanes:
    """The lanes of one contest or one parallel repetition, on `db`'s emulator and project (see module doc)."""

    def __init__(self, db: Any, *, mix: FaultMix | None = None) -> None:
        self.upstream = emulator_host_of(db)
        self.project_id = db.project
        self.mix = mix
        self._lanes: dict[str, Lane] = {}
        self._lock = threading.Lock()
        self._closed = False

    # --- lanes ----------------------------------------------------------------------------------
    def rejecting(self, name: str) -> Lane:
        """`name`'s lane whose every Commit is rejected (a commit-failing attempt)."""
        return self._lane(name + _REJECTING_SUFFIX, REJECTING_PLAN, rejecting=True)

    def mixed(self, name: str) -> Lane | None:
        """`name`'s lane under the fault mix; None when the mix drew no fault for it (or there is no mix): its
        calls need no proxy (an implementation in another process, no process of its own)."""
        plan = self.mix.plan_for(name) if self.mix is not None else FaultPlan()
        if not plan.rules:
            return None
        return self._lane(name, plan, rejecting=False)

    def _lane(self, key: str, plan: FaultPlan, *, rejecting: bool) -> Lane:
        with self._lock:
            if self._closed:
                raise RuntimeError("these wire lanes are closed")
            lane = self._lanes.get(key)
            if lane is None:
                proxy = WireProxy(self.upstream).start()
                try:
                    proxy.set_plan(plan)
                    lane = Lane(key, proxy, proxy.client(self.project_id), rejecting)
                except BaseException:
                    proxy.stop()
                    raise
                self._lanes[key] = lane
            return lane

    def lanes(self) -> tuple[Lane, ...]:
        with self._lock:
            return tuple(self._lanes.values())

    # --- calls ----------------------------------------------------------------------------------
    @staticmethod
    def call(lane: Lane, fn: Callable[[Any], T]) -> tuple[Callable[[], T], Callable[[], tuple[WireFault, ...]]]:
        """`fn` bound to the lane's client, and what tells the fault events it met (as the history's
        `WireFault`, `wire_fault`): for `Recorder.call(..., wire_faults=...)`, which asks after the call has ended."""
        lane.take()  # events of an earlier call that ended late belong to nobody: start clean
        return (lambda: fn(lane.db)), (lambda: tuple(wire_fault(event) for event in lane.take()))

    # --- evidence -------------------------------------------------------------------------------
    def kinds(self) -> Counter[str]:
        """Fault events over every lane, per kind and method (`FaultEvent.label`)."""
        return Counter(event.label for lane in self.lanes() for event in lane.proxy.log.events())

    def rejection_problems(self) -> list[str]:
        """What the rejecting lanes' logs must show: every Commit received was rejected, none forwarded."""
        problems = []
        for lane in self.lanes():
            if not lane.rejecting:
                continue
            commits = lane.proxy.call_counts().get("Commit", 0)
            events = [event for event in lane.proxy.log.events() if event.method == "Commit"]
            rejected = [event for event in events if event.kind is FaultKind.REJECT and not event.forwarded]
            if len(rejected) != commits or len(events) != commits:
                problems.append(
                    f"{lane.name}: {commits} commit(s) sent on the commit-rejecting wire, {len(rejected)} rejected "
                    "before the emulator: a commit that should have been rejected may have been applied"
                )
        return problems

    # --- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Close every lane's client and stop its proxy. Idempotent."""
        from fencecheck.emulator.lifecycle import close_client
        from fencecheck.protocol.process import close_host_everywhere

        with self._lock:
            if self._closed:
                return
            self._closed = True
            lanes = list(self._lanes.values())  # kept: their logs stay readable as evidence
        for lane in lanes:
            host = lane.proxy.host
            try:
                close_client(lane.db)
                close_host_everywhere(host)  # an implementation process started against this lane's proxy
            finally:
                lane.proxy.stop()

    def __enter__(self) -> WireLanes:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
