"""Lockstep state machine of the lantern transaction layer (docs/lantern-contract.md): every rule applies one
`model.lantern` operation (a lost-response rule: the same call twice) to the pure model and to the
implementation on the Firestore emulator through `fencecheck.runners.lockstep` with the LANTERN plug-in, which reads
back the whole project after every step and compares it with the model's documents exactly.

Each Hypothesis example starts on an emptied project with two venues and two users. Users, venues and
lanterns are Bundles; lantern and venue ids are numbered in the order the example makes them (`lan-3`,
`club-2`), so a program replays exactly and a venue id is never reused (the model refuses that: outside the
contract). A lantern in its Bundle is the light call that lit it (`LanternCall`), so it can be made again:
a caller's retry, a relight by its user, an extinguish by its owner or by someone else. Deleted venues move
to their own Bundle (lights there, deleting again).

The trusted clock is the machine's `clock`, moved only by rules: small and large steps, landing exactly on a
lantern's expiresAt, one microsecond before it or a day past it (which can move it back), or up to a
lantern's expiry before a relight or an extinguish. Some calls take a reading earlier than what is stored
(1 us before a lantern's litAt, a second before the clock, a retry read from a clock 1 us behind).

Faults (`InjectFault`: a stranded guard, #4; counter drift, #5) are injected only where
`model.lantern.fault_applies`, at most one every FAULT_SPACING operations; the user of a stranded guard
lights again at once (D2 must overwrite it). INV-1..INV-5 (`model.lantern.invariant_violations`) are checked
on the stored documents after every step of an example without faults.

The budget (examples x steps) is this machine's own, per profile (`BUDGETS`): every step reads back the
whole project. Failures are written to `counterexamples/` as standalone pytest files naming the system
(`stateful_tests/machine_runner.py`). Collected by `stateful_tests/conftest.py` (the file name does not
match `test_*.py`).
"""

from __future__ import annotations

import itertools
import math
from datetime import datetime, timedelta
from typing import Any, ClassVar, NamedTuple

import attrs
import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from fencecheck.checker import coverage
from fencecheck.errors import ContractFailure
from fencecheck.plugin.records import SystemPlugin
from fencecheck.plugin.specs import configured_implementation
from fencecheck.runners.lockstep import Lockstep, LockstepMismatch
from fencecheck.suites import hypothesis_profiles
from fencecheck.systems.lantern.plugin import LANTERN, LanternSystem
from model.lantern import (
    CreateVenue,
    DeleteVenue,
    Extinguish,
    FaultKind,
    InjectFault,
    Light,
    ReadActive,
    ScheduledLight,
    fault_applies,
    invariant_violations,
)
from model.lantern.constants import EARTH_RADIUS_METERS
from stateful_tests.known_bad_support import TINY, MachineCatalogue
from stateful_tests.machine_runner import BoundToEmulator, end_example
from tests.systems.lantern.story import FAR, H2, T0, US, VENUES

pytestmark = pytest.mark.system("lantern")  # deselected by --only-system <another>

# Examples x steps per profile: every step reads back the whole project (the invariant check reuses that
# read), so the machine has its own budget. Measured on 2 cores: ci about 25 s alone (about 35 s beside the
# journal machine under -n 2), thorough about 2 minutes.
BUDGETS: dict[str, dict[str, int]] = {
    "ci": {"max_examples": 150, "stateful_step_count": 50},
    "gate": {"max_examples": 150, "stateful_step_count": 50},
    "thorough": {"max_examples": 300, "stateful_step_count": 100},
}

# --- draws ----------------------------------------------------------------------------------------

USER_NAMES = ("alice", "bob", "carol", "dave")
SITES = tuple(VENUES)  # bar, club, cafe, hall: a few hundred metres apart, radii 80-200 m
METERS_PER_DEGREE_LATITUDE = EARTH_RADIUS_METERS * math.pi / 180
# Where a manual light's caller stands, relative to the venue: its centre, inside near the edge, on the edge
# (model and reference compute the same haversine float, so either answer must agree), just outside, far away.
POSITIONS = {"centre": 0.0, "inside_edge": 0.9, "on_edge": 1.0, "outside_edge": 1.1, "far": None}
DOORS = ("manual", "scheduled")
# A scheduled light is planned for the clock itself, an hour ago (both due), 1 us or an hour ahead (not due).
SCHEDULES = {"due_now": timedelta(0), "due_an_hour_ago": -timedelta(hours=1), "due_in_a_microsecond": US,
             "due_in_an_hour": timedelta(hours=1)}
