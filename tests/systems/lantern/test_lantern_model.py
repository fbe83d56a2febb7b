"""Laws of the lantern model (no emulator): random operation sequences over three venues, three users and a
handful of lantern ids, with clock readings steered at the stored lit and expiry times so that the 2 h
boundary, earlier readings, relights and retries happen often (docs/lantern-contract.md)."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference.lantern
from model.lantern import (
    ERROR_CODES,
    LANTERN_TTL,
    OUTCOMES,
    REACHABLE_IDS,
    TRANSITION_IDS,
    TRANSITIONS,
    TRANSITIONS_BY_ID,
    DeleteVenue,
    Extinguish,
    FaultKind,
    InjectFault,
    LanternState,
    Light,
    ReadActive,
    ScheduledLight,
    describe_op,
    describe_state,
    distance_meters,
    documents,
    fault_applies,
    guard_path,
    invariant_violations,
    lantern_path,
    operation_name,
    pin_path,
    step,
    venue_path,
    within_geofence,
    write_set_violations,
)
from model.lantern.state import Lantern
from reference.lantern import geo as reference_geo
from reference.lantern import paths as reference_paths
from tests.systems.lantern.story import H2, SPOTS, T0, US, VENUES
from tests.systems.lantern.story import every_reachable_transition as _scenario

USERS = ("alice", "bob", "carol")
LANTERN_IDS = tuple(f"lan-{n}" for n in range(1, 13))
READ_ONLY_TRANSITIONS = {row.id for row in TRANSITIONS if not row.writes}


def typed(docs: dict) -> dict:
    """Documents compared with value types (True == 1 and 1 == 1.0 in Python, but not in Firestore)."""
    return {path: tuple((k, type(v).__name__, v) for k, v in sorted(doc.items())) for path, doc in docs.items()}


def logically_active(state: LanternState, now: datetime) -> list[tuple[str, Lantern]]:
    return [(lantern_id, lantern) for lantern_id, lantern in state.lanterns if lantern.active_at(now)]


def check_step(state: LanternState, op, faulted: list[bool]) -> LanternState:
    """Step once and assert every per-step law; returns the new state."""
    before_docs = typed(documents(state))
    before_copy = pickle.loads(pickle.dumps(state))
    new_state, result = step(state, op)

    # step never mutates its input, and is deterministic.
    assert state == before_copy
    assert typed(documents(state)) == before_docs
    assert step(state, op) == (new_state, result)
    hash(new_state)

    # The transition row exists and agrees with the result.
    assert result.transition in TRANSITION_IDS
    row = TRANSITIONS_BY_ID[result.transition]

    # What the checker's greedy placement relies on (LANTERN.commutes_when_read_only): an error answer leaves the
    # state itself unchanged; a success other than a read of the active lanterns writes, or is the idempotent
    # retry of a light whose lantern exists (lanterns are never deleted: in every later state the same call
    # answers lit only as that retry).
    if not isinstance(op, InjectFault):
        if result.code is not None:
            assert new_state is state and not result.wrote
        elif not isinstance(op, ReadActive) and not result.wrote:
            assert result.transition.endswith(".retry") and state.lantern(op.lantern_id) is not None
            assert new_state is state
    assert row.operation == operation_name(op)
    assert row.outcome == (result.outcome or result.code)
    assert row.writes == result.wrote
    if row.operation != "fault":
        assert (result.outcome is None) != (result.code is None)
        assert result.outcome in OUTCOMES or result.code in ERROR_CODES
        assert row.reachable or faulted[0], (result.transition, describe_op(op, epoch=T0))

    # Read-only answers (every error among them) leave the state itself; writes change documents.
    after_docs = typed(documents(new_state))
    if not result.wrote:
        assert new_state is state
        assert result.transition in READ_ONLY_TRANSITIONS
    else:
        assert after_docs != before_docs
        assert result.code is None
    if result.code is not None:
        assert new_state is state

    # The answer is exact.
    if result.outcome == "lit":
        lantern = new_state.lantern(op.lantern_id)
        assert lantern.active_at(op.now) and lantern.user_id == op.user_id and lantern.venue_id == op.venue_id
        assert result.output["lanternId"] == op.lantern_id
        assert (result.lantern.lit_at, result.lantern.expires_at) == (lantern.lit_at, lantern.expires_at)
        assert lantern.expires_at == lantern.lit_at + LANTERN_TTL
        assert new_state.guard(op.user_id).lantern_id == op.lantern_id
        # INV-1 at the moment of the answer: the user has exactly this one active lantern.
        assert [lid for lid, lan in logically_active(new_state, op.now) if lan.user_id == op.user_id] == [op.lantern_id]
    if result.outcome in ("extinguished", "expired"):
        lantern = new_state.lantern(op.lantern_id)
        assert lantern.status == result.outcome and not lantern.stored_active
        assert state.lantern(op.lantern_id).stored_active
    if isinstance(op, ReadActive):
        expected = [lantern_id for lantern_id, _lan in logically_active(state, op.now)]
        assert [view.lantern_id for view in result.lanterns] == expected
        assert not any(lantern.stored_active and op.now >= lantern.expires_at for _id, lantern in new_state.lanterns)
        assert all(set(view.to_json()) == {"lanternId", "venueId", "litAt", "expiresAt"} for view in result.lanterns)

    # Lanterns are never deleted, and an ended lantern never changes again.
    for lantern_id, old in state.lanterns:
        new = new_state.lantern(lantern_id)
        assert new is not None
        if not old.stored_active:
            assert new is old

    if isinstance(op, InjectFault):
        applies = fault_applies(state, op)
        assert result.transition == ("fault.not_applicable" if not applies else f"fault.{op.kind.value}")
        faulted[0] = faulted[0] or applies

    violations = invariant_violations(new_state)
    assert violations == invariant_violations(documents(new_state))
    if not faulted[0]:
        assert violations == ()
        assert all(venue.active_lantern_count >= 0 for _id, venue in new_state.venues)
    else:
        # Faults break only what they are meant to break: INV-2 (stranded guard) and INV-3 (drift).
        assert {v.invariant for v in violations} <= {"INV-2", "INV-3"}
    return new_state


def steered_op(data, state: LanternState, clock: datetime, allow_faults: bool):
    """One operation aimed at stored lit and expiry times, so that boundaries, earlier readings, relights,
    retries and contests happen often."""
    kinds = ["light"] * 6 + ["scheduled"] * 3 + ["retry"] * 2 + ["extinguish"] * 4 + ["read"] * 2 + ["create"]
    kinds += ["delete"] if data.draw(st.booleans()) else ["read"]
    if allow_faults:
        kinds += ["fault", "fault"]
    kind = data.draw(st.sampled_from(kinds))
    times = [clock, clock, clock + timedelta(minutes=30), clock + timedelta(hours=1), clock - US]
    for _id, lantern in state.lanterns[-4:]:
        times += [lantern.lit_at - US, lantern.expires_at - US, lantern.expires_at, lantern.expires_at + US]
    now = data.draw(st.sampled_from(times))
    guarded = [user for user, _guard in state.guards]
    user = data.draw(st.sampled_from(list(USERS) + guarded * 2))
    fresh = [name for name in VENUES if name not in state.retired_venue_ids]
    if kind == "create" and fresh:  # venue ids are never reused
        return VENUES[data.draw(st.sampled_from(fresh))]
    existing = [venue_id for venue_id, _venue in state.venues]
    if kind == "delete":  # mostly a venue where some lantern burns, so that relights meet a deleted old venue
        burning = [lantern.venue_id for _id, lantern in state.stored_active() if state.venue(lantern.venue_id)]
        return DeleteVenue(data.draw(st.sampled_from(burning * 3 + list(VENUES))))
    if kind in ("read", "create") or (kind == "retry" and not state.lanterns):
        return ReadActive(now=now)
    if kind == "retry":  # the same call again (a whole-call retry), or one aimed at an existing lantern id
        lantern_id, lantern = data.draw(st.sampled_from(state.lanterns))
        if lantern.source == "scheduled":
            return ScheduledLight(lantern.user_id, lantern_id, lantern.venue_id, lantern.scheduled_for, now=now)
        return Light(lantern.user_id, lantern_id, lantern.venue_id, *SPOTS[lantern.venue_id], now=now)
    stored = [lantern_id for lantern_id, _lan in state.lanterns]
    if kind == "extinguish":
        owned = [lid for lid, lan in state.lanterns if lan.user_id == user]
        lantern_id = data.draw(st.sampled_from(owned * 3 + stored + ["lan-none"]))
        return Extinguish(user, lantern_id, now=now)
    if kind == "fault":
        fault = data.draw(st.sampled_from(tuple(FaultKind)))
        subject = user if fault is FaultKind.STRANDED_GUARD else data.draw(st.sampled_from(list(VENUES)))
        return InjectFault(fault, subject, now=now)
    unused = [lid for lid in LANTERN_IDS if state.lantern(lid) is None]
    lantern_id = data.draw(st.sampled_from((unused or list(LANTERN_IDS)) * 3 + list(LANTERN_IDS)))
    venue = data.draw(st.sampled_from(existing * 4 + list(VENUES)))
    if kind == "scheduled":
        scheduled_for = data.draw(st.sampled_from([now, now - timedelta(minutes=5), now + US]))
        return ScheduledLight(user, lantern_id, venue, scheduled_for, now=now)
    spot = data.draw(st.sampled_from([venue, venue, venue, "bar_edge", "far"]))
    return Light(user, lantern_id, venue, *SPOTS[spot], now=now)


def steered_run(data, allow_faults: bool, length: int = 40) -> LanternState:
    state = LanternState.empty()
    faulted = [False]
    for name in data.draw(st.lists(st.sampled_from(list(VENUES)), min_size=1, max_size=4, unique=True)):
        state = check_step(state, VENUES[name], faulted)
    clock = T0
    for _ in range(data.draw(st.integers(0, length))):
        op = steered_op(data, state, clock, allow_faults)
        state = check_step(state, op, faulted)
        clock = max(clock, getattr(op, "now", None) or clock)
    describe_state(state, epoch=T0)
    return state


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_laws_hold_on_every_reachable_state(data):
    steered_run(data, allow_faults=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_laws_hold_with_faults(data):
    steered_run(data, allow_faults=True)


# --- the transition table ---------------------------------------------------------------------------------------


def test_table_rows_are_well_formed():
    for row in TRANSITIONS:
        assert row.outcome is None if row.operation == "fault" else row.outcome in OUTCOMES + ERROR_CODES
        if row.outcome in ERROR_CODES:
            assert not row.writes, row.id  # errors never write


def test_both_light_doors_share_one_contract():
    """The #889 rule: the manual and scheduled doors carry the same rows, bar one door-specific precheck."""

    def rows(door):
        return {
            (row.id.split(".", 1)[1], row.from_state, row.outcome, row.writes, row.reachable)
            for row in TRANSITIONS
            if row.operation == door
        }

    manual, scheduled = rows("light"), rows("scheduled_light")
    assert {r[0] for r in manual - scheduled} == {"outside_geofence"}
    assert {r[0] for r in scheduled - manual} == {"not_due"}


