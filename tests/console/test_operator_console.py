"""The operators' console: the admin index opens on what waits for an
operator, the approve form gives the context and the money terms, and every onboarding move
asks for confirmation before it acts and says what it did in a sentence."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts import services
from accounts.models import ApiKey, Business, Stage
from billing import onboarding
from billing.models import EntryKind, LedgerEntry
from billing.services import post_wallet_entry
from console import queue
from core.ids import uuid7
from orders.models import Drop, DropStatus, Order
from orders.onboarding import request_live
from orders.short_codes import new_short_codes
from tests.operators import staff_client
from tests.tracking.helpers import drop_in

pytestmark = pytest.mark.django_db

INDEX = "/admin/"
MONDAY = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


# --- helpers


def asking_for_access(name: str, *, at: datetime, use_case: str = "Noodles", volume=300):
    business = onboarding.create_business(name=name, email=f"{name.lower()}@example.com")
    services.request_access(business=business, use_case=use_case, expected_monthly_volume=volume)
    Business.objects.filter(pk=business.pk).update(access_requested_at=at)
    return Business.objects.get(pk=business.pk)


def asking_for_live(make_tenant, name: str, *, at: datetime) -> Business:
    business = make_tenant(name=name, stage="approved").business
    Business.objects.filter(pk=business.pk).update(live_requested_at=at)
    return Business.objects.get(pk=business.pk)


def html(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def section(page: str, testid: str) -> str | None:
    """The HTML of one list of "Needs doing" (data-testid), or None when it is not shown."""
    found = re.search(rf'data-testid="{testid}">(.*?)</section>', page, re.S)
    return found.group(1) if found else None


def names_in(part: str) -> list[str]:
    return re.findall(r'class="console-name">([^<]+)</a>', part)


def count_in(part: str) -> int:
    return int(re.search(r'data-testid="\w+-count">(\d+)<', part).group(1))


def move_url(business: Business, move: str) -> str:
    return reverse("admin:accounts_business_move", args=[business.pk, move])


def change_url(business: Business) -> str:
    return reverse("admin:accounts_business_change", args=[business.pk])


def approve_url(business: Business) -> str:
    return reverse("admin:accounts_business_approve", args=[business.pk])


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def stage_of(business: Business) -> str:
    return Business.objects.get(pk=business.pk).stage


@pytest.fixture
def operator():
    return staff_client("operator@example.com", groups=["Operators"])


# --- the queue on the admin index


def test_the_index_lists_who_waits_for_approval_oldest_first(operator, make_tenant):
    asking_for_access("Middle", at=MONDAY)
    asking_for_access("Newest", at=MONDAY + timedelta(hours=1))
    asking_for_access(
        "Oldest",
        at=MONDAY - timedelta(days=2),
        use_case="Same-day grocery deliveries in Phnom Penh.",
        volume=3000,
    )
    onboarding.create_business(name="Only registered", email="r@example.com")
    make_tenant(name="Already approved", stage="approved")

    page = html(operator, INDEX)
    waiting = section(page, "waiting-approval")

    assert names_in(waiting) == ["Oldest", "Middle", "Newest"]
    assert count_in(waiting) == 3
    assert "Same-day grocery deliveries in Phnom Penh." in waiting
    assert "Expects 3000 drops a month" in waiting
    assert "21 Nov 2026, 10:00" in waiting  # when they asked, in the service time zone
    assert "UTC+7" in waiting
    oldest = Business.objects.get(name="Oldest")
    assert f'href="{approve_url(oldest)}"' in waiting
    assert f'href="{change_url(oldest)}"' in waiting


def test_the_index_lists_who_asked_for_live_with_the_enable_live_link(operator, make_tenant):
    later = asking_for_live(make_tenant, "Later", at=MONDAY + timedelta(hours=2))
    earlier = asking_for_live(make_tenant, "Earlier", at=MONDAY)
    make_tenant(name="Approved, not asking", stage="approved")
    make_tenant(name="Already live", stage="live")

    waiting = section(html(operator, INDEX), "waiting-live")

    assert names_in(waiting) == ["Earlier", "Later"]
    assert count_in(waiting) == 2
    assert f'href="{move_url(earlier, "enable_live")}"' in waiting
    assert f'href="{move_url(later, "enable_live")}"' in waiting
    assert "prepaid wallet, 2.00 USD + 0.50 USD/km" in waiting


def test_the_index_shows_the_oldest_ten_and_counts_them_all(operator):
    for n in range(queue.SHOWN + 2):
        asking_for_access(f"Shop {n:02d}", at=MONDAY + timedelta(minutes=n))

    waiting = section(html(operator, INDEX), "waiting-approval")

    assert count_in(waiting) == queue.SHOWN + 2
    assert names_in(waiting) == [f"Shop {n:02d}" for n in range(queue.SHOWN)]
    assert f"All {queue.SHOWN + 2} waiting for approval" in waiting
    assert "?waiting=approval" in waiting


def test_the_index_says_so_when_nothing_waits(operator, make_tenant):
    make_tenant(name="Live and quiet", stage="live")

    page = html(operator, INDEX)

    assert count_in(section(page, "waiting-approval")) == 0
    assert "No business is waiting for approval." in page
    assert count_in(section(page, "waiting-live")) == 0
    assert "No business is waiting for live access." in page


def test_the_queue_reads_one_query_per_list_however_many_wait(make_tenant):
    user = staff_client("counter@example.com", groups=["Operators"])

    def queries_of_the_index() -> int:
        with CaptureQueriesContext(connection) as captured:
            html(user, INDEX)
        return len(captured)

    live = make_tenant(name="Live Shop", stage="live").business
    asking_for_access("First", at=MONDAY)
    asking_for_live(make_tenant, "First live", at=MONDAY)
    live_order_with(live, DropStatus.PENDING, at=MONDAY)
    with_two = queries_of_the_index()
    for n in range(6):
        asking_for_access(f"More {n}", at=MONDAY + timedelta(minutes=n))
        asking_for_live(make_tenant, f"More live {n}", at=MONDAY + timedelta(minutes=n))
        live_order_with(live, DropStatus.PENDING, DropStatus.PENDING, at=MONDAY)

    assert queries_of_the_index() == with_two


def test_needs_doing_is_one_query_per_list_for_an_operator_who_may_do_all(
    make_tenant, django_assert_num_queries
):
    live = make_tenant(name="Live Shop", stage="live").business
    for n in range(3):
        asking_for_access(f"Access {n}", at=MONDAY + timedelta(minutes=n))
        asking_for_live(make_tenant, f"Live {n}", at=MONDAY + timedelta(minutes=n))
        live_order_with(live, DropStatus.PENDING, at=MONDAY + timedelta(minutes=n), pickup=f"P{n}")
    superuser = get_user_model().objects.create_superuser("root", "root@example.com", "pw")

    with django_assert_num_queries(3):
        found = queue.needs_doing(superuser)
        names = [b.name for b in found.access.oldest] + [b.name for b in found.live.oldest]
        terms = [b.pricing_plan.base_fee for b in found.live.oldest]  # selected with them
        orders = [(o.pickup_name, o.business.name, o.pending) for o in found.driver.oldest]

    assert names == ["Access 0", "Access 1", "Access 2", "Live 0", "Live 1", "Live 2"]
    assert (found.access.count, found.live.count, found.driver.count) == (3, 3, 3)
    assert terms == [Decimal("2.00")] * 3
    assert orders == [(f"P{n}", "Live Shop", 1) for n in range(3)]


def test_staff_see_only_the_lists_they_may_act_on(make_tenant):
    asking_for_access("Wants access", at=MONDAY)
    asking_for_live(make_tenant, "Wants live", at=MONDAY)
    viewer = staff_client("viewer@example.com", perms=["accounts.view_business"])
    finance = staff_client("finance@example.com", groups=["Finance"])
    approver = staff_client(
        "approver@example.com", perms=["accounts.view_business", "accounts.approve_business"]
    )
    switcher = staff_client(
        "switcher@example.com", perms=["accounts.view_business", "accounts.enable_live_business"]
    )

    live_order_with(make_tenant(stage="live").business, DropStatus.PENDING, at=MONDAY)

    for client in (viewer, finance):
        page = html(client, INDEX)
        assert 'id="needs-doing"' not in page
        assert "Wants access" not in page and "Wants live" not in page
    approver_page = html(approver, INDEX)
    assert names_in(section(approver_page, "waiting-approval")) == ["Wants access"]
    assert section(approver_page, "waiting-live") is None
    assert section(approver_page, "waiting-driver") is None
    assert "Wants live" not in approver_page
    switcher_page = html(switcher, INDEX)
    assert section(switcher_page, "waiting-approval") is None
    assert names_in(section(switcher_page, "waiting-live")) == ["Wants live"]


def test_the_business_list_filters_on_what_waits(operator, make_tenant):
    asking_for_access("Wants access", at=MONDAY)
    asking_for_live(make_tenant, "Wants live", at=MONDAY)
    make_tenant(name="Quiet", stage="live")
    url = reverse("admin:accounts_business_changelist")

    live = html(operator, f"{url}?waiting=live")
    approval = html(operator, f"{url}?waiting=approval")

    assert "Wants live" in live and "Wants access" not in live and "Quiet" not in live
    assert "Wants access" in approval and "Wants live" not in approval
    assert "live, <time" in live  # the "Waiting for" column says since when


# --- live orders waiting for a driver


def live_order_with(business, *statuses: str, at: datetime, pickup: str = "Shop") -> Order:
    """One order of `business`, created at `at`, with one drop in each status."""
    first = drop_in(statuses[0], business=business, environment="live")
    Order.objects.filter(pk=first.order_id).update(created_at=at, pickup_name=pickup)
    for n, status in enumerate(statuses[1:]):
        sibling = Drop.objects.get(pk=first.pk)
        sibling.id, sibling.status = uuid7(), status
        sibling.client_order_id = f"{first.client_order_id}-{n}"
        [sibling.short_code] = new_short_codes(1)  # a copy's code is taken: its own
        sibling.save(force_insert=True)
    return Order.objects.get(pk=first.order_id)


def test_the_index_lists_live_orders_waiting_for_a_driver_oldest_first(operator, make_tenant):
    shop = make_tenant(name="Kep Crab", stage="live").business
    newer = live_order_with(shop, DropStatus.PENDING, at=MONDAY, pickup="Newer")
    older = live_order_with(
        shop,
        DropStatus.PENDING,
        DropStatus.PENDING,
        DropStatus.ASSIGNED,  # one drop already has its driver; two still wait
        at=MONDAY - timedelta(hours=2),
        pickup="Older",
    )
    for status in (DropStatus.SCHEDULED, DropStatus.ASSIGNED, DropStatus.PICKED_UP):
        live_order_with(shop, status, at=MONDAY, pickup=f"Not waiting: {status}")
    drop_in(DropStatus.PENDING, business=shop, environment="sandbox")  # the test driver's

    waiting = section(html(operator, INDEX), "waiting-driver")

    assert names_in(waiting) == ["Older", "Newer"]
    assert count_in(waiting) == 2
    assert "for Kep Crab: 2 drops, waiting since" in waiting
    assert "23 Nov 2026, 08:00" in waiting and "UTC+7" in waiting  # the older one's creation
    assert f'href="{reverse("admin:orders_order_change", args=[older.pk])}"' in waiting
    assert f'href="{reverse("admin:orders_order_change", args=[newer.pk])}"' in waiting
    assert f'href="{reverse("admin:orders_order_changelist")}?waiting=driver"' in waiting
    assert "All 2 waiting for a driver" in waiting


def test_the_index_says_so_when_no_order_waits_for_a_driver(operator, make_tenant):
    live_order_with(make_tenant(stage="live").business, DropStatus.ASSIGNED, at=MONDAY)

    waiting = section(html(operator, INDEX), "waiting-driver")

    assert count_in(waiting) == 0
    assert "No live order is waiting for a driver." in waiting


def test_the_orders_list_filters_on_waiting_for_a_driver(operator, make_tenant):
    shop = make_tenant(name="Kep Crab", stage="live").business
    waiting = live_order_with(shop, DropStatus.PENDING, DropStatus.PENDING, at=MONDAY)
    assigned = live_order_with(shop, DropStatus.ASSIGNED, at=MONDAY)
    sandbox = drop_in(DropStatus.PENDING, business=shop, environment="sandbox").order

    listed = html(operator, reverse("admin:orders_order_changelist") + "?waiting=driver")

    rows = re.findall(r'name="_selected_action" value="([^"]+)"', listed)
    assert rows == [str(waiting.pk)]  # once, though two of its drops wait
    assert str(assigned.pk) not in listed and str(sandbox.pk) not in listed


# --- approving


def test_the_approve_form_shows_the_request_the_currency_and_the_sandbox_credit(operator):
    applicant = asking_for_access(
        "Lotus Bakery", at=MONDAY, use_case="Cakes to offices, mornings only.", volume=450
    )

    page = html(operator, approve_url(applicant))

    assert "Cakes to offices, mornings only." in page
    assert "450 drops a month" in page
    for field, unit in [
        ("base_fee", "USD per drop"),
        ("per_km_fee", "USD per km beyond the included km"),
    ]:
        assert re.search(
            rf'name="{field}"[^>]*aria-describedby="id_{field}_unit"[^>]*>\s*'
            rf'<span class="unit" id="id_{field}_unit">{unit}</span>',
            page,
        ), field
    assert "Billing and pricing, in USD" in page
    assert "Approving credits their sandbox wallet with 100.00 USD" in page
    assert stage_of(applicant) == Stage.ACCESS_REQUESTED  # looking changes nothing


@override_settings(CURRENCY="KHR", SANDBOX_STARTING_BALANCE=Decimal("40000.00"))
def test_the_approve_form_follows_the_configured_currency_and_credit(operator):
    applicant = asking_for_access("Riel Shop", at=MONDAY)

    page = html(operator, approve_url(applicant))

    assert '<span class="unit" id="id_base_fee_unit">KHR per drop</span>' in page
    assert "Approving credits their sandbox wallet with 40000.00 KHR" in page
    assert "USD" not in page


def test_approving_says_what_the_sandbox_got(operator):
    applicant = asking_for_access("Lotus Bakery", at=MONDAY)

    response = operator.post(
        approve_url(applicant),
        {
            "billing_model": "wallet",
            "base_fee": "2.00",
            "per_km_fee": "0.50",
            "included_km": "0",
            "net_days": "30",
        },
    )

    assert response.status_code == 302
    assert said(response) == [
        "Lotus Bakery approved; the sandbox wallet was credited. With 100.00 USD of sandbox "
        "credit they can try the API now."
    ]
    assert stage_of(applicant) == Stage.APPROVED


# --- switching live on: only once asked, and only through the confirmation


def test_enable_live_is_not_offered_before_the_business_asks(operator, make_tenant):
    approved = make_tenant(name="Not yet", stage="approved").business

    page = html(operator, change_url(approved))

    assert 'form="move-enable_live"' not in page
    assert move_url(approved, "enable_live") not in page
    assert "Enable live appears once the business asks for live access" in page


def test_a_forged_enable_live_before_the_request_is_refused(operator, make_tenant):
    approved = make_tenant(name="Not yet", stage="approved").business

    for send in (operator.get, operator.post):
        response = send(move_url(approved, "enable_live"))

        assert response.status_code == 302
        assert response["Location"] == change_url(approved)
        assert said(response) == ["Not yet has not asked for live access yet. Nothing changed."]
        operator.get(response["Location"])  # shows (and so uses up) the message
    assert stage_of(approved) == Stage.APPROVED


def test_enable_live_asks_first_and_names_the_billing(operator, make_tenant):
    business = make_tenant(name="Mango Express", stage="approved").business
    drop_in("PENDING", business=business)  # an accepted sandbox order, so it may ask
    request_live(business=business)
    assert 'form="move-enable_live"' in html(operator, change_url(business))

    page = html(operator, move_url(business, "enable_live"))

    assert "<h1>Enable live access for Mango Express?</h1>" in page
    assert (
        "They will be able to make live keys and send live orders, billed from their prepaid "
        "live wallet, at 2.00 USD a drop plus 0.50 USD a km." in page
    )
    assert "Their live wallet holds 0.00 USD" in page
    assert 'value="Confirm"' in page and "Cancel</a>" in page
    assert stage_of(business) == Stage.APPROVED  # the GET changed nothing

    response = operator.post(move_url(business, "enable_live"))

    assert response.status_code == 302
    assert said(response) == ["Live access enabled for Mango Express."]
    assert stage_of(business) == Stage.LIVE


def test_enable_live_names_invoice_terms_for_an_invoiced_business(operator, make_tenant):
    business = make_tenant(
        name="Invoiced Co", stage="approved", billing="invoiced", included_km="1.5", net_days=15
    ).business
    Business.objects.filter(pk=business.pk).update(live_requested_at=MONDAY)

    page = html(operator, move_url(business, "enable_live"))

    assert (
        "billed on a monthly invoice due 15 days after it is issued, at 2.00 USD a drop plus "
        "0.50 USD a km beyond the first 1.5 km." in page
    )
    assert "live wallet" not in page


def test_enable_live_without_the_permission_is_403_even_once_asked(make_tenant):
    business = asking_for_live(make_tenant, "Asked", at=MONDAY)
    viewer = staff_client(
        "viewer@example.com", perms=["accounts.view_business", "accounts.change_business"]
    )

    assert viewer.get(move_url(business, "enable_live")).status_code == 403
    assert viewer.post(move_url(business, "enable_live")).status_code == 403
    assert stage_of(business) == Stage.APPROVED


# --- the other moves: confirmation, then a sentence


def test_suspending_asks_first_and_says_what_it_did(operator, make_tenant):
    business = make_tenant(name="Kep Crab", stage="live").business

    page = html(operator, move_url(business, "suspend"))
    assert "<h1>Suspend Kep Crab?</h1>" in page
    assert "403 ACCOUNT_SUSPENDED" in page
    assert stage_of(business) == Stage.LIVE

    response = operator.post(move_url(business, "suspend"))
    assert said(response) == [
        "Kep Crab is suspended; its API keys answer 403 until it is reactivated."
    ]
    assert stage_of(business) == Stage.SUSPENDED

    page = html(operator, move_url(business, "reactivate"))
    assert "<h1>Reactivate Kep Crab?</h1>" in page
    assert "returns to live" in page
    assert stage_of(business) == Stage.SUSPENDED

    response = operator.post(move_url(business, "reactivate"))
    assert said(response) == ["Kep Crab is reactivated, back to live."]
    assert stage_of(business) == Stage.LIVE


def test_rejecting_asks_first_and_says_they_may_ask_again(operator):
    applicant = asking_for_access("Maybe Later", at=MONDAY)

    page = html(operator, move_url(applicant, "reject"))
    assert "<h1>Reject the access request of Maybe Later?</h1>" in page
    assert stage_of(applicant) == Stage.ACCESS_REQUESTED

    response = operator.post(move_url(applicant, "reject"))
    assert said(response) == ["The access request of Maybe Later was rejected; they may ask again."]
    assert stage_of(applicant) == Stage.REJECTED


def test_a_move_that_does_not_apply_is_refused_with_a_sentence(operator, make_tenant):
    business = make_tenant(name="Running", stage="live").business

    response = operator.post(move_url(business, "reactivate"))

    assert said(response) == ["Running is not suspended. Nothing changed."]
    assert stage_of(business) == Stage.LIVE


def test_no_message_reads_like_a_log_line(operator, make_tenant):
    business = asking_for_live(make_tenant, "Plain Words", at=MONDAY)

    messages_said = set()
    for move in ("enable_live", "suspend", "reactivate"):
        messages_said.update(said(operator.post(move_url(business, move))))

    assert len(messages_said) == 3
    for message in messages_said:
        assert " done" not in message and "_" not in message
        assert message[0].isupper() and message.endswith(".")


# --- the lists stay cheap: no query per row


@pytest.mark.parametrize(
    "url", ["admin:accounts_business_changelist", "admin:billing_ledgerentry_changelist"]
)
def test_a_list_costs_the_same_queries_for_more_rows(operator, make_tenant, url):
    def queries_of_the_list() -> int:
        with CaptureQueriesContext(connection) as captured:
            html(operator, reverse(url))
        return len(captured)

    first = make_tenant(name="First", stage="live").business
    post_wallet_entry(
        business=first, environment="live", amount=Decimal("5.00"), kind=EntryKind.TOP_UP
    )
    with_few = queries_of_the_list()
    for n in range(4):
        more = make_tenant(name=f"More {n}", stage="live").business
        post_wallet_entry(
            business=more, environment="live", amount=Decimal("5.00"), kind=EntryKind.TOP_UP
        )
    assert LedgerEntry.objects.count() > 5

    assert queries_of_the_list() == with_few


def test_a_wallet_entry_says_what_was_recorded_where(make_tenant):
    business = make_tenant(name="Kep Crab", stage="live").business
    finance = staff_client("finance@example.com", groups=["Finance"])

    response = finance.post(
        reverse("admin:accounts_business_wallet", args=[business.pk]),
        {"environment": "live", "kind": "TOP_UP", "amount": "50.00", "note": "Bank transfer"},
    )

    assert response.status_code == 302
    assert said(response) == ["Top-up of 50.00 USD recorded on the live wallet of Kep Crab."]


def test_revoking_keys_says_how_many(operator, make_tenant):
    business = make_tenant(name="Kep Crab", stage="live").business
    keys = list(ApiKey.objects.filter(business=business).values_list("pk", flat=True))

    def revoke():
        return operator.post(
            reverse("admin:accounts_apikey_changelist"),
            {"action": "revoke", "index": "0", "_selected_action": [str(pk) for pk in keys]},
        )

    first = revoke()
    assert said(first) == ["2 key(s) revoked; calls with them now answer 401."]
    operator.get(first["Location"])
    assert said(revoke()) == ["The selected keys were revoked already; nothing changed."]
