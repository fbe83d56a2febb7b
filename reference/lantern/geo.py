"""The pinned geofence: haversine distance on a sphere of 6,371,008.8 m; inside iff distance <= radius.

The same expression as model/lantern/geo.py, operation for operation (the unit tests check they agree)."""

from __future__ import annotations

import math

EARTH_RADIUS_METERS = 6_371_008.8


def distance_meters(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    d_phi = phi2 - phi1
    d_lambda = math.radians(lng2 - lng1)
    h = math.sin(d_phi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(d_lambda / 2) ** 2
    return 2 * EARTH_RADIUS_METERS * math.asin(math.sqrt(min(1.0, h)))


def within_geofence(venue_lat: float, venue_lng: float, radius_meters: float, lat: float, lng: float) -> bool:
    return distance_meters(venue_lat, venue_lng, lat, lng) <= radius_meters
