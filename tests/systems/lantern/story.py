"""One sequential story through every reachable row of the lantern transition table, shared by the model's
test (tests/systems/lantern/test_lantern_model.py) and the reference's
(tests/systems/lantern/test_lantern_reference.py), so both walk exactly the same calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from model.lantern import LANTERN_TTL, CreateVenue, DeleteVenue, Extinguish, Light, ReadActive, ScheduledLight

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
US = timedelta(microseconds=1)

# Three venues a few hundred metres apart in Berlin; "far" is inside none of them.
VENUES = {
    "bar": CreateVenue("bar", "Bar Lantern", 52.5200, 13.4050, 150),
    "club": CreateVenue("club", "Club Lantern", 52.5230, 13.4110, 100),
    "cafe": CreateVenue("cafe", "Cafe Lantern", 52.5170, 13.3990, 80),
    "hall": CreateVenue("hall", "Hall Lantern", 52.5100, 13.3900, 200),
}
SPOTS = {
    "bar": (52.5200, 13.4050),
    "bar_edge": (52.5210, 13.4050),  # ~111 m north of the bar: inside its 150 m
    "club": (52.5230, 13.4110),
    "cafe": (52.5171, 13.3990),
    "hall": (52.5100, 13.3900),
    "far": (52.5300, 13.4300),
}
H2 = LANTERN_TTL
FAR = SPOTS["far"]


def every_reachable_transition() -> list:
    """One sequential story that fires every reachable row: (operation, the transition it must fire)."""
    bar, club = SPOTS["bar"], SPOTS["club"]
    return [
        (VENUES["bar"], "create_venue.new"),
        (VENUES["bar"], "create_venue.exists"),
        (VENUES["club"], "create_venue.new"),
        (VENUES["cafe"], "create_venue.new"),
        (DeleteVenue("nowhere"), "delete_venue.absent"),
        (Light("alice", "lan-1", "nowhere", *bar, now=T0), "light.venue_missing"),
        (Light("alice", "lan-1", "bar", *FAR, now=T0), "light.outside_geofence"),
        (ScheduledLight("bob", "lan-2", "bar", T0 + US, now=T0), "scheduled_light.not_due"),
        (ScheduledLight("bob", "lan-2", "nowhere", T0, now=T0), "scheduled_light.venue_missing"),
        (Light("alice", "lan-1", "bar", *SPOTS["bar_edge"], now=T0), "light.new"),
        (Light("alice", "lan-1", "bar", *bar, now=T0 + US), "light.retry"),
        (Light("bob", "lan-1", "bar", *bar, now=T0), "light.id_taken"),
        (Light("alice", "lan-2", "club", *club, now=T0 + H2 - US), "light.guard_held"),
        (ScheduledLight("bob", "lan-2", "club", T0, now=T0), "scheduled_light.new"),
        (ScheduledLight("bob", "lan-2", "club", T0, now=T0 + H2 - US), "scheduled_light.retry"),
        (ScheduledLight("carol", "lan-2", "club", T0, now=T0), "scheduled_light.id_taken"),
        (ScheduledLight("bob", "lan-3", "club", T0, now=T0 + timedelta(hours=1)), "scheduled_light.guard_held"),
        (ReadActive(now=T0), "read_active.clean"),
        (Extinguish("carol", "lan-1", now=T0), "extinguish.not_owner"),
        (Extinguish("alice", "lan-9", now=T0), "extinguish.not_found"),
        (Extinguish("alice", "lan-1", now=T0 - US), "extinguish.clock_earlier"),
        (Light("alice", "lan-3", "club", *club, now=T0 + H2), "light.relight_elsewhere"),
        (ScheduledLight("bob", "lan-4", "club", T0, now=T0 + H2), "scheduled_light.relight_in_place"),
        (Extinguish("alice", "lan-3", now=T0 + H2 + US), "extinguish.active"),
        (Extinguish("alice", "lan-3", now=T0 + H2 + US), "extinguish.ended"),
        (ScheduledLight("carol", "lan-5", "cafe", T0, now=T0 + H2), "scheduled_light.new"),
        (DeleteVenue("cafe"), "delete_venue.deleted"),
        (ScheduledLight("carol", "lan-6", "bar", T0, now=T0 + 2 * H2), "scheduled_light.relight_old_venue_gone"),
        (Light("alice", "lan-7", "bar", *bar, now=T0 + 2 * H2), "light.new"),
        (Extinguish("alice", "lan-7", now=T0 + 3 * H2), "extinguish.expired"),
        (ScheduledLight("carol", "lan-8", "club", T0, now=T0 + 3 * H2), "scheduled_light.relight_elsewhere"),
        (ReadActive(now=T0 + 3 * H2), "read_active.retired"),  # bob's lan-4 expired at T0 + 2 h * 2
        (Light("carol", "lan-9", "club", *club, now=T0 + 4 * H2), "light.relight_in_place"),
        (CreateVenue("pub", "Pub", *FAR, 50), "create_venue.new"),
        (Light("bob", "lan-10", "pub", *FAR, now=T0 + 4 * H2), "light.new"),
        (DeleteVenue("pub"), "delete_venue.deleted"),
        (Extinguish("bob", "lan-10", now=T0 + 4 * H2 + US), "extinguish.active_venue_gone"),
        (CreateVenue("inn", "Inn", *FAR, 50), "create_venue.new"),
        (Light("alice", "lan-11", "inn", *FAR, now=T0 + 5 * H2), "light.new"),
        (Light("bob", "lan-12", "inn", *FAR, now=T0 + 5 * H2), "light.new"),
        (DeleteVenue("inn"), "delete_venue.deleted"),
        (Light("alice", "lan-13", "club", *club, now=T0 + 6 * H2), "light.relight_old_venue_gone"),
        (Extinguish("bob", "lan-12", now=T0 + 6 * H2), "extinguish.expired_venue_gone"),
    ]
