"""Tenant settings in their stored form and the layering rule (pure): what tenant_lib.lua reads, and
the same rule in Python for `fairway tenant show`, `fairway tenants` and the dashboard."""

from __future__ import annotations

import pytest

from fairway.queue.access.tenant_settings import checked_settings, decode, effective
from fairway.queue.protocol.calls import settings_fields
from fairway.resource.spec import TenantSettings


def test_the_stored_form_round_trips_and_leaves_unset_fields_empty() -> None:
    settings = TenantSettings(weight=3, rate=2.5)
    assert settings_fields(settings) == "3,,2.5,"
    assert decode(settings_fields(settings)) == settings
    assert decode(b"1,5,,10") == TenantSettings(weight=1, max_in_flight=5, burst=10)
    assert decode(None) == TenantSettings() and decode("garbage") == TenantSettings()


def test_each_field_comes_from_the_first_layer_that_sets_it() -> None:
    values, sources = effective(
        TenantSettings(max_in_flight=3), TenantSettings(weight=5, max_in_flight=20), TenantSettings(rate=50)
    )
    assert values == {"weight": 5, "max_in_flight": 3, "rate": 50, "burst": 50}
    assert sources == {"weight": "override", "max_in_flight": "run-time", "rate": "defaults", "burst": "built-in"}
    assert effective(TenantSettings(), TenantSettings(), TenantSettings())[0]["weight"] == 1
    assert effective(TenantSettings(rate=0.5), TenantSettings(), TenantSettings())[0]["burst"] == 1, "at least 1"


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"weight": 0}, "weight: must be at least 1, not 0"),
        ({"max_in_flight": -2}, "max_in_flight: must be at least 1"),
        ({"rate": 0}, "rate: must be at least 0.001"),
        ({"weight": 1001}, "weight: must be at most 1000"),
    ],
)
def test_bad_values_are_one_error_naming_the_field(given: dict[str, float], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        checked_settings(**given)