def test_every_reachable_transition_fires_in_one_sequential_scenario():
    state, fired = LanternState.empty(), set()
    faulted = [False]
    for op, expected in _scenario():
        assert step(state, op)[1].transition == expected, describe_op(op, epoch=T0)
        state = check_step(state, op, faulted)
        fired.add(expected)
    assert REACHABLE_IDS - fired == set()
    assert state.venue("club").active_lantern_count == 2  # carol's lan-9 and alice's lan-13
    assert invariant_violations(state) == ()


def test_unreachable_rows_are_race_only_damage_only_or_faults():
    unreachable = {row.id for row in TRANSITIONS if not row.reachable}
    assert unreachable == {
        "light.relight_in_place_venue_gone",
        "scheduled_light.relight_in_place_venue_gone",
        "light.stranded_guard",
        "scheduled_light.stranded_guard",
        "any.unrecognized",
        "fault.stranded_guard",
        "fault.counter_drift",
        "fault.not_applicable",
    }


# --- faults, D2 and the findings as observable violations --------------------------------------------------------


def _lit(*ops):
    state = LanternState.empty()
    for op in (VENUES["bar"], VENUES["club"], *ops):
        state, _result = step(state, op)
    return state


def test_a_stranded_guard_breaks_inv2_and_the_next_light_heals_it():
    """#4 as it shows: the guard outlives its extinguished lantern. D2 treats it as absent on the next light."""
    state = _lit(Light("alice", "lan-1", "bar", *SPOTS["bar"], now=T0))
    state, result = step(state, InjectFault(FaultKind.STRANDED_GUARD, "alice", now=T0 + timedelta(minutes=5)))
    assert result.transition == "fault.stranded_guard"
    assert [v.invariant for v in invariant_violations(state)] == ["INV-2"]
    assert state.lantern("lan-1").status == "extinguished" and state.venue("bar").active_lantern_count == 0
    # Without D2 this would be lantern_already_active for up to 2 h; with D2 it lights and overwrites the guard.
    state, result = step(state, Light("alice", "lan-2", "club", *SPOTS["club"], now=T0 + timedelta(minutes=6)))
    assert result.transition == "light.stranded_guard" and result.outcome == "lit"
    assert invariant_violations(state) == ()


