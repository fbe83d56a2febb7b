"""The lantern's parallel programs (`fencecheck.parallel.ParallelSpec`): its strategy of contested calls and its
structural check of a race (INV-1..5 and SHAPE on every stored document, `model.lantern.invariant_violations`).

What makes the calls compete (the seed's races, tests/systems/lantern/races.py, in miniature):

- the prefix opens the bar (and maybe the club) and lights a lantern there for alice and maybe bob, a second
  apart: a live lantern whose end the branches can fight over, and one whose counter must stay;
- branch calls: the owner's extinguish of her lantern (#5: two extinguishes that both end it), a read of the
  active lanterns that retires what expired (A3: a blind batch racing an extinguish, or another read, retires
  it twice), a light of a new lantern (a relight after expiry retires the old one), any of those by any user,
  a scheduled activation of a new lantern (the scheduled door shares the guard with the manual one, #889: the
  two doors, or two activations of one lantern id, an exact retry, race for it), or a venue administration
  call: the delete of a venue of the prefix (the bar, or the club when it is open) while its lanterns end or
  relight (#13, C2: every decrement is existence-guarded) and lights pre-read it (B1, pinned 15), or the
  create of the cafe, which only a branch opens (a create racing another, or a light there);
- venue ids are never reused (pinned 14: the model refuses to create a deleted id), so a delete never names
  the cafe and a create names nothing else: no order of the calls recreates a deleted venue;
- clock readings at the boundaries: while the lanterns are active, 1 us before alice's lantern's expiry, at it
  exactly (`now < expiresAt` is active, equality expired), a second after it; a read's simplest readings are
  the expired ones (a read that retires nothing writes nothing); a scheduled activation is due at every reading
  (it was scheduled for the end of the prefix), so two of one lantern id are the same activation retried;
- swarm testing (as the journal's): each program draws its calls' intents from one subset, so some programs
  are all extinguishes or all reads and extinguishes, and concentrate one contest a mix would dilute. The
  scheduled door and venue administration are drawn in the last swarm only, beside manual lights, reads and
  extinguishes, so the programs of the other swarms are the contests they were (each swarm is now a seventh of
  the programs, not a sixth: the ci budget's known-bad programs grew to match); a light goes to the cafe only
  in that swarm, which can create it.

Everything shrinks toward the simplest race: the bar and alice's lantern, then two extinguishes of it by alice
while it is active. Every call draws the same choices whatever its intent, so simplifying one call keeps the
meaning of the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from fencecheck.emulator.firestore_io import Stored
from fencecheck.parallel.program import BranchCall, ParallelProgram, trim_branches
from fencecheck.parallel.property import Budget
from fencecheck.parallel.spec import ParallelSpec
from model.lantern import (
    LANTERN_TTL,
    CreateVenue,
    DeleteVenue,
    Extinguish,
    LanternState,
    Light,
    ReadActive,
    ScheduledLight,
    invariant_violations,
    step,
)

SYSTEM = "lantern"
T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)  # the lantern tests' clock origin (tests/systems/lantern/support.py)
US = timedelta(microseconds=1)
SECOND = timedelta(seconds=1)
ACTIVE_FOR = timedelta(minutes=10)

BAR = CreateVenue("bar", "Bar Lantern", 52.5200, 13.4050, 150)
CLUB = CreateVenue("club", "Club Lantern", 52.5230, 13.4110, 100)
CAFE = CreateVenue("cafe", "Cafe Lantern", 52.5170, 13.3990, 80)  # never in the prefix: only a branch creates it
POSITIONS = {"bar": (52.5200, 13.4050), "club": (52.5230, 13.4110), "cafe": (52.5170, 13.3990)}
VENUES = ("bar", "club", "cafe")
USERS = ("alice", "bob", "carol")
# Why a call is drawn: "extinguish" (the owner of a lantern the prefix lit ends it), "read" (the active lanterns,
# retiring what expired), "light" (a new lantern: refused while the user's is active, a relight after it
# expired), "any" (any user's extinguish of any lantern); the full mix, where the two that end a lantern are
# listed twice. Beside them: "scheduled" (a light of a new lantern through the scheduled door) and "venue" (the
# delete of a venue of the prefix, or the create of the cafe), drawn in the last swarm only, with the calls they
# race: so the programs of the other swarms are the contests they were before these calls joined (the known-bad
# catalogue's #5 and A3 need those within a few dozen programs). Reads are listed twice in the last swarm too.
INTENTS = ("extinguish", "read", "light", "any", "extinguish", "read")
SWARMS = (INTENTS, ("extinguish",), ("read", "extinguish"), ("read",), ("light", "extinguish"), ("light", "read"),
          ("scheduled", "venue", "read", "extinguish", "light", "read"))
# alice's lantern is always lit (the simplest contested state); bob's first, so his counter share stays.
BOB_STAGES = ("lit", "none")


def lantern_id(user: str, n: int) -> str:
    return f"lan-{user}-{n}"


def light(user: str, n: int, venue: str, now: datetime) -> Light:
    return Light(user, lantern_id(user, n), venue, *POSITIONS[venue], now=now)


def light_venue(state: LanternState, venue: str, intents: tuple[str, ...]) -> str:
    """Where a light (either door) goes: a venue of the prefix, the cafe in a swarm that can create it, else the
    bar."""
    if venue == CAFE.venue_id:
        return venue if "venue" in intents else "bar"
    return venue if state.venue(venue) is not None else "bar"


def venue_call(state: LanternState, venue: str, n: int) -> DeleteVenue | CreateVenue:
    """A delete of a venue of the prefix (never the cafe), or the create of the cafe (never a deleted id)."""
    if n == 1:
        return DeleteVenue(venue if venue != CAFE.venue_id and state.venue(venue) is not None else "bar")
    return CAFE


@st.composite
def prefixes(draw: st.DrawFn, max_ops: int) -> tuple[tuple[Any, ...], datetime]:
    """The venues and the first lanterns, and the clock after them."""
    club, bob = draw(st.booleans()), draw(st.sampled_from(BOB_STAGES))
    ops: list[Any] = [BAR]
    if club:
        ops.append(CLUB)
    ops.append(light("alice", 1, "bar", T0 + SECOND))
    if bob == "lit":
        ops.append(light("bob", 1, "bar", T0 + 2 * SECOND))
    return tuple(ops[:max(max_ops, 2)]), T0 + 3 * SECOND


def readings(state: LanternState, clock: datetime) -> tuple[datetime, ...]:
    """Clock readings worth trying, simplest first: while active, around the expiry of alice's lantern."""
    first = state.lantern(lantern_id("alice", 1))
    expiry = first.expires_at if first is not None else clock + LANTERN_TTL
    return (clock + ACTIVE_FOR, expiry + SECOND, expiry, expiry - US)


