"""The courier app's language (docs/couriers.md, "Language"): the phone's, else English; the
switch kept in a cookie; courier.js's words from the same catalogue; the served font allowed."""

from __future__ import annotations

import json

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_sign_in_page_speaks_the_phones_language():
    khmer = Client().get("/courier/sign-in", HTTP_ACCEPT_LANGUAGE="km-KH,km;q=0.9")
    page = khmer.content.decode()
    assert '<html lang="km">' in page
    assert "ពាក្យសម្ងាត់" in page and ">Password<" not in page
    english = Client().get("/courier/sign-in").content.decode()
    assert '<html lang="en">' in english and ">Password<" in english


def test_the_switch_is_kept_for_the_next_pages():
    client = Client()
    assert client.get("/courier/sign-in", {"lang": "km"}).status_code == 302
    assert "ពាក្យសម្ងាត់" in client.get("/courier/sign-in").content.decode()


def test_courier_js_reads_its_words_in_the_same_language():
    catalogue = Client().get("/courier/jsi18n/", HTTP_ACCEPT_LANGUAGE="km").content.decode()
    assert json.dumps("ស្កេនកូដ") in catalogue  # "Scan code", as the catalogue escapes it


def test_the_pages_may_load_the_served_font():
    policy = Client().get("/courier/sign-in")["Content-Security-Policy"]
    assert "font-src 'self'" in policy
