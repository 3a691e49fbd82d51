"""The webhook settings (config/settings.py): defaults of docs/contract.md §11, bad values
refused."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.strict_env import env_int_list


def test_the_defaults_are_the_designs():
    assert settings.WEBHOOK_RETRY_SCHEDULE == [5, 300, 1800, 7200, 18000, 36000, 36000]
    assert settings.WEBHOOK_DISABLE_AFTER_DAYS == 5
    assert settings.WEBHOOK_TIMEOUT_SECONDS == 10
    assert settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS == 3
    assert settings.WEBHOOK_CONCURRENCY == 100 and settings.WEBHOOK_PER_ENDPOINT == 5
    assert settings.EVENT_RETENTION_DAYS == 30
    assert settings.WEBHOOK_ALLOW_PRIVATE_URLS is False


def test_a_schedule_is_comma_separated_seconds(monkeypatch):
    monkeypatch.setenv("WEBHOOK_RETRY_SCHEDULE", " 1, 2 ,60 ")
    assert env_int_list("WEBHOOK_RETRY_SCHEDULE", [5], minimum=1) == [1, 2, 60]
    monkeypatch.setenv("WEBHOOK_RETRY_SCHEDULE", "")
    assert env_int_list("WEBHOOK_RETRY_SCHEDULE", [5], minimum=1) == [5]


@pytest.mark.parametrize("raw", ["5,,300", "5;300", "5s,300", "1.5", "0,5", "-5", ","])
def test_a_bad_schedule_stops_the_start_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("WEBHOOK_RETRY_SCHEDULE", raw)
    with pytest.raises(ImproperlyConfigured, match="WEBHOOK_RETRY_SCHEDULE"):
        env_int_list("WEBHOOK_RETRY_SCHEDULE", [5], minimum=1)
