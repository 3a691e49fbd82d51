"""Editing an order on its dashboard page: a form of what may change in the drop's
status, sent as the API's PATCH (tracking.edit_inputs, tracking.edits), only what was changed;
each refusal in the API's words with its status; a one-use form; strangers see nothing."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from html import unescape
from html.parser import HTMLParser

import pytest
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from billing.models import EntryKind
from billing.services import Movement, append_entries, lock_account
from events.models import Event
from orders.models import Drop, DropStatus
from tests.billing.helpers import assert_ledger_consistent, wallet_of
from tests.dashboard.helpers import local
from tests.tracking.helpers import advance, entries, place
from tests.tracking.test_edits import patch

S = DropStatus
NEW_PHONE = "+85512345670"
AIRPORT = {"lat": 11.5466, "long": 104.8441}  # in the area, far from the shop
ANGKOR_WAT = {"lat": 13.4125, "long": 103.8670}  # outside every service area


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


class _Form(HTMLParser):
    """What a browser would send for the page's edit form: every enabled control's value."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self.disabled: set[str] = set()
        self._inside, self._text, self._select = False, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and attrs.get("data-testid") == "order-edit":
            self._inside = True
        if not self._inside or "name" not in attrs and tag != "option":
            return
        if "disabled" in attrs:
            self.disabled.add(attrs["name"])
        elif tag == "input":
            self.values[attrs["name"]] = attrs.get("value") or ""
        elif tag == "textarea":
            self._text = attrs["name"]
            self.values[self._text] = ""
        elif tag == "select":
            self._select = attrs["name"]
        elif tag == "option" and self._select and "selected" in attrs:
            self.values[self._select] = attrs["value"]

    def handle_data(self, data):
        if self._text:
            self.values[self._text] += (
                data.removeprefix("\n") if not self.values[self._text] else data
            )

    def handle_endtag(self, tag):
        if tag == "textarea":
            self._text = None
        elif tag == "select":
            self._select = None
        elif tag == "form":
            self._inside = False


def form_of(web, drop_id) -> _Form:
    response = web.get(f"/orders/{drop_id}/edit/")
    assert response.status_code == 200, response.content
    form = _Form()
    form.feed(response.content.decode())
    return form


def send(web, drop_id, form: _Form | None = None, **changes):
    """Open the edit page (unless a form read earlier is given), change fields, send it."""
    form = form or form_of(web, drop_id)
    return web.post(f"/orders/{drop_id}/edit/", {**form.values, **changes})


def page_of(response) -> str:
    return unescape(response.content.decode())


def shown_after(web, response) -> str:
    """The page a redirect leads to, with its messages."""
    assert response.status_code == 302, page_of(response)
    return page_of(web.get(response["Location"]))


def updates_of(drop_id) -> list[list[str]]:
    return [
        e.data["changed"]
        for e in Event.objects.filter(type="order.updated").order_by("seq")
        if e.data["drop_id"] == str(drop_id)
    ]


# --- Success ----------------------------------------------------------------------------------


@pytest.mark.parametrize("environment", ["sandbox", "live"])
def test_new_notes_and_phone_are_saved_by_the_apis_edit(
    open_for_business, alice, alice_web, api, environment
):
    drop_id = place(api, alice.key(environment), "ED-1")["ED-1"]

    response = send(alice_web, drop_id, phone=NEW_PHONE, notes="Gate code 42\ncall on arrival")

    assert response["Location"] == f"/orders/{drop_id}/"
    page = shown_after(alice_web, response)
    assert "ED-1 is saved: phone and notes changed." in page
    assert "Gate code 42<br>call on arrival" in page and NEW_PHONE in page
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.environment, drop.recipient_phone, drop.notes) == (
        environment,
        NEW_PHONE,
        "Gate code 42\ncall on arrival",
    )
    assert updates_of(drop_id) == [["dropoff.phone", "notes"]]  # the service's event
    assert updates_of(drop_id) and Event.objects.get(type="order.updated").environment == (
        environment
    )


