"""Every operator action is in Django admin's log: who did what to which
object, in a sentence, shown under "Recent actions" and on the object's History page; a bulk
action writes its entries in one INSERT."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts import services
from accounts.models import ApiKey, Business
from billing import onboarding
from billing.models import Invoice, InvoiceStatus
from orders.models import Drop, DropStatus
from tests.factories import DriverFactory
from tests.operators import staff_client
from tests.tracking.helpers import drop_in

pytestmark = pytest.mark.django_db

S = DropStatus
ORDERS = "/admin/orders/order/"
DROPS = "/admin/orders/drop/"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


# --- helpers


def log_of(obj) -> list[tuple[str, int, str]]:
    """The object's log: (operator, flag, sentence), oldest first."""
    return [
        (entry.user.get_username(), entry.action_flag, entry.get_change_message())
        for entry in LogEntry.objects.filter(
            content_type=ContentType.objects.get_for_model(obj), object_id=str(obj.pk)
        ).order_by("pk")
    ]


def act(client, changelist: str, action: str, *pks, **fields):
    """A changelist action, straight to its last step (apply=1 where it asks first)."""
    data = {"action": action, "index": "0", "_selected_action": [str(pk) for pk in pks], **fields}
    response = client.post(changelist, data, follow=True)
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


def log_inserts(captured) -> int:
    return sum('INSERT INTO "django_admin_log"' in q["sql"] for q in captured.captured_queries)


@pytest.fixture
def operator():
    return staff_client("ops", groups=["Operators"])


@pytest.fixture
def finance():
    return staff_client("money", groups=["Finance"])


@pytest.fixture
def business(make_tenant) -> Business:
    return make_tenant(name="Kep Crab", stage="live").business


def live_drops(business, status: str, *names: str) -> list[Drop]:
    return [
        drop_in(status, business=business, environment="live", client_order_id=name)
        for name in names
    ]


# --- onboarding moves, money, keys


def test_approving_is_logged_with_the_terms_set(operator):
    applicant = onboarding.create_business(name="Lotus Bakery", email="lotus@example.com")
    services.request_access(business=applicant, use_case="Cakes", expected_monthly_volume=10)

    operator.post(
        reverse("admin:accounts_business_approve", args=[applicant.pk]),
        {
            "billing_model": "invoiced",
            "base_fee": "2.50",
            "per_km_fee": "0.40",
            "included_km": "1.5",
            "net_days": "15",
        },
    )

    assert log_of(applicant) == [
        (
            "ops",
            CHANGE,
            "Approved: monthly invoice, 2.50 USD a drop plus 0.40 USD a km beyond the first "
            "1.5 km, invoices due 15 days after issue.",
        )
    ]


def test_a_wallet_approval_is_logged_without_invoice_terms(operator):
    applicant = onboarding.create_business(name="Lotus Bakery", email="lotus@example.com")
    services.request_access(business=applicant, use_case="Cakes", expected_monthly_volume=10)

    operator.post(
        reverse("admin:accounts_business_approve", args=[applicant.pk]),
        {"billing_model": "wallet", "base_fee": "2.50", "per_km_fee": "0.40", "included_km": "0"},
    )

    assert log_of(applicant) == [
        ("ops", CHANGE, "Approved: prepaid wallet, 2.50 USD a drop plus 0.40 USD a km.")
    ]


def test_suspending_and_reactivating_are_logged(operator, business):
    for move in ("suspend", "reactivate"):
        operator.post(reverse("admin:accounts_business_move", args=[business.pk, move]))

    assert log_of(business) == [
        ("ops", CHANGE, "Kep Crab is suspended; its API keys answer 403 until it is reactivated."),
        ("ops", CHANGE, "Kep Crab is reactivated, back to live."),
    ]


def test_enabling_live_and_rejecting_are_logged(operator, make_tenant):
    asked = make_tenant(name="Mango Express", stage="approved").business
    Business.objects.filter(pk=asked.pk).update(live_requested_at=datetime.now(UTC))
    applicant = onboarding.create_business(name="Maybe Later", email="later@example.com")
    services.request_access(business=applicant, use_case="Soup", expected_monthly_volume=1)

    operator.post(reverse("admin:accounts_business_move", args=[asked.pk, "enable_live"]))
    operator.post(reverse("admin:accounts_business_move", args=[applicant.pk, "reject"]))

    assert log_of(asked) == [("ops", CHANGE, "Live access enabled for Mango Express.")]
    assert log_of(applicant) == [
        ("ops", CHANGE, "The access request of Maybe Later was rejected; they may ask again.")
    ]


