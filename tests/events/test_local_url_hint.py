"""A webhook URL on one's own machine is refused in production with a way out for local
development: the message names WEBHOOK_ALLOW_PRIVATE_URLS (docs/webhooks.md), in the API and
on the dashboard's form alike. A malformed URL gets no such hint: the setting would not help.
"""

from __future__ import annotations

import html

import pytest

from events.models import WebhookEndpoint
from tests.dashboard.test_webhooks import add_endpoint
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

SETTING = "WEBHOOK_ALLOW_PRIVATE_URLS=true"
LOCAL_URLS = [
    "http://127.0.0.1:9000/hooks",  # plain http: "Must be an https URL."
    "http://localhost:9000/hooks",
    "https://127.0.0.1:9000/hooks",  # https, but a loopback address
]


@pytest.fixture
def production(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False


@pytest.mark.parametrize("url", LOCAL_URLS)
def test_the_api_names_the_setting_that_allows_a_local_url(alice, api, production, url):
    response = api.post("/webhook-endpoints", {"url": url}, alice.sandbox_key)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    [detail] = error["details"]
    assert detail["field"] == "url"
    assert SETTING in detail["message"]
    assert "local development" in detail["message"]
    assert not WebhookEndpoint.objects.exists()


def test_plain_http_still_says_https_first(alice, api, production):
    response = api.post("/webhook-endpoints", {"url": LOCAL_URLS[0]}, alice.sandbox_key)

    message = assert_error(response, 400, "VALIDATION_ERROR")["details"][0]["message"]
    assert message.startswith("Must be an https URL.")


def test_the_dashboard_form_names_the_setting_too(alice, alice_web, production):
    response = add_endpoint(alice_web, url=LOCAL_URLS[0])

    assert response.status_code == 400
    assert SETTING in html.unescape(response.content.decode())
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("url", ["ftp://x", "not a url", "http://"])
def test_a_malformed_url_gets_no_hint(alice, api, production, url):
    response = api.post("/webhook-endpoints", {"url": url}, alice.sandbox_key)

    message = assert_error(response, 400, "VALIDATION_ERROR")["details"][0]["message"]
    assert "WEBHOOK_ALLOW_PRIVATE_URLS" not in message


def test_with_the_setting_a_local_url_is_taken(alice, api, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    response = api.post("/webhook-endpoints", {"url": LOCAL_URLS[0]}, alice.sandbox_key)

    assert response.status_code == 201, response.content