def test_a_form_sent_unchanged_changes_nothing_and_says_so(
    open_for_business, alice, alice_web, api
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    before = Drop.objects.get(pk=drop_id).updated_at

    page = shown_after(alice_web, send(alice_web, drop_id))

    assert "Nothing changed: ED-1 already had those values." in page
    assert Drop.objects.get(pk=drop_id).updated_at == before
    assert updates_of(drop_id) == []


def test_only_what_was_changed_on_the_page_is_sent(open_for_business, alice, alice_web, api):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    form = form_of(alice_web, drop_id)
    # Meanwhile, the shop's system renames the recipient through the API.
    assert patch(api, drop_id, {"dropoff": {"name": "Dara"}}, alice.sandbox_key).status_code == 200

    shown_after(alice_web, send(alice_web, drop_id, form, notes="Leave it at the shop"))

    drop = Drop.objects.get(pk=drop_id)
    assert (drop.recipient_name, drop.notes) == ("Dara", "Leave it at the shop")
    assert updates_of(drop_id) == [["dropoff.name"], ["notes"]]


def test_a_new_location_is_priced_and_said(open_for_business, alice, alice_web, api):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    charged = Drop.objects.get(pk=drop_id).price
    start = wallet_of(alice).balance

    response = send(alice_web, drop_id, lat=AIRPORT["lat"], long=AIRPORT["long"])

    drop = Drop.objects.get(pk=drop_id)
    assert (drop.lat, drop.long) == (AIRPORT["lat"], AIRPORT["long"]) and drop.price > charged
    said = f"drop-off location changed; price {drop.price} USD (was {charged} USD)."
    assert said in shown_after(alice_web, response)
    assert assert_ledger_consistent(alice) == start - (drop.price - charged)


def test_an_address_alone_is_found_on_the_map(open_for_business, alice, alice_web, api):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]

    response = send(
        alice_web, drop_id, address="Phnom Penh International Airport", city="Phnom Penh"
    )

    shown_after(alice_web, response)
    drop = Drop.objects.get(pk=drop_id)
    assert drop.address == {
        "complete_address": "Phnom Penh International Airport",
        "city": "Phnom Penh",
    }
    assert drop.resolved and (drop.lat, drop.long) == (AIRPORT["lat"], AIRPORT["long"])


def test_a_window_and_what_happens_if_undeliverable_change_before_pickup(
    open_for_business, alice, alice_web, api
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]

    response = send(
        alice_web,
        drop_id,
        window_start="2026-11-23T14:00",  # Phnom Penh's wall clock, as the page says
        window_end="2026-11-23T16:00",
        undeliverable_action="dispose",
    )

    page = shown_after(alice_web, response)
    assert "drop-off window and what happens if it cannot be delivered changed" in page
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.window_start, drop.window_end) == (
        local(2026, 11, 23, 14),
        local(2026, 11, 23, 16),
    )
    assert (drop.undeliverable_action, drop.window_status) == ("dispose", "on_track")

    # Both times cleared: no window any more.
    shown_after(alice_web, send(alice_web, drop_id, window_start="", window_end=""))
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.window_start, drop.window_end, drop.window_status) == (None, None, None)