# Mostly well within a lantern's two hours (so lanterns stay active for a while); the expiry boundaries
# themselves are the business of `clock_to_expiry` and `relight`.
ADVANCES = (US, timedelta(seconds=1), timedelta(minutes=1), timedelta(minutes=10), timedelta(hours=1), H2,
            timedelta(days=1))
# Mostly the trusted clock; sometimes the clock moved up to the lantern's expiresAt first, a reading 1 us
# before its stored litAt, or a second before the clock.
READINGS = ("clock",) * 3 + ("at_expiry", "before_lit", "second_earlier")
# A caller's retry: at once, later, after the lantern's lifetime, much later, or read from a clock 1 us behind.
RETRY_GAPS = (timedelta(0), timedelta(seconds=1), H2, timedelta(days=1), -US)
FAULT_SPACING = 8

user_names = st.sampled_from(USER_NAMES)
sites = st.sampled_from(SITES)
doors = st.sampled_from(DOORS)
retry_gaps = st.sampled_from(RETRY_GAPS)


class InvariantViolated(ContractFailure):
    """The stored documents break INV-1..INV-5 (or SHAPE) in an example without injected faults: a contract
    finding (fencecheck.errors.ContractFailure)."""


class LanternCall(NamedTuple):
    """A light as its caller made it, so that it can be made again: who, which lantern id, which venue, and
    the door (a manual light's caller position, or a scheduled light's plan)."""

    user_id: str
    lantern_id: str
    venue_id: str
    position: tuple[float, float] | None  # manual door; None: the scheduled door
    scheduled_for: datetime | None  # scheduled door

    def at(self, now: datetime) -> Light | ScheduledLight:
        if self.position is None:
            return ScheduledLight(self.user_id, self.lantern_id, self.venue_id, self.scheduled_for, now=now)
        return Light(self.user_id, self.lantern_id, self.venue_id, *self.position, now=now)


def caller_position(venue: CreateVenue, where: str) -> tuple[float, float]:
    """Where a manual light's caller stands: `where` (a POSITIONS key) relative to the venue, due north."""
    fraction = POSITIONS[where]
    if fraction is None:
        return FAR
    return venue.latitude + fraction * venue.radius_meters / METERS_PER_DEGREE_LATITUDE, venue.longitude


def machine_settings() -> settings:
    """The selected profile's settings with this machine's budget (another profile's numbers are kept)."""
    budget = BUDGETS.get(hypothesis_profiles.selected_name(), {})
    return settings(hypothesis_profiles.machine_settings(), **budget)


# --- the machine ----------------------------------------------------------------------------------