def retiring_readings(state: LanternState, clock: datetime, side: int = 0) -> tuple[datetime, ...]:
    """A read's readings, the expired ones first: what a read of the active lanterns races with is its retiring.
    `side` 0: at or after alice's expiry (a read that retires her); 1: before it. Every read of one program is on
    one side (`_programs` draws it once).

    Why one side: the contract's read is a plain query, then one transaction per expired lantern (A2), and the
    model's ReadActive is one step. A read before the expiry that runs after bob's light but before a retiring
    read's transaction commits shows alice and bob, while the retiring read, whose query ran before bob's light,
    showed neither: no order of one-step reads explains both, though the reference kept its contract (found by
    the parallel programs, counterexamples/parallel-lantern-reference-1071e81df7.json). Until the model
    splits a read's view from its retiring, reads on both sides of an expiry would accuse a correct reference.

    Half a second after alice's expiry, not a second: bob's lantern, lit a second after hers, expires then, and
    a read that retires two lanterns is not one step. The reference retires each expired lantern in its own
    transaction (A2), the model's ReadActive all at once, so an extinguish of the second between the two
    transactions would be judged illegal against a correct reference. No reading here reaches the expiry of a
    lantern lit after alice's."""
    found = readings(state, clock)
    first = state.lantern(lantern_id("alice", 1))
    expiry = first.expires_at if first is not None else clock + LANTERN_TTL
    return (expiry + SECOND / 2, found[2]) if side == 0 else (found[0], found[3])


def _pick(options: tuple, index: int):
    return options[index % len(options)]


