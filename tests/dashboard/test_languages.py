"""The dashboard's language (docs/contract.md §26): the user's switch, else the browser's,
else the business's dashboard_language; the notification texts edited per language."""

from __future__ import annotations

import pytest

from notifications.models import NotificationTemplate

pytestmark = pytest.mark.django_db

ORDERS_IN_KHMER = "ការកម្មង់"


def test_the_business_setting_speaks_when_the_browser_does_not(alice, alice_web):
    alice.business.dashboard_language = "km"
    alice.business.save(update_fields=["dashboard_language"])
    page = alice_web.get("/").content.decode()
    assert '<html lang="km">' in page and ORDERS_IN_KHMER in page
    english = alice_web.get("/", HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").content.decode()
    assert '<html lang="en">' in english and ">Orders<" in english


def test_the_switch_is_kept_for_the_next_pages(alice_web):
    switched = alice_web.get("/orders/", {"lang": "km"}, HTTP_ACCEPT_LANGUAGE="en")
    assert switched.status_code == 302 and switched["Location"] == "/orders/"
    page = alice_web.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert ORDERS_IN_KHMER in page


def test_the_notifications_page_edits_the_texts_of_one_language(alice, alice_web):
    page = alice_web.get("/notifications/?environment=sandbox&language=km").content.decode()
    assert "Alice Shop៖ ឥវ៉ាន់ ORDER-1001 របស់អ្នកបានដល់ហើយ។ អរគុណ!" in page  # our Khmer text
    body = "{business_name}: បានដល់ {client_reference}"
    data = {
        "environment": "sandbox",
        "language": "km",
        "action": "save",
        "sms-delivered-enabled": "on",
        "sms-delivered-body": body,
    }
    for channel, kind in [(c, k) for c in ("sms", "email") for k in ("dispatched", "nearby")]:
        data[f"{channel}-{kind}-body"] = "{tracking_url}"
        if channel == "email":
            data[f"{channel}-{kind}-subject"] = "{business_name}"
    for kind in ("failed",):
        data[f"sms-{kind}-body"] = "{tracking_url}"
    for kind in ("delivered", "failed"):
        data[f"email-{kind}-body"] = "{tracking_url}"
        data[f"email-{kind}-subject"] = "{business_name}"
    response = alice_web.post("/notifications/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == "/notifications/?environment=sandbox&language=km"
    stored = NotificationTemplate.objects.get(
        business=alice.business, channel="sms", kind="delivered", language="km"
    )
    assert (stored.body, stored.enabled) == (body, True)
    assert not NotificationTemplate.objects.filter(business=alice.business, language="en").exists()


def test_a_business_sets_its_recipients_and_dashboard_languages(alice, alice_web):
    response = alice_web.post(
        "/notifications/languages/", {"recipient_language": "km", "dashboard_language": "km"}
    )
    assert response.status_code == 302
    alice.business.refresh_from_db()
    assert (alice.business.recipient_language, alice.business.dashboard_language) == ("km", "km")
    refused = alice_web.post(
        "/notifications/languages/", {"recipient_language": "fr", "dashboard_language": "en"}
    )
    assert refused.status_code == 302
    alice.business.refresh_from_db()
    assert alice.business.recipient_language == "km"  # unchanged
