"""The API stays English whatever the headers (docs/contract.md §26): codes, fields and
messages are a contract, not prose."""

from __future__ import annotations

from django.test import Client


def test_the_api_answers_in_english_to_a_khmer_browser(db):
    response = Client().get("/api/v1/account", HTTP_ACCEPT_LANGUAGE="km")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["message"] == "Authentication credentials were not provided."
    assert response.get("Content-Language", "en") == "en"


def test_the_api_ignores_the_language_cookie_and_switch(db):
    client = Client()
    client.cookies["django_language"] = "km"
    response = client.get("/api/v1/account", {"lang": "km"}, HTTP_ACCEPT_LANGUAGE="km")
    assert response.status_code == 401  # not the switch's redirect
    assert response.json()["error"]["message"] == "Authentication credentials were not provided."


def test_the_operator_console_stays_english(db):
    page = Client().get("/admin/login/", HTTP_ACCEPT_LANGUAGE="km").content.decode()
    assert '<html lang="en"' in page and "Log in" in page
