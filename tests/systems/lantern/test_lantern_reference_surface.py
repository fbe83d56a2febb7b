"""The lantern reference's surface without Firestore: keyword-only operations, the error type, input rules
(validated before any clock reading or Firestore call, so `db=None` never gets touched) and the pure
decisions' write-sets (docs/lantern-contract.md)."""

from __future__ import annotations

import inspect
import pickle
from datetime import UTC, datetime, timedelta

import pytest

import reference.lantern as lantern
from reference.lantern.decide import LightRequest, decide_light, end_writes
from reference.lantern.errors import MESSAGES
from reference.lantern.records import StoredGuard, StoredLantern

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
REQUIRED = {
    "light_lantern": ["db", "user_id", "lantern_id", "venue_id", "latitude", "longitude"],
    "activate_scheduled_lantern": ["db", "user_id", "lantern_id", "venue_id", "scheduled_for"],
    "extinguish_lantern": ["db", "user_id", "lantern_id"],
    "read_active_lanterns": ["db"],
    "create_venue": ["db", "venue_id", "name", "latitude", "longitude", "radius_meters"],
    "delete_venue": ["db", "venue_id"],
}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_operations_are_keyword_only_with_an_explicit_clock(name):
    parameters = inspect.signature(getattr(lantern, name)).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    assert [k for k, p in parameters.items() if p.default is inspect.Parameter.empty] == REQUIRED[name]
    optional = set(parameters) - set(REQUIRED[name])
    assert optional == ({"attempt_log"} if name.endswith("venue") else {"clock", "attempt_log"})
    if "clock" in parameters:
        assert parameters["clock"].default is lantern.system_clock


def test_error_carries_its_code_alone():
    error = lantern.LanternError("lantern_not_active")
    assert str(error) == MESSAGES["lantern_not_active"] and repr(error) == "LanternError('lantern_not_active')"
    assert pickle.loads(pickle.dumps(error)).code == "lantern_not_active"
    with pytest.raises(ValueError):
        lantern.LanternError("lan-1 is secret")


def _code(function, **kwargs):
    try:
        function(db=None, **kwargs)
    except lantern.LanternError as error:
        return error.code
    raise AssertionError("no error")


LIGHT = {"user_id": "alice", "lantern_id": "lan-1", "venue_id": "bar", "latitude": 52.52, "longitude": 13.405}


@pytest.mark.parametrize(
    "change",
    [
        {"user_id": ""},
        {"user_id": "a/b"},
        {"lantern_id": "_x"},
        {"venue_id": "x" * 129},
        {"venue_id": 7},
        {"latitude": True},
        {"latitude": 90.5},
        {"longitude": float("nan")},
        {"longitude": "13.4"},
    ],
)
def test_light_inputs(change):
    assert _code(lantern.light_lantern, **{**LIGHT, **change}) == "invalid_lantern_input"


@pytest.mark.parametrize("scheduled_for", [datetime(2026, 3, 1), T0.astimezone(UTC).replace(tzinfo=None), "2026"])
def test_scheduled_for_must_be_aware_utc(scheduled_for):
    kwargs = {k: v for k, v in LIGHT.items() if k not in ("latitude", "longitude")}
    code = _code(lantern.activate_scheduled_lantern, **kwargs, scheduled_for=scheduled_for)
    assert code == "invalid_lantern_input"


@pytest.mark.parametrize("clock", [lambda: datetime(2026, 3, 1), lambda: "now", lambda: 1 / 0])
def test_an_untrusted_clock_decides_nothing(clock):
    assert _code(lantern.extinguish_lantern, user_id="a", lantern_id="b", clock=clock) == "lantern_unavailable"


@pytest.mark.parametrize("radius", [0, -1, 100_000.5, float("inf")])
def test_venue_radius(radius):
    code = _code(lantern.create_venue, venue_id="v", name="V", latitude=0, longitude=0, radius_meters=radius)
    assert code == "invalid_lantern_input"


def _lantern(**changes):
    values = dict(
        user_id="alice",
        venue_id="bar",
        status="active",
        source="manual",
        lit_at=T0,
        expires_at=T0 + timedelta(hours=2),
        scheduled_for=None,
        ended_at=None,
    )
    return StoredLantern(**{**values, **changes})


def test_end_write_set_guards_the_decrement_and_the_guard():
    stored = _lantern()
    mine, other = StoredGuard("lan-1", "bar", stored.expires_at), StoredGuard("lan-2", "bar", stored.expires_at)
    paths = [
        w.path for w in end_writes("lan-1", stored, status="extinguished", ended_at=T0, venue_exists=True, guard=mine)
    ]
    assert paths == ["lanterns/lan-1", "publicPins/lan-1", "venues/bar", "activeLanterns/alice"]
    paths = [
        w.path for w in end_writes("lan-1", stored, status="expired", ended_at=T0, venue_exists=False, guard=other)
    ]
    assert paths == ["lanterns/lan-1", "publicPins/lan-1"]


def test_relight_in_place_writes_no_counter():
    old = _lantern(lit_at=T0 - timedelta(hours=2), expires_at=T0)
    request = LightRequest("alice", "lan-2", "bar", "manual", None, T0)
    decision = decide_light(request, None, StoredGuard("lan-1", "bar", T0), old, old_venue_exists=True)
    assert [w.path for w in decision.writes] == [
        "lanterns/lan-1",
        "publicPins/lan-1",
        "lanterns/lan-2",
        "publicPins/lan-2",
        "activeLanterns/alice",
    ]
    with pytest.raises(lantern.LanternError) as raised:
        decide_light(request, None, StoredGuard("lan-1", "bar", T0), old, old_venue_exists=False)
    assert raised.value.code == "venue_not_found"