def test_a_refused_move_logs_nothing(operator, business):
    operator.post(reverse("admin:accounts_business_move", args=[business.pk, "reactivate"]))

    assert log_of(business) == []


def test_a_top_up_is_logged_on_the_business(finance, business):
    finance.post(
        reverse("admin:accounts_business_wallet", args=[business.pk]),
        {"environment": "live", "kind": "TOP_UP", "amount": "50.00", "note": "Bank transfer"},
    )

    assert log_of(business) == [
        ("money", CHANGE, "Top-up of 50.00 USD on the live wallet: Bank transfer")
    ]


def test_revoking_keys_logs_each_key_in_one_insert(operator, business):
    keys = list(ApiKey.objects.filter(business=business))
    assert len(keys) == 2

    with CaptureQueriesContext(connection) as captured:
        act(operator, reverse("admin:accounts_apikey_changelist"), "revoke", *[k.pk for k in keys])

    for key in keys:
        assert log_of(key) == [("ops", CHANGE, "Revoked: calls with this key now answer 401.")]
    assert log_inserts(captured) == 1


def test_issuing_and_paying_invoices_are_logged(finance, make_tenant):
    invoiced = make_tenant(name="Takeo Supplies", billing="invoiced").business
    live = Invoice.objects.create(
        business=invoiced, environment="live", period="2026-09", accrued=Decimal("12.00")
    )
    sandbox = Invoice.objects.create(
        business=invoiced, environment="sandbox", period="2026-09", accrued=Decimal("3.00")
    )
    invoices = reverse("admin:billing_invoice_changelist")

    act(finance, invoices, "issue_ended_months", live.pk, sandbox.pk)
    act(finance, invoices, "mark_paid", live.pk, sandbox.pk)  # the sandbox one is refused

    assert Invoice.objects.get(pk=live.pk).status == InvoiceStatus.PAID
    assert log_of(live) == [
        ("money", CHANGE, "Issued (its due date is on the invoice)."),
        ("money", CHANGE, "Marked paid."),
    ]
    assert log_of(sandbox) == [("money", CHANGE, "Closed: a sandbox invoice is never billed.")]


# --- dispatch: every move, logged on each drop it moved


def test_assigning_from_the_orders_list_logs_each_drop_in_one_insert(operator, business):
    first, second = live_drops(business, S.PENDING, "A-1", "A-2")
    driver = DriverFactory(name="Sokha")

    with CaptureQueriesContext(connection) as captured:
        said = act(
            operator, DROPS, "assign_driver", first.pk, second.pk, apply="1", driver=driver.pk
        )

    assert said == ["2 drop(s) assigned to Sokha."]
    for drop in (first, second):
        assert log_of(drop) == [("ops", CHANGE, f"Assigned to driver Sokha (id {driver.pk}).")]
    assert log_inserts(captured) == 1


def test_picked_up_failed_and_cancelled_are_logged(operator, business):
    (assigned,) = live_drops(business, S.ASSIGNED, "P-1")
    (pending,) = live_drops(business, S.PENDING, "C-1")

    act(operator, DROPS, "mark_picked_up", assigned.pk)
    act(operator, DROPS, "mark_failed", assigned.pk, apply="1", reason="ADDRESS_NOT_FOUND")
    act(operator, DROPS, "mark_cancelled", pending.pk)

    assert log_of(assigned) == [
        ("ops", CHANGE, "Marked picked up."),
        ("ops", CHANGE, "Marked failed: address not found (ADDRESS_NOT_FOUND)."),
    ]
    assert log_of(pending) == [
        ("ops", CHANGE, "Cancelled; the charge refunded (wallet) or reversed (invoice).")
    ]


