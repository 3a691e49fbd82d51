"""One format for times across the console: lists, read-only pages, inlines,
the index and History read "25 Nov 2026, 19:38 UTC+7", as the dashboard does, never the
locale's "Nov. 25, 2026, 7:38 p.m." without a zone."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import models
from django.test import Client
from django.urls import reverse

from accounts.models import Business
from billing.models import Invoice
from billing.services import post_wallet_entry
from geo.models import GeocodeResult
from orders.models import DropStatus, IdempotencyRecord
from tests.factories import DriverFactory
from tests.tracking.helpers import drop_in

pytestmark = pytest.mark.django_db

MOMENT = datetime(2026, 11, 25, 12, 38, tzinfo=UTC)  # 19:38 in Phnom Penh
SHOWN = "25 Nov 2026, 19:38"
DAY = date(2026, 11, 25)
# Django's en locale: "Nov. 25, 2026, 7:38 p.m.", "Nov. 25, 2026", "midnight", "noon".
LOCALE_FORMAT = re.compile(r"\b[A-Z][a-z]{2}\. \d{1,2}, \d{4}|\b[ap]\.m\.|\bmidnight\b|\bnoon\b")


@pytest.fixture
def superuser() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.com", "pw"))
    return client


@pytest.fixture
def everything(make_tenant, region) -> None:
    """A row of every console model, each date and time of every row at MOMENT (DAY)."""
    tenant = make_tenant(name="Kep Crab", stage="live", billing="invoiced")
    business = tenant.business
    Business.objects.filter(pk=business.pk).update(live_requested_at=MOMENT)
    drop = drop_in(DropStatus.ASSIGNED, business=business, environment="live")
    IdempotencyRecord.objects.create(
        business=business,
        environment="live",
        key=uuid.uuid4(),
        fingerprint="f",
        batch=drop.batch,
        created_at=MOMENT,
    )
    Invoice.objects.create(
        business=business, environment="live", period="2026-10", accrued=Decimal("1.00")
    )
    GeocodeResult.objects.create(provider="gazetteer", key="wat phnom", found=False)
    post_wallet_entry(business=business, environment="sandbox", amount=Decimal("5.00"))
    DriverFactory(name="Sokha")
    for model in admin.site._registry:
        at_moment = {
            f.name: MOMENT if isinstance(f, models.DateTimeField) else DAY
            for f in model._meta.concrete_fields
            if isinstance(f, models.DateField)
        }
        if at_moment:
            model._default_manager.update(**at_moment)


def console_pages() -> list[str]:
    """Every registered model's list, and the page of its first row."""
    pages = []
    for model in admin.site._registry:
        info = (model._meta.app_label, model._meta.model_name)
        pages.append(reverse("admin:{}_{}_changelist".format(*info)))
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            pages.append(reverse("admin:{}_{}_change".format(*info), args=[first.pk]))
    return pages


def test_no_console_page_shows_a_time_in_the_locale_format(everything, superuser):
    pages = console_pages()
    assert len(pages) > 30  # the lists and pages of every model, not a few

    for page in pages:
        response = superuser.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        assert not LOCALE_FORMAT.search(html), (page, LOCALE_FORMAT.search(html).group(0))


@pytest.mark.parametrize(
    ("page", "times"),
    [
        ("admin:orders_drop_changelist", 1),  # created
        ("admin:orders_order_changelist", 1),  # created (no pickup time)
        ("admin:orders_batch_changelist", 1),
        ("admin:accounts_apikey_changelist", 2),  # per key: created, last used
        ("admin:billing_ledgerentry_changelist", 1),
        ("admin:geo_geocoderesult_changelist", 1),
    ],
)
def test_lists_show_times_with_the_zone(everything, superuser, page, times):
    html = superuser.get(reverse(page)).content.decode()

    rows = html.split("<tbody>")[1].split("</tbody>")[0]
    assert rows.count(f"{SHOWN}</time>") >= times
    assert rows.count(f"{SHOWN}</time>") == rows.count(">UTC+7</abbr>")


def test_a_drop_page_shows_its_times_and_its_history_with_the_zone(everything, superuser):
    drop = drop_in(DropStatus.ASSIGNED, business=Business.objects.get(), environment="live")
    type(drop).objects.filter(pk=drop.pk).update(created_at=MOMENT, updated_at=MOMENT)
    type(drop.events.get()).objects.filter(drop=drop).update(at=MOMENT)

    html = superuser.get(reverse("admin:orders_drop_change", args=[drop.pk])).content.decode()

    created = re.search(r"Created at:</label>\s*<div class=\"readonly\">(.*?)</div>", html, re.S)
    assert SHOWN in created.group(1) and "UTC+7" in created.group(1)
    events = html.split('id="events-group"')[1]  # the delivery events inline
    assert f"{SHOWN}</time>" in events


def test_a_business_page_shows_days_and_times_in_the_shared_format(everything, superuser):
    business = Business.objects.get()
    Invoice.objects.filter(business=business).update(issued_on=DAY, due_on=DAY)

    page = superuser.get(reverse("admin:accounts_business_change", args=[business.pk]))
    invoices = superuser.get(reverse("admin:billing_invoice_changelist"))

    asked = re.search(
        r"Live requested at:</label>\s*<div class=\"readonly\">(.*?)</div>",
        page.content.decode(),
        re.S,
    )
    assert SHOWN in asked.group(1) and "UTC+7" in asked.group(1)
    assert '<time datetime="2026-11-25">25 Nov 2026</time>' in invoices.content.decode()


def test_the_approve_form_and_the_business_page_say_when_they_asked_with_the_zone(
    everything, superuser
):
    applicant = Business.objects.create(name="Lotus Bakery", email="l@example.com")
    Business.objects.filter(pk=applicant.pk).update(
        stage="ACCESS_REQUESTED", access_requested_at=MOMENT
    )
    asked_live = Business.objects.get(name="Kep Crab")
    Business.objects.filter(pk=asked_live.pk).update(stage="APPROVED")

    approve = superuser.get(reverse("admin:accounts_business_approve", args=[applicant.pk]))
    page = superuser.get(reverse("admin:accounts_business_change", args=[asked_live.pk]))

    assert f"{SHOWN}</time>" in approve.content.decode()
    said = re.search(r"They asked for live access on (.*?)\.</p>", page.content.decode(), re.S)
    assert SHOWN in said.group(1) and "UTC+7" in said.group(1)


def posted_back(response) -> dict:
    """The change form as the browser would post it unchanged: every field's current value."""
    data = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        management = formset.management_form
        data.update({management.add_prefix(k): v for k, v in management.initial.items()})
        forms += formset.forms
    for form in forms:
        for name, field in form.fields.items():
            value = form.initial.get(name, field.initial)
            value = getattr(value, "pk", value)
            if value is not None and value is not False:
                data[form.add_prefix(name)] = value
    return data


def test_pages_that_edit_still_save_with_their_times_shown(everything, superuser):
    """Display callables stand in for shown fields only: the edit forms save as before."""
    business = Business.objects.get(name="Kep Crab")
    url = reverse("admin:accounts_business_change", args=[business.pk])
    data = {**posted_back(superuser.get(url)), "name": "Kep Crab Market"}

    response = superuser.post(url, data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Business.objects.get(pk=business.pk).name == "Kep Crab Market"
    assert Business.objects.get(pk=business.pk).live_requested_at == MOMENT  # shown, untouched