# --- Refusals, in the API's words and statuses -------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "status", "words"),
    [
        ({"phone": "012 345 678"}, 422, "INVALID_PHONE"),
        ({"lat": ANGKOR_WAT["lat"], "long": ANGKOR_WAT["long"]}, 422, "OUT_OF_SERVICE_AREA"),
        (
            {"window_start": "2026-11-23T14:00", "window_end": "2026-11-23T14:10"},
            422,
            "30 minutes",
        ),
        ({"window_start": "2026-11-23T14:00"}, 400, "This field is required."),
        ({"notes": "x" * 501}, 400, "Must be at most 500 characters."),
        ({"name": ""}, 400, "Must not be empty."),
        ({"lat": "north"}, 400, "Enter a number."),
    ],
    ids=["phone", "area", "short-window", "half-window", "long-notes", "no-name", "not-a-number"],
)
def test_a_refused_edit_comes_back_on_the_form_and_changes_nothing(
    open_for_business, alice, alice_web, api, changes, status, words
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    before = Drop.objects.get(pk=drop_id)

    response = send(alice_web, drop_id, **changes, external_waybill="WB-NEW")

    assert response.status_code == status
    page = page_of(response)
    assert "Nothing was saved" in page and words in page
    assert 'value="WB-NEW"' in page  # what was typed stays on the form
    after = Drop.objects.get(pk=drop_id)
    assert (after.external_waybill, after.recipient_phone, after.lat, after.window_start) == (
        before.external_waybill,
        before.recipient_phone,
        before.lat,
        None,
    )
    assert updates_of(drop_id) == []


def test_a_location_the_wallet_cannot_pay_for_is_insufficient_balance(
    open_for_business, make_tenant, member, api
):
    tenant = make_tenant(sandbox_balance="10.00")
    web = member(tenant.business)
    drop_id = place(api, tenant.sandbox_key, "ED-1")["ED-1"]
    with transaction.atomic():  # leave less than any farther drop-off costs
        wallet = lock_account(business=tenant.business, environment="sandbox")
        spend = Movement(EntryKind.ADJUSTMENT, -(wallet.balance - Decimal("0.01")))
        append_entries(wallet=wallet, movements=[spend], at=timezone.now())

    response = send(web, drop_id, lat=AIRPORT["lat"], long=AIRPORT["long"], notes="x")

    assert response.status_code == 422
    page = page_of(response)
    assert "Nothing was saved (" in page and "INSUFFICIENT_BALANCE" in page
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.lat, drop.notes) != (AIRPORT["lat"], "x") and drop.notes is None
    assert assert_ledger_consistent(tenant) == Decimal("0.01")


def test_past_pickup_the_location_window_and_action_are_shown_fixed(
    open_for_business, alice, alice_web, api
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    entries(advance(api, alice.sandbox_key, "ED-1", to="PICKED_UP"))

    form = form_of(alice_web, drop_id)
    page = page_of(alice_web.get(f"/orders/{drop_id}/edit/"))

    assert {name for name in form.disabled if not name.startswith("initial-")} == {
        "address",
        "city",
        "lat",
        "long",
        "window_start",
        "window_end",
        "undeliverable_action",
    }
    assert "Changes only before pickup (scheduled or pending); it is picked up." in page
    shown_after(alice_web, send(alice_web, drop_id, form, name="Dara", phone=NEW_PHONE))
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.recipient_name, drop.recipient_phone) == ("Dara", NEW_PHONE)


