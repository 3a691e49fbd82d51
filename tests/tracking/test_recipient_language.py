"""The recipient's language (docs/contract.md §26): a drop's recipient_language, checked and
echoed by the API, and the tracking page's language: the recipient's switch, else the
drop's, else their browser's, else the business's setting; Khmer dates where Khmer is read."""

from __future__ import annotations

import json

import pytest
from django.http import HttpResponse
from django.test import Client, RequestFactory

from core.languages import SWITCH_PARAM, LanguageMiddleware
from orders.links import TRACKING_PATH, tracking_token
from orders.models import Drop
from tests.factories import batch, drop, group

KHMER_STATUS = "កំពុងរង់ចាំអ្នកដឹក"  # "Waiting for a courier"
ENGLISH_STATUS = "Waiting for a courier"
NOVEMBER_IN_KHMER = "វិច្ឆិកា"


def placed(api, tenant, client_order_id: str, **language) -> Drop:
    entry = {**drop(client_order_id), **language}
    response = api.bulk(batch(group(entry)), tenant.key())
    assert response.status_code == 200, response.content
    [result] = response.json()["data"]["orders"]
    assert result["status"] == "accepted", result
    return Drop.objects.get(pk=result["drop_id"])


def page(row: Drop, **headers):
    return Client().get(f"{TRACKING_PATH}{tracking_token(row.pk)}", **headers)


def test_a_bad_recipient_language_is_400_naming_the_field(open_for_business, alice, api):
    entry = {**drop("A-1"), "recipient_language": "fr"}
    response = api.bulk(batch(group(entry)), alice.key(), headers={"Accept-Language": "km"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    [problem] = error["details"]
    assert problem["field"] == "orders[0].dropoff[0].recipient_language"
    assert problem["message"] == "Must be one of en, km."  # English, whatever the headers
    assert Drop.objects.count() == 0


def test_recipient_language_is_stored_and_echoed_in_tracking(open_for_business, alice, api):
    placed(api, alice, "KM-1", recipient_language="km")
    placed(api, alice, "NONE-1")
    response = api.track(["KM-1", "NONE-1"], alice.key())
    assert response.status_code == 200, response.content
    echoed = {
        e["client_order_id"]: e["recipient_language"] for e in response.json()["data"]["orders"]
    }
    assert echoed == {"KM-1": "km", "NONE-1": None}


def test_the_page_speaks_the_drops_language_before_the_browsers(open_for_business, alice, api):
    row = placed(api, alice, "KM-1", recipient_language="km")
    response = page(row, HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9")
    text = response.content.decode()
    assert response.status_code == 200
    assert '<html lang="km">' in text
    assert KHMER_STATUS in text and ENGLISH_STATUS not in text
    assert NOVEMBER_IN_KHMER in text  # its times, with Khmer month names
    assert response["Content-Language"] == "km"


def test_the_recipients_switch_wins_and_is_kept_in_a_cookie(open_for_business, alice, api):
    row = placed(api, alice, "KM-1", recipient_language="km")
    client = Client()
    path = f"{TRACKING_PATH}{tracking_token(row.pk)}"
    switched = client.get(path, {SWITCH_PARAM: "en"})
    assert switched.status_code == 302
    assert switched["Location"] == path
    assert switched.cookies["django_language"].value == "en"
    text = client.get(path).content.decode()
    assert ENGLISH_STATUS in text and KHMER_STATUS not in text
    assert '<html lang="en">' in text


@pytest.mark.parametrize(
    ("business_language", "accept", "expected"),
    [
        ("km", "", KHMER_STATUS),  # nothing else says: the business's setting
        ("en", "", ENGLISH_STATUS),
        ("en", "km-KH,km;q=0.9,en;q=0.5", KHMER_STATUS),  # the browser's before the business's
        ("km", "en-GB,en;q=0.8", ENGLISH_STATUS),
    ],
)
def test_without_a_drop_language_the_browser_then_the_business_decide(
    open_for_business, make_tenant, api, business_language, accept, expected
):
    tenant = make_tenant(recipient_language=business_language)
    row = placed(api, tenant, "X-1")
    headers = {"HTTP_ACCEPT_LANGUAGE": accept} if accept else {}
    assert expected in page(row, **headers).content.decode()


def test_the_switch_comes_back_to_our_own_site():
    request = RequestFactory().get("/", {SWITCH_PARAM: "km", "page": "2"})
    request.path = "//evil.example/x"  # what a path with two leading slashes would be
    response = LanguageMiddleware(lambda request: HttpResponse())(request)
    assert response.status_code == 302
    assert response["Location"] == "/evil.example/x?page=2"


def test_an_edit_may_send_the_language_back_but_not_change_it(open_for_business, alice, api):
    row = placed(api, alice, "KM-1", recipient_language="km")

    def patch(body):
        return api.client.patch(
            f"/api/v1/orders/{row.pk}",
            json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {alice.key()}",
        )

    same = patch({"recipient_language": "km", "notes": "Blue gate"})
    assert same.status_code == 200, same.content
    changed = patch({"recipient_language": "en"})
    assert changed.status_code == 409
    error = changed.json()["error"]
    assert error["code"] == "NOT_EDITABLE"
    assert [d["field"] for d in error["details"]] == ["recipient_language"]
    row.refresh_from_db()
    assert (row.recipient_language, row.notes) == ("km", "Blue gate")
