"""The pure parts of the lantern state machine (tests/systems/lantern/machine.py): where its callers stand,
the calls its Bundles hold, and its budget per profile. The machine itself runs on the emulator."""

from __future__ import annotations

import pytest

from fencecheck.suites import hypothesis_profiles
from model.lantern import Light, ScheduledLight, within_geofence
from tests.systems.lantern.machine import BUDGETS, POSITIONS, SITES, LanternCall, caller_position, machine_settings
from tests.systems.lantern.story import T0, US, VENUES

INSIDE = {"centre", "inside_edge"}
OUTSIDE = {"outside_edge", "far"}


@pytest.mark.parametrize("site", SITES)
def test_callers_stand_where_their_position_names_say(site):
    venue = VENUES[site]
    inside = {where for where in POSITIONS
              if within_geofence(venue.latitude, venue.longitude, venue.radius_meters, *caller_position(venue, where))}
    assert INSIDE <= inside and not OUTSIDE & inside
    assert INSIDE | OUTSIDE | {"on_edge"} == set(POSITIONS)  # on the edge: either, as long as both sides agree


def test_positions_outside_one_venue_are_inside_no_other():
    # "outside_edge" must mean outside the geofence, not inside a neighbour's: the sites are far enough apart.
    for site in SITES:
        spot = caller_position(VENUES[site], "outside_edge")
        assert not any(within_geofence(v.latitude, v.longitude, v.radius_meters, *spot) for v in VENUES.values())


def test_a_lantern_call_is_made_again_unchanged_but_for_the_time():
    manual = LanternCall("alice", "lan-1", "bar-1", (52.52, 13.405), None)
    scheduled = LanternCall("bob", "lan-2", "club-2", None, T0)
    assert manual.at(T0) == Light("alice", "lan-1", "bar-1", 52.52, 13.405, now=T0)
    assert manual.at(T0 + US) == Light("alice", "lan-1", "bar-1", 52.52, 13.405, now=T0 + US)
    assert scheduled.at(T0 + US) == ScheduledLight("bob", "lan-2", "club-2", T0, now=T0 + US)


@pytest.fixture
def selected_profile():
    before = hypothesis_profiles.selected_name()
    yield hypothesis_profiles.select
    hypothesis_profiles.select(before)


@pytest.mark.parametrize("profile", sorted(BUDGETS))
def test_each_profile_gets_the_machines_own_budget(profile, selected_profile):
    selected_profile(profile)
    chosen = machine_settings()
    budget = BUDGETS[profile]
    assert (chosen.max_examples, chosen.stateful_step_count) == (budget["max_examples"], budget["stateful_step_count"])
    assert chosen.deadline is None  # the rest is the profile's (hypothesis_profiles.machine_settings)


def test_thorough_is_a_larger_budget_than_ci():
    ci, thorough = BUDGETS["ci"], BUDGETS["thorough"]
    assert thorough["max_examples"] > ci["max_examples"] and thorough["stateful_step_count"] > ci["stateful_step_count"]
    assert BUDGETS["gate"] == ci  # the gate is ci, derandomized