class LanternMachine(RuleBasedStateMachine):
    """Model and implementation in lockstep over venues, the two light doors, extinguish and the
    auto-extinguishing read, a trusted clock, lost responses and the two document faults."""

    # Bound by the test (TestLanternMachine) before Hypothesis runs: the emulator, a project, its client.
    emulator: ClassVar[Any] = None
    project_id: ClassVar[str | None] = None
    db: ClassVar[Any] = None
    # Wire faults (fencecheck/wire/lockstep.py): the lost-response rules lose the first call's commit answer on
    # the wire, and the "commit applied, response lost" rules run. False: both calls answered, no such rules.
    wire_faults: ClassVar[bool] = True
    wire: ClassVar[Any] = None  # the WireSession, bound with the emulator (run_machine)
    plugin: ClassVar[SystemPlugin] = LANTERN
    # The reference unless $FENCECHECK_SYSTEM names a lantern implementation; a subclass may swap it.
    system: ClassVar[LanternSystem] = configured_implementation(LANTERN)
    # Programs of this test run: the last one, and those Hypothesis replayed as final (shrunk) examples.
    last_program: ClassVar[list] = []
    final_programs: ClassVar[list] = []
    run_counts: ClassVar[Any] = None
    examples_run: ClassVar[int] = 0  # for the evidence report's stateful section

    users = Bundle("users")
    venues = Bundle("venues")  # created and not deleted (as far as the machine's own rules know)
    gone_venues = Bundle("gone_venues")  # deleted
    lanterns = Bundle("lanterns")  # LanternCall: lights that answered `lit`

    def __init__(self) -> None:
        super().__init__()
        if self.db is None:
            raise RuntimeError(f"{type(self).__name__} is not bound to an emulator project (run it via its TestCase)")
        # The project is empty: fresh for the first example, reset by every teardown (checked before step 1).
        self.lockstep = Lockstep(
            self.db, plugin=LANTERN, system=self.system, epoch=T0, coverage=coverage.PROCESS_COUNTS["lantern"],
            wire=self.wire,
        )
        type(self).examples_run += 1
        self.clock = T0
        self.lantern_numbers = itertools.count(1)
        self.venue_numbers = itertools.count(1)
        self.venue_calls: dict[str, CreateVenue] = {}  # every venue created, deleted ones too (their positions)
        self.last_fault_at = -FAULT_SPACING  # index into lockstep.ops of the latest fault
        self.faulted = False  # a fault broke an invariant on purpose: the invariant check stands down

    # --- helpers ---------------------------------------------------------------------------------

    def _run(self, op):
        result = self.lockstep.run(op)
        # None: a lost-response step that did not apply (the stored documents said so)
        event("not applied (response lost)" if result is None else result.transition)
        return result

    @property
    def _lossy(self) -> bool:
        """Lost responses are lost on the wire (else the machine sees the first answer and ignores it)."""
        return self.lockstep.wire is not None

    def _new_lantern_id(self) -> str:
        return f"lan-{next(self.lantern_numbers)}"

    def _light_call(self, user: str, venue: str, door: str, *, where: str = "centre",
                    plan: str = "due_now") -> LanternCall:
        """A new light call (a fresh lantern id): the manual door from `where`, or the scheduled door's `plan`."""
        lantern_id = self._new_lantern_id()
        if door == "manual":
            return LanternCall(user, lantern_id, venue, caller_position(self.venue_calls[venue], where), None)
        return LanternCall(user, lantern_id, venue, None, self.clock + SCHEDULES[plan])

    def _light(self, call: LanternCall, now: datetime | None = None) -> Any:
        """Make the call; it joins the lanterns Bundle when it lit (a refused one is retried by
        `lost_light_then_retry`, which makes the same call twice)."""
        result = self._run(call.at(self.clock if now is None else now))
        return call if result is not None and result.outcome == "lit" else multiple()

    def _retry_time(self, gap: timedelta) -> datetime:
        """When a caller retries `gap` after its first call (the trusted clock never runs backwards)."""
        self.clock = max(self.clock, self.clock + gap)
        return self.clock if gap >= timedelta(0) else self.clock + gap

    def _reading(self, lantern_id: str, reading: str) -> datetime:
        """The clock reading a call on this lantern is handed (a READINGS entry)."""
        if reading == "second_earlier":
            return self.clock - timedelta(seconds=1)
        lantern = self.lockstep.state.lantern(lantern_id)
        if reading == "before_lit" and lantern is not None:
            return lantern.lit_at - US
        if reading == "at_expiry" and lantern is not None:
            self.clock = max(self.clock, lantern.expires_at)  # the trusted clock moves there, never back
        return self.clock

    def _fault_allowed(self) -> bool:
        # The first fault may come at once (no padding in shrunk programs); later ones FAULT_SPACING ops apart.
        return len(self.lockstep.ops) - self.last_fault_at >= FAULT_SPACING

    # --- ids and venues --------------------------------------------------------------------------

    @initialize(target=users, first=user_names, second=user_names)
    def first_users(self, first, second):
        return multiple(first, second)

    @initialize(target=venues, first=sites, second=sites)
    def first_venues(self, first, second):
        return multiple(self._create_venue(first), self._create_venue(second))

    @rule(target=users, name=user_names)
    def new_user(self, name):
        return name

    @rule(target=venues, site=sites)
    def create_venue(self, site):
        return self._create_venue(site)

    def _create_venue(self, site: str) -> str:
        op = attrs.evolve(VENUES[site], venue_id=f"{site}-{next(self.venue_numbers)}")
        self.venue_calls[op.venue_id] = op
        self._run(op)
        return op.venue_id

    @rule(venue=venues)
    def create_existing_venue(self, venue):
        """venue_exists. (A deleted venue's id is never created again: the contract forbids reuse.)"""
        if self.lockstep.state.venue(venue) is not None:
            self._run(self.venue_calls[venue])

    @rule(target=gone_venues, venue=consumes(venues))
    def delete_venue(self, venue):
        """Deleted (or already gone); its lanterns stay as they are, so their ends and relights must skip it
        (C2, #13)."""
        self._run(DeleteVenue(venue))
        return venue

    @rule(target=gone_venues, lit=lanterns)
    def delete_venue_of_a_lantern(self, lit):
        """#13's setup: the venue of a lit lantern (active, expired or ended) disappears. Its id may stay in
        the venues Bundle: later lights there answer venue_not_found."""
        result = self._run(DeleteVenue(lit.venue_id))
        return lit.venue_id if result.outcome == "venue_deleted" else multiple()

    @rule(venue=gone_venues)
    def delete_venue_again(self, venue):
        """venue_not_found."""
        self._run(DeleteVenue(venue))

    # --- lighting --------------------------------------------------------------------------------

    @rule(target=lanterns, user=users, venue=venues, where=st.sampled_from(tuple(POSITIONS)))
    def light(self, user, venue, where):
        """The manual door from inside the geofence, on its edge, or outside it (at a venue that
        `delete_venue_of_a_lantern` may have deleted: venue_not_found)."""
        return self._light(self._light_call(user, venue, "manual", where=where))

    @rule(target=lanterns, user=users, venue=venues, plan=st.sampled_from(tuple(SCHEDULES)))
    def schedule_light(self, user, venue, plan):
        """The scheduled door, due or not yet due (a later retry of a not-due plan may find it due)."""
        return self._light(self._light_call(user, venue, "scheduled", plan=plan))

    @rule(user=users, venue=gone_venues, door=doors)
    def light_at_deleted_venue(self, user, venue, door):
        """venue_not_found at the pre-read, from either door."""
        self._light(self._light_call(user, venue, door))

    @rule(target=lanterns, lit=lanterns, venue=venues, door=doors,
          when=st.sampled_from(("clock", "at_expiry", "past_expiry")),
          old_venue=st.sampled_from(("kept", "kept", "deleted")))
    def relight(self, lit, venue, door, when, old_venue):
        """A user who lit a lantern lights another: held while the guarded one is active; at or past its
        expiresAt the old one is retired first, elsewhere or in place. With `old_venue="deleted"` the venue of
        the guarded lantern is deleted first (#13: the retire must skip its decrement, C2)."""
        guard = self.lockstep.state.guard(lit.user_id)
        if guard is not None and old_venue == "deleted" and self.lockstep.state.venue(guard.venue_id):
            self._run(DeleteVenue(guard.venue_id))  # its id may stay in the venues Bundle: venue_not_found there
        if guard is not None and when != "clock":
            expiry = guard.expires_at + (timedelta(0) if when == "at_expiry" else timedelta(minutes=1))
            self.clock = max(self.clock, expiry)
        return self._light(self._light_call(lit.user_id, venue, door))

    @rule(lit=lanterns, gap=retry_gaps)
    def retry_light(self, lit, gap):
        """The exact call again, later: the stored lantern while it is active, lantern_id_taken once it ended
        or expired."""
        self._light(lit, self._retry_time(gap))

    @rule(lit=lanterns, user=users, venue=venues, door=doors)
    def reuse_lantern_id(self, lit, user, venue, door):
        """Another call with a lantern id already used (another user, venue or door): lantern_id_taken."""
        call = self._light_call(user, venue, door)._replace(lantern_id=lit.lantern_id)
        self._light(call)

    @rule(lit=lanterns, field=st.sampled_from(("user", "venue")))
    def reuse_lantern_id_one_field_off(self, lit, field):
        """Near miss: the light again with only its user or only its venue changed, to the nearest id before the
        stored one and then to the nearest after it: lantern_id_taken, never the stored lantern (only the exact
        call gets it back). Both sides in one rule, because an `==` turned `<=` or `>=` agrees on one side only,
        and a side drawn per call was too seldom the right one in a short run."""
        if field == "user":
            stored, known = lit.user_id, USER_NAMES
        else:  # a venue that still exists, or the light stops at the venue pre-read before any decision
            stored, known = lit.venue_id, [v for v in self.venue_calls if self.lockstep.state.venue(v) is not None]
        before, after = [v for v in known if v < stored], [v for v in known if v > stored]
        for nearest in ([max(before)] if before else []) + ([min(after)] if after else []):
            if field == "user":
                self._light(lit._replace(user_id=nearest))
            else:  # a manual caller stands at the other venue, or the geofence refuses before any decision
                where = None if lit.position is None else caller_position(self.venue_calls[nearest], "centre")
                self._light(lit._replace(venue_id=nearest, position=where))

    @rule(target=lanterns, user=users, venue=venues, door=doors, plan=st.sampled_from(tuple(SCHEDULES)),
          gap=retry_gaps)
    def lost_light_then_retry(self, user, venue, door, plan, gap):
        """The caller never sees the first answer (or was refused: a scheduled light not yet due) and makes
        the same call again after `gap`: the stored lantern while it is active."""
        call = self._light_call(user, venue, door, plan=plan)
        self._run(attrs.evolve(call.at(self.clock), response_lost=self._lossy))  # the wire loses its answer
        return self._light(call, self._retry_time(gap))

    @precondition(lambda self: self._lossy)
    @rule(target=lanterns, user=users, venue=venues, door=doors)
    def light_applied_response_lost(self, user, venue, door):
        """Commit applied, response lost: the wire loses the light's commit answer, the client's own retry logic
        runs and nobody retries the call; its answer and the stored documents must be one of the model's two
        outcomes (lit, or not), which the model then follows."""
        call = self._light_call(user, venue, door)
        result = self._run(attrs.evolve(call.at(self.clock), response_lost=True))
        return call if result is not None and result.outcome == "lit" else multiple()

    # --- extinguishing ---------------------------------------------------------------------------

    @rule(lit=lanterns, reading=st.sampled_from(READINGS))
    def extinguish(self, lit, reading):
        """By its owner: extinguished while active, expired at or after expiresAt (with or without its
        venue), lantern_not_active once ended, lantern_unavailable for a reading before litAt."""
        self._run(Extinguish(lit.user_id, lit.lantern_id, now=self._reading(lit.lantern_id, reading)))

    @rule(lit=lanterns, user=users)
    def extinguish_by_another_user(self, lit, user):
        """not_lantern_owner, whatever the lantern's state."""
        other = user if user != lit.user_id else USER_NAMES[(USER_NAMES.index(user) + 1) % len(USER_NAMES)]
        self._run(Extinguish(other, lit.lantern_id, now=self.clock))

    @rule(user=users)
    def extinguish_absent_lantern(self, user):
        """lantern_not_found: a lantern id nobody lit."""
        self._run(Extinguish(user, self._new_lantern_id(), now=self.clock))

    @rule(lit=lanterns, gap=retry_gaps)
    def lost_extinguish_then_retry(self, lit, gap):
        """The owner never sees the first answer and asks again: lantern_not_active after an end."""
        self._run(Extinguish(lit.user_id, lit.lantern_id, now=self.clock, response_lost=self._lossy))
        self._run(Extinguish(lit.user_id, lit.lantern_id, now=self._retry_time(gap)))

    @precondition(lambda self: self._lossy)
    @rule(lit=lanterns)
    def extinguish_applied_response_lost(self, lit):
        """The owner's extinguish commits, its answer is lost on the wire, nobody retries."""
        self._run(Extinguish(lit.user_id, lit.lantern_id, now=self.clock, response_lost=True))

    # --- reading -----------------------------------------------------------------------------------

    @rule(reading=st.sampled_from(("clock", "clock", "second_earlier")))
    def read_active(self, reading):
        """The public view; every expired lantern it meets is retired, one transaction each."""
        self._run(ReadActive(now=self.clock - (timedelta(seconds=1) if reading == "second_earlier" else timedelta(0))))

    # --- the trusted clock -----------------------------------------------------------------------

    @rule(step=st.sampled_from(ADVANCES))
    def advance_clock(self, step):
        """The trusted clock moves on (every call reads it, unless its rule takes an earlier reading)."""
        self.clock += step

    @rule(lit=lanterns, where=st.sampled_from(("exactly", "one_microsecond_before", "far_past")))
    def clock_to_expiry(self, lit, where):
        """Land the clock on a stored lantern's expiresAt, 1 us before it, or a day past it (this can move the
        clock back: later readings are then earlier than stored times)."""
        lantern = self.lockstep.state.lantern(lit.lantern_id)
        if lantern is None:
            return
        offset = {"exactly": timedelta(0), "one_microsecond_before": -US, "far_past": timedelta(days=1)}[where]
        self.clock = lantern.expires_at + offset

    # --- faults ------------------------------------------------------------------------------------

    def _applicable_faults(self) -> list[InjectFault]:
        state = self.lockstep.state
        candidates = [InjectFault(FaultKind.STRANDED_GUARD, user, now=self.clock) for user, _guard in state.guards]
        candidates += [InjectFault(FaultKind.COUNTER_DRIFT, venue) for venue, _venue in state.venues]
        return [fault for fault in candidates if fault_applies(state, fault)]

    @precondition(lambda self: self._fault_allowed())
    @rule(target=lanterns, data=st.data(), door=doors)
    def inject_fault(self, data, door):
        """A broken writer's damage: a stranded guard (#4: the lantern extinguished, its guard left) or a
        counter one below its active lanterns (#5). The user of a stranded guard lights again at once: the
        guard names an ended lantern, so it counts as absent and is overwritten (D2)."""
        faults = self._applicable_faults()
        if not faults:
            return multiple()  # nothing lit, no venue left
        fault = data.draw(st.sampled_from(faults), label="fault")
        self.last_fault_at, self.faulted = len(self.lockstep.ops), True
        self._run(fault)
        if fault.kind is not FaultKind.STRANDED_GUARD:
            return multiple()
        state = self.lockstep.state
        stranded = state.lantern(state.guard(fault.subject).lantern_id)  # the guard stays, naming it
        return self._light(self._light_call(fault.subject, stranded.venue_id, door))

    # --- invariants and cleanup ------------------------------------------------------------------

    @invariant()
    def stored_documents_match_model(self):
        # Before step 1 this reads back the (emptied) project; after that Lockstep.run has already read back
        # the whole project after each operation: a no-op.
        self.lockstep.check_documents()

    @invariant()
    def stored_documents_keep_the_invariants(self):
        """INV-1..INV-5 and SHAPE on what the emulator holds (a fault breaks them on purpose)."""
        if not self.faulted:
            self._check_invariants()

    def _check_invariants(self) -> None:
        # After an operation the lockstep has just read back the whole project (no read set): reuse that read.
        stored = {path: item.data for path, item in self.lockstep.stored_project().items()}
        violations = invariant_violations(stored)
        if violations:
            raise InvariantViolated(
                "stored documents break the lantern invariants:\n"
                + "\n".join(f"  {violation}" for violation in violations)
                + "\nprogram:\n"
                + "\n".join(f"  {i}. {line}" for i, line in enumerate(self.lockstep.program(), 1))
            )

    def teardown(self):
        end_example(self)