@st.composite
def lantern_calls(draw: st.DrawFn, state: LanternState, clock: datetime, intents: tuple[str, ...] = INTENTS,
                  read_side: int = 0) -> Any:
    """One call against `state`, with an intent from `intents` (see the module docstring); a read's reading on
    `read_side` of alice's expiry (`retiring_readings`)."""
    intent = _pick(intents, draw(st.integers(0, len(INTENTS) - 1)))
    user = USERS[draw(st.integers(0, len(USERS) - 1))]
    reading = draw(st.integers(0, 3))
    now = _pick(readings(state, clock), reading)
    venue, n = VENUES[draw(st.integers(0, len(VENUES) - 1))], draw(st.integers(1, 2))
    if intent == "read":  # a read that retires nothing writes nothing: after the expiry first
        return ReadActive(now=_pick(retiring_readings(state, clock, read_side), reading))
    if intent == "extinguish":  # the owner of a lantern the prefix lit: alice's first, bob's if he lit
        owner = user if state.lantern(lantern_id(user, 1)) is not None else "alice"
        return Extinguish(owner, lantern_id(owner, 1), now=now)
    if intent == "light":
        return light(user, 1 + n, light_venue(state, venue, intents), now)
    if intent == "scheduled":  # scheduled for the end of the prefix: due at every reading
        return ScheduledLight(user, lantern_id(user, 1 + n), light_venue(state, venue, intents), clock, now=now)
    if intent == "venue":
        return venue_call(state, venue, n)
    return Extinguish(user, lantern_id(_pick(USERS, n), 1), now=now)


@st.composite
def _programs(draw: st.DrawFn, max_prefix_ops: int, max_branches: int, max_concurrent_ops: int,
              max_branch_ops: int) -> ParallelProgram:
    prefix, clock = draw(prefixes(max_prefix_ops))
    state = LanternState.empty()
    for op in prefix:
        state, _result = step(state, op)
    swarm = draw(st.sampled_from(SWARMS))
    read_side = draw(st.integers(0, 1))  # every read of the program on one side of the expiry: retiring_readings
    calls = st.builds(BranchCall, lantern_calls(state, clock, swarm, read_side))
    branches = draw(st.lists(st.lists(calls, min_size=1, max_size=max_branch_ops), min_size=2, max_size=max_branches))
    return ParallelProgram(prefix, trim_branches(branches, max_concurrent_ops), T0, system=SYSTEM)


def programs(*, max_prefix_ops: int = 4, max_branches: int = 4, max_concurrent_ops: int = 12,
             max_branch_ops: int = 4) -> st.SearchStrategy[ParallelProgram]:
    """The lantern's parallel programs (the engine keeps those with a contested project)."""
    return _programs(max_prefix_ops, max_branches, max_concurrent_ops, max_branch_ops)


def race_problems(_db: Any, _state: LanternState, _keys: tuple[str, ...], _before: Any,
                  project: Mapping[str, Stored]) -> list[str]:
    """INV-1..INV-5 and SHAPE on every stored document after the race (as the lantern's contests check)."""
    return [str(violation) for violation in invariant_violations({p: item.data for p, item in project.items()})]


# A few programs in ci (its CI share is small: a repetition takes ~6 s on an idle machine, most of it the emulator's
# lock waits and the prefix's whole-project read-backs), up to 3 branches and 5 racing calls; its one partition
# (the whole project) makes every call of a program one search for the checker. The known-bad variants' run stops at
# the first failing program: 60 programs, not 40, since the swarm of the scheduled door and venue administration
# took a seventh of the programs from the contests #5 and A3 need (measured under load: A3's detection took from 3
# to 34 programs).
_CI = Budget(examples=3, known_bad_examples=60, shrink_seconds=10, minimize_seconds=15, max_branches=3,
             max_concurrent_ops=5)
BUDGETS = {
    "ci": _CI,
    "gate": _CI,  # the same as ci
    "thorough": Budget(examples=60, known_bad_examples=100, shrink_seconds=60, minimize_seconds=60, max_branches=4,
                       max_concurrent_ops=8),
}

SPEC = ParallelSpec(programs=programs, race_problems=race_problems, budgets=BUDGETS)