def test_a_delivery_with_its_proof_is_logged(operator, business, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (drop,) = live_drops(business, S.PICKED_UP, "D-1")

    act(
        operator,
        DROPS,
        "mark_delivered",
        drop.pk,
        apply="1",
        received_by="Dara",
        photo=SimpleUploadedFile("door.png", PNG, content_type="image/png"),
    )

    assert Drop.objects.get(pk=drop.pk).status == S.DELIVERED
    assert log_of(drop) == [("ops", CHANGE, "Marked delivered (received by Dara, a photo).")]


def test_wrong_pins_are_logged_and_the_last_one_fails_the_drop(operator, business, settings):
    settings.MAX_PIN_ATTEMPTS = 2
    (drop,) = live_drops(business, S.PICKED_UP, "PIN-1")
    Drop.objects.filter(pk=drop.pk).update(dropoff_pin="4821")

    for _ in range(2):
        act(operator, DROPS, "mark_delivered", drop.pk, apply="1", **{f"pin_{drop.pk}": "0000"})

    assert Drop.objects.get(pk=drop.pk).status == S.FAILED
    assert log_of(drop) == [
        ("ops", CHANGE, "Wrong PIN entered (1 of 2): not delivered."),
        ("ops", CHANGE, "Marked failed: a wrong PIN 2 times (WRONG_PIN)."),
    ]


def test_a_delivery_with_the_right_pin_says_so(operator, business):
    (drop,) = live_drops(business, S.PICKED_UP, "PIN-2")
    Drop.objects.filter(pk=drop.pk).update(dropoff_pin="4821")

    act(operator, DROPS, "mark_delivered", drop.pk, apply="1", **{f"pin_{drop.pk}": "0000"})
    act(operator, DROPS, "mark_delivered", drop.pk, apply="1", **{f"pin_{drop.pk}": "4821"})

    assert log_of(drop) == [
        ("ops", CHANGE, "Wrong PIN entered (1 of 3): not delivered."),
        ("ops", CHANGE, "Marked delivered (the right PIN)."),
    ]


def test_a_refused_move_is_not_logged(operator, business):
    (delivered,) = live_drops(business, S.DELIVERED, "X-1")

    said = act(operator, DROPS, "mark_cancelled", delivered.pk)

    assert said == ["1 drop(s) refused: illegal from DELIVERED."]
    assert log_of(delivered) == []


def test_cancelling_many_drops_is_one_insert_into_the_log(operator, business):
    drops = live_drops(business, S.PENDING, *[f"M-{n}" for n in range(5)])

    with CaptureQueriesContext(connection) as captured:
        act(operator, ORDERS, "mark_cancelled", *{d.order_id for d in drops})

    assert LogEntry.objects.filter(object_id__in=[str(d.pk) for d in drops]).count() == 5
    assert log_inserts(captured) == 1


# --- where the operator reads it


def test_recent_actions_say_what_was_done_and_when(operator, business):
    operator.post(reverse("admin:accounts_business_move", args=[business.pk, "suspend"]))
    LogEntry.objects.update(action_time=datetime(2026, 11, 25, 12, 38, tzinfo=UTC))

    page = operator.get("/admin/").content.decode()
    history = operator.get(
        reverse("admin:accounts_business_history", args=[business.pk])
    ).content.decode()

    recent = page.split('id="recent-actions-module"')[1]
    assert "Kep Crab is suspended; its API keys answer 403 until it is reactivated." in recent
    assert "25 Nov 2026, 19:38" in recent and "UTC+7" in recent
    assert "25 Nov 2026, 19:38" in history and "UTC+7" in history


def test_the_log_lists_every_operators_actions_to_whoever_may_view_it(business):
    first = staff_client("first", groups=["Operators"])
    second = staff_client("second", groups=["Operators"])
    auditor = staff_client("auditor", perms=["admin.view_logentry"])
    first.post(reverse("admin:accounts_business_move", args=[business.pk, "suspend"]))
    second.post(reverse("admin:accounts_business_move", args=[business.pk, "reactivate"]))
    log = reverse("admin:admin_logentry_changelist")

    page = auditor.get(log).content.decode()

    rows = page.split("<tbody>")[1]
    assert "Kep Crab is suspended; its API keys answer 403" in rows
    assert "Kep Crab is reactivated, back to live." in rows
    assert ">first<" in rows and ">second<" in rows
    assert f'href="{reverse("admin:accounts_business_change", args=[business.pk])}"' in rows
    assert first.get(log).status_code == 403  # the group alone does not read others' actions