def test_counter_drift_is_permanent():
    """#5 as it shows: one extra decrement; nothing in the layer recomputes the counter (seed non-goal)."""
    state = _lit(Light("alice", "lan-1", "bar", *SPOTS["bar"], now=T0))
    state, _ = step(state, InjectFault(FaultKind.COUNTER_DRIFT, "bar"))
    for op in (
        Extinguish("alice", "lan-1", now=T0 + US),
        Light("bob", "lan-2", "bar", *SPOTS["bar"], now=T0 + US),
        ReadActive(now=T0 + 3 * H2),
    ):
        state, _ = step(state, op)
        assert [str(v) for v in invariant_violations(state)] == [
            f"INV-3 venues/bar: activeLanternCount {state.venue('bar').active_lantern_count}, active lanterns "
            f"{state.venue('bar').active_lantern_count + 1}"
        ]
    assert state.venue("bar").active_lantern_count == -1


def _good_documents():
    state = _lit(
        Light("alice", "lan-1", "bar", *SPOTS["bar"], now=T0),
        Light("bob", "lan-2", "bar", *SPOTS["bar"], now=T0),
        Extinguish("bob", "lan-2", now=T0 + US),
    )
    docs = documents(state)
    assert invariant_violations(docs) == ()
    return docs


def _invariants(docs):
    return sorted({v.invariant for v in invariant_violations(docs)})