class TestLanternMachine(BoundToEmulator, LanternMachine.TestCase):
    """`LanternMachine.TestCase` with the selected profile's settings and this machine's budget, bound to an
    emulator project."""

    settings = machine_settings()
    machine = LanternMachine


# --- the known-bad catalogue (stateful_tests/test_known_bad.py; SuiteParts.machine_known_bad names it) ---------

OUT_OF_SEQUENTIAL_REACH = {
    "finding_4_guard_cleared_after_commit": (
        "the variant deletes the user's guard by a separate write right after the extinguish commits. Run "
        "sequentially that write always succeeds, and the stored documents, answers and update times are "
        "exactly the reference's (an extinguish succeeds only for a stored-active lantern, which its user's guard "
        "always names). Only a failure between the commit and the delete strands the guard, and the lantern "
        "plug-in injects no failed write (no lantern operation carries commit_fails); InjectFault stranded_guard "
        "writes the damage on both sides alike. tests/systems/lantern/test_lantern_known_bad.py catches it with a "
        "client whose guard delete fails."
    ),
}


def _known_bad() -> MachineCatalogue:
    from known_bad.crashing import lantern_name_error
    from known_bad.lantern import VARIANTS

    return MachineCatalogue(
        machine=LanternMachine,
        machine_settings=machine_settings,
        run=tuple(v.name for v in VARIANTS if not v.concurrent and v.name not in OUT_OF_SEQUENTIAL_REACH),
        out_of_reach=OUT_OF_SEQUENTIAL_REACH,
        concurrent=tuple(v.name for v in VARIANTS if v.concurrent),  # the race and parallel suites'
        # the seed scenarios (tests/systems/lantern/test_lantern_known_bad.py) write lantern-<name>
        result_prefix="lantern-machine-",
        machine_prefix="KnownBadLantern",
        detections=(LockstepMismatch, InvariantViolated),
        name_error=lantern_name_error,
        name_error_settings=settings(TINY, max_examples=5),
    )


KNOWN_BAD = _known_bad()
