"""Messages in the recipient's language (docs/contract.md §26): the drop's recipient_language,
else the business's setting; the business's own text in that language, else ours in it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from notifications import texts
from notifications.models import Channel, Kind, Message, NotificationTemplate
from notifications.selectors import templates_of
from notifications.services import TemplateIn, save_templates
from notifications.tasks import notify_recipients
from tests.factories import batch, drop, group
from tests.notifications.conftest import switch_on

KHMER_DELIVERED = "{business_name}៖ ឥវ៉ាន់ {client_reference} របស់អ្នកបានដល់ហើយ។ អរគុណ!"


def deliver(api, tenant, client_order_id: str, **language) -> None:
    response = api.bulk(batch(group({**drop(client_order_id), **language})), tenant.sandbox_key)
    assert response.status_code == 200, response.content
    moved = api.post(
        "/sandbox/orders/advance",
        {"identifiers": [client_order_id], "to": "DELIVERED"},
        tenant.sandbox_key,
    )
    assert moved.status_code == 200, moved.content
    notify_recipients.call()


def delivered_text(tenant, client_order_id: str) -> str:
    return Message.objects.get(
        business=tenant.business, client_order_id=client_order_id, kind=Kind.DELIVERED
    ).body


def test_our_default_texts_exist_in_khmer():
    khmer = texts.default_text(Channel.SMS, Kind.DELIVERED, "km")
    assert khmer.body == KHMER_DELIVERED
    assert texts.default_text(Channel.SMS, Kind.DELIVERED, "en").body.endswith("Thank you!")
    email = texts.default_text(Channel.EMAIL, Kind.FAILED, "km")
    assert email.subject.startswith("យើងមិនអាចដឹក")
    for channel in Channel:
        for kind in Kind:
            text = texts.default_text(channel, kind, "km")
            texts.check(text.subject)  # the translation keeps the variables usable
            texts.check(text.body)


@pytest.mark.django_db
def test_a_drop_in_khmer_gets_our_khmer_text_when_the_business_wrote_only_english(
    alice, api, open_for_business
):
    switch_on(alice, "sandbox", Kind.DELIVERED)  # English rows only
    deliver(api, alice, "KM-1", recipient_language="km")
    deliver(api, alice, "EN-1")  # no language: the business's setting, English here
    assert delivered_text(alice, "KM-1") == KHMER_DELIVERED.format(
        business_name="Alice Shop", client_reference="KM-1"
    )
    assert delivered_text(alice, "EN-1") == "Alice Shop: your order EN-1 was delivered. Thank you!"


@pytest.mark.django_db
def test_the_business_setting_chooses_when_the_drop_does_not(make_tenant, api, open_for_business):
    shop = make_tenant(name="Psar Shop", recipient_language="km")
    switch_on(shop, "sandbox", Kind.DELIVERED)
    deliver(api, shop, "K-1")
    deliver(api, shop, "E-1", recipient_language="en")
    assert delivered_text(shop, "K-1").startswith("Psar Shop៖ ឥវ៉ាន់ K-1")
    assert delivered_text(shop, "E-1") == "Psar Shop: your order E-1 was delivered. Thank you!"


@pytest.mark.django_db
def test_the_business_own_text_per_language(alice, api, open_for_business):
    switch_on(alice, "sandbox", Kind.DELIVERED)
    own = "{business_name}: បានដល់ {client_reference}"
    mine = [TemplateIn(Channel.SMS, Kind.DELIVERED, enabled=True, subject="", body=own)]
    save_templates(
        business=alice.business,
        environment="sandbox",
        templates=mine,
        now=timezone.now(),
        language="km",
    )
    deliver(api, alice, "KM-2", recipient_language="km")
    assert delivered_text(alice, "KM-2") == "Alice Shop: បានដល់ KM-2"
    shown = templates_of(business=alice.business, environment="sandbox", language="km")
    assert [t.body for t in shown if t.channel == "sms" and t.kind == Kind.DELIVERED] == [own]


@pytest.mark.django_db
def test_switching_a_message_off_in_one_language_switches_it_off_in_all(alice):
    switch_on(alice, "sandbox", Kind.DELIVERED)
    off = [TemplateIn(Channel.SMS, Kind.DELIVERED, enabled=False, subject="", body="{eta}")]
    save_templates(
        business=alice.business,
        environment="sandbox",
        templates=off,
        now=timezone.now(),
        language="km",
    )
    rows = NotificationTemplate.objects.filter(
        business=alice.business, channel=Channel.SMS, kind=Kind.DELIVERED
    )
    assert sorted(rows.values_list("language", "enabled")) == [("en", False), ("km", False)]