def test_a_location_sent_from_a_page_opened_before_pickup_is_not_editable(
    open_for_business, alice, alice_web, api
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    form = form_of(alice_web, drop_id)  # opened while PENDING: the location may change
    entries(advance(api, alice.sandbox_key, "ED-1", to="ASSIGNED"))

    response = send(alice_web, drop_id, form, lat=AIRPORT["lat"], long=AIRPORT["long"])

    assert response.status_code == 409
    assert "can change only while the drop is SCHEDULED or PENDING; it is ASSIGNED" in page_of(
        response
    )
    assert Drop.objects.get(pk=drop_id).lat != AIRPORT["lat"]


def test_a_form_works_once(open_for_business, alice, alice_web, api):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    form = form_of(alice_web, drop_id)
    shown_after(alice_web, send(alice_web, drop_id, form, notes="First"))
    assert patch(api, drop_id, {"notes": "Later"}, alice.sandbox_key).status_code == 200

    # The back button and the same form again: refused, and the later notes stay.
    page = shown_after(alice_web, send(alice_web, drop_id, form, notes="First"))

    assert "That form was sent already: here is the order as it is now." in page
    assert Drop.objects.get(pk=drop_id).notes == "Later"


# --- Who may edit what --------------------------------------------------------------------------


def test_another_business_gets_404_and_changes_nothing(
    open_for_business, alice, bob_web, alice_web, api
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    form = form_of(alice_web, drop_id)

    assert bob_web.get(f"/orders/{drop_id}/edit/").status_code == 404
    response = bob_web.post(f"/orders/{drop_id}/edit/", {**form.values, "notes": "Bob was here"})

    assert response.status_code == 404
    assert Drop.objects.get(pk=drop_id).notes is None


@pytest.mark.parametrize("status", [S.DELIVERED, S.CANCELLED, S.RETURNED])
def test_a_finished_order_has_no_edit_link_and_refuses_an_edit(
    open_for_business, alice, alice_web, api, status
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    form = form_of(alice_web, drop_id)
    if status == S.CANCELLED:
        assert alice_web.post(f"/orders/{drop_id}/cancel/").status_code == 302
    else:
        entries(advance(api, alice.sandbox_key, "ED-1", to=status))

    assert f"/orders/{drop_id}/edit/" not in page_of(alice_web.get(f"/orders/{drop_id}/"))
    response = send(alice_web, drop_id, form, notes="Too late")

    assert response.status_code == 409
    assert "only an active order can be edited" in page_of(response)
    assert alice_web.get(f"/orders/{drop_id}/edit/").status_code == 409
    assert Drop.objects.get(pk=drop_id).notes is None
    assert updates_of(drop_id) == []


@pytest.mark.parametrize(
    ("stage", "environment", "words"),
    [
        ("SUSPENDED", "sandbox", "This account is suspended: its orders cannot be edited."),
        (
            "APPROVED",
            "live",
            "Live access is not enabled for this account: its live orders cannot be edited.",
        ),
    ],
    ids=["suspended", "live-access-off"],
)
def test_the_apis_account_gates_hold_on_the_page(
    open_for_business, alice, alice_web, api, stage, environment, words
):
    drop_id = place(api, alice.key(environment), "ED-1")["ED-1"]
    form = form_of(alice_web, drop_id)
    type(alice.business).objects.filter(pk=alice.business.pk).update(stage=stage)

    response = send(alice_web, drop_id, form, notes="Not now")

    assert response.status_code == 403  # as the API answers this account's key
    assert words in page_of(response)
    assert alice_web.get(f"/orders/{drop_id}/edit/").status_code == 403
    assert Drop.objects.get(pk=drop_id).notes is None
    assert patch(api, drop_id, {"notes": "Not now"}, alice.key(environment)).status_code == 403


def test_an_active_order_links_to_edit_and_cancel(open_for_business, alice, alice_web, api):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    page = page_of(alice_web.get(f"/orders/{drop_id}/"))
    assert f'href="/orders/{drop_id}/edit/" data-testid="edit-order"' in page
    assert f'href="/orders/{drop_id}/cancel/" data-testid="cancel-order"' in page

    entries(advance(api, alice.sandbox_key, "ED-1", to="PICKED_UP"))  # no cancel after pickup
    page = page_of(alice_web.get(f"/orders/{drop_id}/"))
    assert f"/orders/{drop_id}/edit/" in page and "/cancel/" not in page


def test_the_page_says_when_the_window_is_kept_in_the_service_time_zone(
    open_for_business, alice, alice_web, api
):
    drop_id = place(api, alice.sandbox_key, "ED-1")["ED-1"]
    start = timezone.now() + timedelta(hours=3)
    window = {"start": start.isoformat(), "end": (start + timedelta(hours=2)).isoformat()}
    assert patch(api, drop_id, {"dropoff_window": window}, alice.sandbox_key).status_code == 200

    form = form_of(alice_web, drop_id)

    # 03:00 UTC + 3 h is 13:00 in Phnom Penh: the form shows the wall clock it will read back.
    assert form.values["window_start"].startswith("2026-11-23T13:0")
    assert form.values["window_end"].startswith("2026-11-23T15:0")
