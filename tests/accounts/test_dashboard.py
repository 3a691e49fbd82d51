"""The dashboard through Django's test client: who may see what, forms, keys, money, sandbox."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.cache import cache
from django.test import Client

from accounts import services
from accounts.keys import KEY_PATTERN, digest_of
from accounts.models import ApiKey, Business, Environment, Membership, Stage
from accounts.ratelimit import MAX_FAILED_LOGINS
from billing.models import Invoice, LedgerEntry, Wallet
from orders.models import Batch, Drop, DropStatus
from tests.factories import UserFactory, batch, drop, group
from tests.helpers import timeline_of

PASSWORD = "correct horse battery"
PRIVATE_PAGES = [
    "/",
    "/access/",
    "/live/",
    "/keys/",
    "/wallet/",
    "/orders/",
    "/batches/",
    "/sandbox/",
    "/webhooks/",
]


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    # The login throttle counts in the cache (a database table); each test starts from zero.
    cache.clear()
    yield
    cache.clear()


def post_key_form(web: Client, **data):
    """POST the key form as a browser would: with the one-use token of a fresh page."""
    page = web.get("/keys/").content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    return web.post("/keys/", {"form_token": token, **data})


def _sandbox_drop(tenant, api, client_order_id: str) -> Drop:
    response = api.bulk(batch(group(drop(client_order_id))), tenant.sandbox_key)
    assert response.json()["data"]["counts"]["accepted"] == 1, response.content
    return Drop.objects.get(business=tenant.business, client_order_id=client_order_id)


# --- Who may see what ----------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", PRIVATE_PAGES)
def test_private_pages_redirect_anonymous_visitors_to_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/signup/", "/login/", "/password-reset/"])
def test_signup_login_and_password_reset_are_open(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert b"csrfmiddlewaretoken" in response.content


@pytest.mark.parametrize("path", PRIVATE_PAGES)
def test_every_page_renders_for_a_live_business(alice_web, path):
    assert alice_web.get(path).status_code == 200


def test_forms_carry_a_csrf_token(alice_web, alice):
    key = ApiKey.objects.filter(business=alice.business).first()
    for path in ["/keys/", "/wallet/", "/sandbox/", f"/keys/{key.pk}/revoke/", "/"]:
        content = alice_web.get(path).content.decode()
        forms = re.findall(r"<form[^>]*method=\"post\"[^>]*>(.*?)</form>", content, re.S)
        assert forms, path
        assert all("csrfmiddlewaretoken" in form for form in forms), path


def test_a_post_without_csrf_token_is_refused(alice):
    user = UserFactory()
    Membership.objects.create(user=user, business=alice.business)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/keys/", {"environment": "sandbox", "label": "x"})
    assert response.status_code == 403
    assert ApiKey.objects.filter(business=alice.business, label="x").count() == 0


def test_a_stranger_gets_404_for_another_business_objects(open_for_business, alice, bob_web, api):
    alice_drop = _sandbox_drop(alice, api, "ALICE-1")
    alice_key = ApiKey.objects.filter(business=alice.business).first()
    for path in [
        f"/orders/{alice_drop.pk}/",
        f"/batches/{alice_drop.batch_id}/",
        f"/keys/{alice_key.pk}/revoke/",
    ]:
        assert bob_web.get(path).status_code == 404, path
    assert bob_web.post(f"/keys/{alice_key.pk}/revoke/").status_code == 404
    alice_key.refresh_from_db()
    assert alice_key.is_active


def test_lists_show_only_the_own_business(open_for_business, alice, bob, bob_web, api):
    _sandbox_drop(alice, api, "ALICE-ONLY")
    _sandbox_drop(bob, api, "BOB-ONLY")
    orders = bob_web.get("/orders/").content.decode()
    assert "BOB-ONLY" in orders and "ALICE-ONLY" not in orders
    assert "ALICE-ONLY" not in bob_web.get("/orders/?q=ALICE").content.decode()
    keys = bob_web.get("/keys/").content.decode()
    for key in ApiKey.objects.filter(business=alice.business):
        assert key.hint not in keys
    sandbox = bob_web.post(
        "/sandbox/advance/", {"client_order_id": "ALICE-ONLY", "to": "DELIVERED"}
    )
    assert sandbox.status_code == 400
    assert Drop.objects.get(client_order_id="ALICE-ONLY").status == DropStatus.PENDING


def test_admin_is_for_staff_only(alice_web):
    response = alice_web.get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


@pytest.mark.django_db
def test_staff_without_business_is_sent_to_the_console(client):
    operator = get_user_model().objects.create_superuser("operator", "op@example.com", PASSWORD)
    client.force_login(operator)
    response = client.get("/keys/")
    assert response.status_code == 403
    assert b"operator console" in response.content


# --- Signing up and in ----------------------------------------------------------------------


@pytest.mark.django_db
def test_signup_creates_the_business_and_logs_in(client):
    response = client.post(
        "/signup/",
        {"business_name": "Noodle Bar", "email": "Owner@Noodle.example", "password": PASSWORD},
    )
    assert response.status_code == 302
    business = Business.objects.get(name="Noodle Bar")
    assert business.stage == Stage.REGISTERED
    assert business.memberships.get().user.username == "owner@noodle.example"
    home = client.get("/").content.decode()
    assert "Request API access" in home


@pytest.mark.django_db
def test_signup_refuses_a_taken_email_and_a_weak_password(client):
    UserFactory(username="taken@example.com")
    response = client.post(
        "/signup/", {"business_name": "X", "email": "TAKEN@example.com", "password": "password"}
    )
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert "too common" in response.content.decode()
    assert not Business.objects.filter(name="X").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "email",
    [
        "a" * 174 + "@example.com",  # 186 characters: longer than the username column (150)
        "İ" * 100 + "@x.example",  # 110 characters, 210 once lowercased
    ],
)
def test_signup_refuses_an_email_longer_than_the_username_column(client, email):
    response = client.post(
        "/signup/", {"business_name": "Long Mail", "email": email, "password": PASSWORD}
    )
    assert response.status_code == 200
    assert "at most 150 characters" in response.content.decode()
    assert response.context["form"].errors["email"]
    assert not get_user_model().objects.exists()
    assert not Business.objects.filter(name="Long Mail").exists()


@pytest.mark.django_db
def test_signup_refuses_a_business_name_longer_than_its_column(client):
    response = client.post(
        "/signup/", {"business_name": "N" * 201, "email": "n@example.com", "password": PASSWORD}
    )
    assert response.status_code == 200
    assert response.context["form"].errors["business_name"]
    assert not get_user_model().objects.filter(username="n@example.com").exists()
    assert not Business.objects.exists()


def test_a_key_label_longer_than_its_column_is_a_form_error(alice_web, alice):
    response = post_key_form(alice_web, environment="sandbox", label="L" * 101)
    assert response.status_code == 400
    assert "at most 100 characters" in response.content.decode()
    assert not ApiKey.objects.filter(business=alice.business, label__startswith="L").exists()


@pytest.mark.django_db
def test_login_is_throttled_after_ten_failures(client):
    UserFactory(username="shop@example.com")
    for _ in range(MAX_FAILED_LOGINS):
        response = client.post("/login/", {"username": "shop@example.com", "password": "wrong"})
        assert response.status_code == 200
        assert "Too many" not in response.content.decode()
    # Now even the right password is refused, with a clear message.
    response = client.post("/login/", {"username": "shop@example.com", "password": PASSWORD})
    assert response.status_code == 200
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address is not locked out by this one's failures.
    other = Client(REMOTE_ADDR="10.9.8.7")
    response = other.post("/login/", {"username": "shop@example.com", "password": PASSWORD})
    assert response.status_code == 302


@pytest.mark.django_db
def test_logout_is_a_post(client):
    user = UserFactory()
    client.force_login(user)
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/").status_code == 302
    assert client.get("/keys/").status_code == 302


@pytest.mark.django_db
def test_password_reset_mails_a_working_link(client):
    UserFactory(username="reset@example.com")
    client.post("/password-reset/", {"email": "reset@example.com"})
    assert len(mail.outbox) == 1
    link = re.search(r"http://testserver(/password-reset/\S+/)", mail.outbox[0].body).group(1)
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200
    response = client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "a brand new secret", "new_password2": "a brand new secret"},
    )
    assert response.status_code == 302
    assert Client().login(username="reset@example.com", password="a brand new secret")


# --- Onboarding --------------------------------------------------------------------------


def test_request_access_then_the_checklist_waits_for_approval(make_tenant, member):
    tenant = make_tenant(stage="registered")
    web = member(tenant.business)
    response = web.post(
        "/access/", {"use_case": "Lunch deliveries", "expected_monthly_volume": "1200"}
    )
    assert response.status_code == 302
    tenant.business.refresh_from_db()
    assert tenant.business.stage == Stage.ACCESS_REQUESTED
    assert tenant.business.expected_monthly_volume == 1200
    home = web.get("/").content.decode()
    assert "is with an operator" in home
    # A second request is the service's call: its refusal shows as a message.
    again = web.post("/access/", {"use_case": "Again", "expected_monthly_volume": "1"})
    assert "Access can be requested once" in again.content.decode()


def test_request_live_needs_an_accepted_sandbox_order(open_for_business, make_tenant, member, api):
    tenant = make_tenant(stage="approved")
    web = member(tenant.business)
    refused = web.post("/live/").content.decode()
    assert "Create at least one accepted sandbox order first." in refused
    _sandbox_drop(tenant, api, "FIRST-1")
    assert "Request live access" in web.get("/").content.decode()
    assert web.post("/live/").status_code == 302
    tenant.business.refresh_from_db()
    assert tenant.business.live_requested_at is not None
    assert "an operator will switch it on" in web.get("/").content.decode()


# --- Keys ----------------------------------------------------------------------------------


def test_a_new_key_is_shown_once_and_stored_only_as_a_digest(alice_web, alice, api):
    response = post_key_form(alice_web, environment="sandbox", label="web shop")
    assert response.status_code == 201
    content = response.content.decode()
    [plaintext] = re.findall(r"svc_test_[A-Za-z0-9]{40}", content)
    assert KEY_PATTERN.match(plaintext)
    assert "you will not see it again" in content
    assert "no-store" in response["Cache-Control"]
    key = ApiKey.objects.get(business=alice.business, label="web shop")
    assert key.digest == digest_of(plaintext) and key.created_by == alice_web.user
    # Nowhere afterwards: not on the page, not in the session.
    later = alice_web.get("/keys/").content.decode()
    assert plaintext not in later and key.hint in later
    assert plaintext not in str(dict(alice_web.session.items()))
    assert api.get("/account", plaintext).status_code == 200


def test_resending_the_key_form_makes_no_second_key(alice_web, alice):
    page = alice_web.get("/keys/").content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    form = {"form_token": token, "environment": "sandbox", "label": "refreshed"}
    assert alice_web.post("/keys/", form).status_code == 201
    again = alice_web.post("/keys/", form)  # what a browser refresh of the answer sends
    assert again.status_code == 409
    assert "already sent, so no new key was made" in again.content.decode()
    assert not re.search(r"svc_test_[A-Za-z0-9]{40}", again.content.decode())
    assert ApiKey.objects.filter(business=alice.business, label="refreshed").count() == 1
    assert alice_web.post("/keys/", {"environment": "sandbox"}).status_code == 409


def test_live_keys_wait_for_live_access(make_tenant, member):
    tenant = make_tenant(stage="approved")
    web = member(tenant.business)
    response = post_key_form(web, environment="live", label="too early")
    assert response.status_code == 400
    assert not ApiKey.objects.filter(label="too early").exists()
    registered = member(make_tenant(stage="registered").business)
    assert "once your access request is approved" in registered.get("/keys/").content.decode()


def test_key_limit_shows_the_service_message(alice_web, alice, settings):
    settings.MAX_ACTIVE_KEYS_PER_ENVIRONMENT = 1  # alice already has one sandbox key
    response = post_key_form(alice_web, environment="sandbox", label="one too many")
    assert response.status_code == 400
    assert "At most 1 active keys per environment." in response.content.decode()


def test_revoking_asks_first_then_the_key_stops_working(alice_web, alice, api):
    key = ApiKey.objects.get(business=alice.business, environment=Environment.SANDBOX)
    confirm = alice_web.get(f"/keys/{key.pk}/revoke/")
    assert "cannot be undone" in confirm.content.decode()
    key.refresh_from_db()
    assert key.is_active
    assert alice_web.post(f"/keys/{key.pk}/revoke/").status_code == 302
    key.refresh_from_db()
    assert not key.is_active
    assert api.get("/account", alice.sandbox_key).status_code == 401


# --- Money ---------------------------------------------------------------------------------


def test_wallet_shows_balance_and_a_paginated_ledger(alice_web, alice):
    for _ in range(30):
        alice_web.post("/wallet/sandbox-top-up/", {"amount": "1.00"})
    page = alice_web.get("/wallet/?environment=sandbox").content.decode()
    assert "130.00 USD" in page
    assert "Page 1 of 2" in page
    wallet = Wallet.objects.get(business=alice.business, environment="sandbox")
    assert wallet.balance == Decimal("130.00")
    assert LedgerEntry.objects.filter(wallet=wallet).count() == 31
    live = alice_web.get("/wallet/?environment=live").content.decode()
    assert "100.00 USD" in live and "recorded by our operators" in live


def test_sandbox_top_up_out_of_range_shows_the_billing_message(alice_web):
    response = alice_web.post("/wallet/sandbox-top-up/", {"amount": "50000"})
    assert response.status_code == 400
    assert "A sandbox top-up is between 0.01 and 10000.00." in response.content.decode()


def test_invoiced_accounts_see_their_invoices(make_tenant, member):
    tenant = make_tenant(billing="invoiced")
    Invoice.objects.create(
        business=tenant.business, environment="live", period="2026-10", accrued="12.50"
    )
    page = member(tenant.business).get("/wallet/?environment=live").content.decode()
    assert "Invoices" in page and "2026-10" in page and "12.50" in page
    assert "Top up" not in page


# --- Orders, batches and the sandbox console ----------------------------------------------


def test_orders_search_and_filters(open_for_business, alice, alice_web, api):
    _sandbox_drop(alice, api, "SEARCH-ME-1")
    _sandbox_drop(alice, api, "OTHER-2")
    api.bulk(batch(group(drop("LIVE-3"))), alice.live_key)
    found = alice_web.get("/orders/?q=search-me").content.decode()
    assert "SEARCH-ME-1" in found and "OTHER-2" not in found
    live = alice_web.get("/orders/?environment=live").content.decode()
    assert "LIVE-3" in live and "OTHER-2" not in live
    assert "LIVE-3" not in alice_web.get("/orders/?status=DELIVERED").content.decode()


def test_sample_batch_goes_through_the_pipeline_each_time_anew(region, alice, alice_web):
    for _ in range(2):
        response = alice_web.post("/sandbox/sample-batch/")
        assert response.status_code == 302
        page = alice_web.get(response["Location"]).content.decode()
        assert "2 accepted" in page
        for reason in [
            "INVALID_PHONE",
            "INVALID_COORDINATES",
            "GEOCODE_FAILED",
            "OUT_OF_SERVICE_AREA",
            "SCHEDULE_IN_PAST",
            "OUTSIDE_OPERATING_HOURS",
            "DUPLICATE_CLIENT_ORDER_ID",
        ]:
            assert reason in page
    assert Batch.objects.filter(business=alice.business, environment="sandbox").count() == 2
    assert Drop.objects.filter(business=alice.business, environment="sandbox").count() == 4


def test_test_driver_delivers_from_the_console(open_for_business, alice, alice_web, api):
    created = _sandbox_drop(alice, api, "DRIVE-1")
    response = alice_web.post(
        "/sandbox/advance/", {"client_order_id": "DRIVE-1", "to": "DELIVERED"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/orders/{created.pk}/"
    page = alice_web.get(response["Location"]).content.decode()
    assert "Delivered" in page and "Sandbox Test Driver" in page
    # Three moves stored after the creation, which is the drop row itself.
    assert created.events.count() == 3
    assert [e.status for e in timeline_of(created.pk)] == [
        DropStatus.PENDING,
        DropStatus.ASSIGNED,
        DropStatus.PICKED_UP,
        DropStatus.DELIVERED,
    ]
    again = alice_web.post("/sandbox/advance/", {"client_order_id": "DRIVE-1"})
    assert again.status_code == 400
    assert "cannot move forward" in again.content.decode()


def test_sandbox_console_waits_for_approval(make_tenant, member):
    web = member(make_tenant(stage="requested").business)
    assert web.post("/sandbox/sample-batch/").status_code == 403
    assert Batch.objects.count() == 0


def test_live_orders_are_not_moved_by_the_test_driver(open_for_business, alice, alice_web, api):
    api.bulk(batch(group(drop("LIVE-ONLY"))), alice.live_key)
    response = alice_web.post("/sandbox/advance/", {"client_order_id": "LIVE-ONLY"})
    assert response.status_code == 400
    assert Drop.objects.get(client_order_id="LIVE-ONLY").status == DropStatus.PENDING


def test_suspended_business_sees_the_suspension(alice, alice_web):
    services.suspend(business=alice.business)
    assert "suspended" in alice_web.get("/").content.decode()
    assert alice_web.post("/sandbox/sample-batch/").status_code == 403


@pytest.mark.django_db
def test_admin_login_is_throttled_too(client):
    get_user_model().objects.create_superuser("operator", "op@example.com", PASSWORD)
    for _ in range(MAX_FAILED_LOGINS):
        client.post("/admin/login/", {"username": "operator", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "operator", "password": PASSWORD})
    assert response.status_code == 200
    assert "Too many failed sign-in attempts" in response.content.decode()


def test_a_declined_business_is_invited_to_request_again(make_tenant, member):
    tenant = make_tenant(stage="requested")
    services.reject(business=tenant.business)
    web = member(tenant.business)
    home = web.get("/").content.decode()
    assert "Your last request was declined" in home
    assert 'href="/access/"' in home
    response = web.post("/access/", {"use_case": "Better story", "expected_monthly_volume": "10"})
    assert response.status_code == 302
    tenant.business.refresh_from_db()
    assert tenant.business.stage == Stage.ACCESS_REQUESTED