def test_finding_4_guard_cleared_after_commit_leaves_a_stranded_guard():
    docs = _good_documents()
    docs[guard_path("bob")] = {"lanternId": "lan-2", "venueId": "bar", "expiresAt": T0 + H2}
    assert _invariants(docs) == ["INV-2"]


def test_finding_5_read_then_write_extinguish_double_decrements():
    docs = _good_documents()
    docs[venue_path("bar")]["activeLanternCount"] -= 1
    assert _invariants(docs) == ["INV-3"]


def test_a_query_serialized_light_leaves_two_active_lanterns():
    """The #889 lesson (INV-5): a light that checked an empty query instead of writing the guard."""
    docs = _good_documents()
    docs[lantern_path("lan-3")] = {**docs[lantern_path("lan-1")], "venueId": "club"}
    docs[pin_path("lan-3")] = {**docs[pin_path("lan-1")], "venueId": "club"}
    docs[venue_path("club")]["activeLanternCount"] += 1
    assert _invariants(docs) == ["INV-1", "INV-5"]


def test_a_batch_end_that_forgot_the_pin_breaks_atomicity():
    docs = _good_documents()
    docs[pin_path("lan-2")] = {"venueId": "bar", "litAt": T0, "expiresAt": T0 + H2}
    assert _invariants(docs) == ["INV-4"]


def test_finding_13_the_rejected_c1_upsert_resurrects_a_ghost_venue():
    """#13 itself shows as an answer (a relight that fails instead of lighting, old lantern left active);
    the rejected C1 fix would show as a partial venue document."""
    docs = _good_documents()
    docs[venue_path("gone")] = {"activeLanternCount": -1}
    assert _invariants(docs) == ["SHAPE"]


def test_write_set_rules():
    light = [lantern_path("l"), pin_path("l"), venue_path("v"), guard_path("u")]
    assert write_set_violations(light) == ()
    assert write_set_violations([venue_path("v")]) == ()  # admin create/delete
    assert write_set_violations([lantern_path("l"), venue_path("v"), guard_path("u")]) == (
        "lantern l and its pin not written together",
    )
    assert write_set_violations([guard_path("u")]) == ("a guard written without any lantern",)
    assert write_set_violations([venue_path("v"), venue_path("w")]) == ("several venues written without any lantern",)


# --- agreement with the reference's own copies --------------------------------------------------------------------


def test_paths_codes_and_ttl_agree_with_the_reference():
    assert set(ERROR_CODES) == set(reference.lantern.ERROR_CODES)
    assert reference_paths.LANTERN_TTL == LANTERN_TTL
    for name in ("venue_path", "lantern_path", "pin_path", "guard_path"):
        assert getattr(reference_paths, name)("x-1") == globals()[name]("x-1")


coordinates = st.tuples(st.floats(-89.9, 89.9), st.floats(-179.9, 179.9))


@settings(max_examples=300, deadline=None)
@given(coordinates, coordinates, st.floats(1, 100_000))
def test_geofence_agrees_with_the_reference(venue, spot, radius):
    assert distance_meters(*venue, *spot) == reference_geo.distance_meters(*venue, *spot)
    assert within_geofence(*venue, radius, *spot) == reference_geo.within_geofence(*venue, radius, *spot)


@pytest.mark.parametrize(("spot", "inside"), [("bar", True), ("bar_edge", True), ("club", False), ("far", False)])
def test_geofence_examples(spot, inside):
    bar = VENUES["bar"]
    assert within_geofence(bar.latitude, bar.longitude, bar.radius_meters, *SPOTS[spot]) is inside
