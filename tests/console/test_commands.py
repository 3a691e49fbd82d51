"""Operator commands (docs/contract.md §9): provision_business and seed_demo."""

from __future__ import annotations

import json
import re
from datetime import time
from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from accounts.keys import KEY_PATTERN
from accounts.models import ApiKey, BillingModel, Business, Stage
from billing.models import Wallet
from couriers.models import Driver
from geo.models import OpeningHours, Place, ServiceArea
from tests.factories import batch, drop, group

pytestmark = pytest.mark.django_db


def provision(*options: str) -> dict:
    out = StringIO()
    call_command("provision_business", *options, stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def named(name: str, *options: str) -> tuple[str, ...]:
    return ("--name", name, "--email", f"{name.lower().replace(' ', '.')}@example.com", *options)


def balance(business_id: str, environment: str) -> Decimal:
    return Wallet.objects.get(business_id=business_id, environment=environment).balance


def account(api, key: str) -> dict:
    response = api.get("/account", key)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_provision_business_defaults_to_a_live_wallet_account(api):
    printed = provision(*named("Default Shop"), "--json")

    assert set(printed) == {"business_id", "sandbox_key", "live_key"}
    business = Business.objects.get(pk=printed["business_id"])
    assert business.name == "Default Shop"
    assert business.stage == Stage.LIVE
    assert business.billing_model == BillingModel.WALLET
    assert business.net_days == 30
    plan = business.pricing_plan
    assert (plan.base_fee, plan.per_km_fee, plan.included_km) == (
        Decimal("2.00"),
        Decimal("0.50"),
        Decimal("0"),
    )
    assert balance(business.pk, "sandbox") == Decimal("100.00")
    assert balance(business.pk, "live") == Decimal("0.00")
    assert KEY_PATTERN.match(printed["sandbox_key"])
    assert KEY_PATTERN.match(printed["live_key"])
    assert printed["sandbox_key"].startswith("svc_test_")
    assert printed["live_key"].startswith("svc_live_")
    sandbox = account(api, printed["sandbox_key"])
    assert sandbox["business"]["id"] == printed["business_id"]
    assert sandbox["environment"] == "sandbox"
    assert sandbox["wallet"] == {"balance": "100.00", "owed": "0.00"}
    live = account(api, printed["live_key"])
    assert live["environment"] == "live"
    assert live["wallet"] == {"balance": "0.00", "owed": "0.00"}


@pytest.mark.parametrize(
    ("stage", "stored_stage", "has_sandbox_key", "has_live_key"),
    [
        ("registered", Stage.REGISTERED, False, False),
        ("requested", Stage.ACCESS_REQUESTED, False, False),
        ("approved", Stage.APPROVED, True, False),
        ("live", Stage.LIVE, True, True),
    ],
)
def test_provision_business_mints_only_the_keys_its_stage_allows(
    api, stage, stored_stage, has_sandbox_key, has_live_key
):
    printed = provision(*named(f"Shop {stage}"), "--stage", stage, "--json")

    business = Business.objects.get(pk=printed["business_id"])
    assert business.stage == stored_stage
    assert (printed["sandbox_key"] is not None) == has_sandbox_key
    assert (printed["live_key"] is not None) == has_live_key
    environments = ApiKey.objects.filter(business=business).values_list("environment", flat=True)
    assert sorted(environments) == ["live"] * has_live_key + ["sandbox"] * has_sandbox_key
    for environment, key in (("sandbox", printed["sandbox_key"]), ("live", printed["live_key"])):
        if key is not None:
            assert account(api, key)["environment"] == environment


def test_provision_business_sets_wallet_balances_and_pricing(api):
    printed = provision(
        *named("Priced Shop"),
        "--billing", "wallet",
        "--live-balance", "12.34",
        "--sandbox-balance", "56.78",
        "--base-fee", "1.50",
        "--per-km-fee", "0.25",
        "--included-km", "2.5",
        "--json",
    )  # fmt: skip

    business = Business.objects.get(pk=printed["business_id"])
    assert balance(business.pk, "live") == Decimal("12.34")
    assert balance(business.pk, "sandbox") == Decimal("56.78")
    plan = business.pricing_plan
    assert (plan.base_fee, plan.per_km_fee, plan.included_km) == (
        Decimal("1.50"),
        Decimal("0.25"),
        Decimal("2.5"),
    )
    pricing = {
        "base_fee": "1.50",
        "per_km_fee": "0.25",
        "included_km": "2.50",
        "return_fee_percent": "50.00",
        "cod_fee_percent": "1.00",
        "vehicle_multipliers": {
            "motorbike": "1.00",
            "tuktuk": "1.50",
            "car": "2.00",
            "van": "3.00",
        },
    }
    live = account(api, printed["live_key"])
    assert live["wallet"] == {"balance": "12.34", "owed": "0.00"}
    assert live["pricing"] == pricing
    sandbox = account(api, printed["sandbox_key"])
    assert sandbox["wallet"] == {"balance": "56.78", "owed": "0.00"}
    assert sandbox["pricing"] == pricing


def test_provision_business_can_make_an_invoiced_account_with_its_net_days(api):
    printed = provision(
        *named("Invoiced Shop"), "--billing", "invoiced", "--net-days", "14", "--json"
    )

    business = Business.objects.get(pk=printed["business_id"])
    assert business.billing_model == BillingModel.INVOICED
    assert business.net_days == 14
    live = account(api, printed["live_key"])
    assert live["billing_model"] == "invoiced"
    assert live["invoice"]["accrued"] == "0.00"
    assert "wallet" not in live


@pytest.mark.parametrize(
    "bad_option",
    [
        ("--live-balance", "-1"),
        ("--sandbox-balance", "NaN"),
        ("--base-fee", "lots"),
        ("--net-days", "-1"),
        ("--net-days", "soon"),
        ("--stage", "rejected"),
        ("--billing", "barter"),
    ],
    ids=repr,
)
def test_provision_business_refuses_bad_options_and_creates_nothing(bad_option):
    with pytest.raises(CommandError):
        provision(*named("Broken Shop"), *bad_option)
    assert not Business.objects.exists()


def seed_demo() -> str:
    """Run seed_demo; return the sandbox key it printed."""
    out = StringIO()
    call_command("seed_demo", stdout=out)
    found = re.search(r"(svc_test_[A-Za-z0-9]{40})\b", out.getvalue())
    assert found, out.getvalue()
    return found.group(1)


def assert_demo_data_once() -> None:
    area = ServiceArea.objects.get(name="Phnom Penh")
    assert area.active
    rings = area.geojson["coordinates"][0]
    assert {lon for lon, _ in rings} == {104.80, 105.00}
    assert {lat for _, lat in rings} == {11.45, 11.70}
    hours = list(OpeningHours.objects.filter(area=area).values_list("weekday", "opens", "closes"))
    assert sorted(hours) == [(day, time(7), time(21)) for day in range(7)]
    assert OpeningHours.objects.count() == 7
    places = {p.name: (p.lat, p.long) for p in Place.objects.all()}
    assert places == {
        "Central Market, Phnom Penh": (11.5696, 104.9210),
        "Royal Palace, Phnom Penh": (11.5637, 104.9311),
        "Aeon Mall Phnom Penh": (11.5486, 104.9322),
        "Phnom Penh International Airport": (11.5466, 104.8441),
        "Angkor Wat, Siem Reap": (13.4125, 103.8670),
    }
    driver = Driver.objects.get(is_sandbox_test_driver=True)
    assert driver.name == "Sandbox Test Driver"
    assert Business.objects.get().stage == Stage.LIVE


def test_seed_demo_creates_the_demo_region_and_a_live_business_with_a_working_key(api):
    key = seed_demo()

    assert_demo_data_once()
    data = account(api, key)
    assert data["environment"] == "sandbox"
    assert data["business"]["id"] == str(Business.objects.get().pk)


def test_seed_demo_is_safe_to_run_twice(api, clock):
    seed_demo()
    key = seed_demo()

    assert_demo_data_once()
    assert account(api, key)["environment"] == "sandbox"
    # One saved pickup place, inside the demo region: New delivery books from it at once.
    from dashboard.models import PickupPlace
    from geo.services import load_coverage

    [place] = PickupPlace.objects.all()
    assert load_coverage().locate([place.lat], [place.long]) != [()]
    # The demo region is usable as seeded: the printed key places an order in it.
    response = api.bulk(batch(group(drop("DEMO-1"))), key)
    assert response.status_code == 200, response.content
    assert response.json()["data"]["counts"]["accepted"] == 1


# --- the demo admin: only with DEBUG on or DEMO_ADMIN_PASSWORD set


def seed_demo_output() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def test_seed_demo_with_debug_off_and_no_password_creates_no_superuser(settings):
    settings.DEBUG, settings.DEMO_ADMIN_PASSWORD = False, ""

    printed = seed_demo_output()

    assert not get_user_model().objects.filter(is_superuser=True).exists()
    assert authenticate(username="admin", password="admin") is None
    assert "No admin login was created" in printed
    assert "manage.py createsuperuser" in printed and "DEMO_ADMIN_PASSWORD" in printed


def test_seed_demo_with_debug_on_makes_admin_admin(settings):
    settings.DEBUG, settings.DEMO_ADMIN_PASSWORD = True, ""

    printed = seed_demo_output()

    user = authenticate(username="admin", password="admin")
    assert user is not None and user.is_superuser and user.is_staff
    assert "Admin login: admin / admin" in printed
    assert "Admin login: admin / (unchanged)" in seed_demo_output()  # safe to run twice


def test_seed_demo_with_demo_admin_password_uses_it_and_does_not_print_it(settings):
    settings.DEBUG, settings.DEMO_ADMIN_PASSWORD = False, "correct-horse-battery"

    printed = seed_demo_output()

    user = authenticate(username="admin", password="correct-horse-battery")
    assert user is not None and user.is_superuser
    assert authenticate(username="admin", password="admin") is None
    assert "Admin login: admin / (the DEMO_ADMIN_PASSWORD you set)" in printed
    assert "correct-horse-battery" not in printed


# --- make run for a newcomer: the same key on every run, a dashboard login


def seed_demo_with(key_file) -> str:
    out = StringIO()
    call_command("seed_demo", key_file=key_file, stdout=out)
    return out.getvalue()


def printed_key(printed: str) -> str:
    found = re.search(r"Sandbox key: (svc_test_[A-Za-z0-9]{40})\b", printed)
    assert found, printed
    return found.group(1)


def test_the_printed_demo_key_survives_a_restart(api, tmp_path):
    key_file = tmp_path / ".demo-key"

    first = printed_key(seed_demo_with(key_file))
    again = printed_key(seed_demo_with(key_file))

    assert again == first
    assert account(api, first)["environment"] == "sandbox"
    assert key_file.read_text().strip() == first
    assert key_file.stat().st_mode & 0o777 == 0o600


def test_a_revoked_or_foreign_kept_key_is_replaced_by_a_working_one(api, tmp_path):
    key_file = tmp_path / ".demo-key"
    first = printed_key(seed_demo_with(key_file))
    ApiKey.objects.update(revoked_at=timezone.now())

    second = printed_key(seed_demo_with(key_file))
    key_file.write_text("svc_test_" + "x" * 40)
    third = printed_key(seed_demo_with(key_file))

    assert len({first, second, third}) == 3
    assert account(api, third)["environment"] == "sandbox"
    assert api.get("/account", second).status_code == 401  # replaced keys are revoked


def test_seed_demo_prints_a_dashboard_login_that_signs_in_to_the_demo_business(settings):
    settings.DEBUG, settings.DEMO_ADMIN_PASSWORD = True, ""

    printed = seed_demo_output()

    assert "Dashboard login: demo@example.com / demo-shop" in printed
    user = authenticate(username="demo@example.com", password="demo-shop")
    assert user is not None and not user.is_staff
    assert user.membership.business.email == "demo@example.com"
    assert "Dashboard login: demo@example.com / (unchanged)" in seed_demo_output()


def test_seed_demo_prints_a_courier_login_that_signs_in_to_the_courier_api(settings, api):
    settings.DEBUG, settings.DEMO_ADMIN_PASSWORD = True, ""

    printed = seed_demo_output()

    assert "Courier login (/courier/): +85512000001 / demo-courier" in printed
    answer = api.post(
        "/courier/session", {"phone": "+85512000001", "password": "demo-courier"}, None
    )
    assert answer.status_code == 200
    assert "Courier login (/courier/): +85512000001 / (unchanged)" in seed_demo_output()


def test_no_dashboard_login_with_debug_off_and_no_password(settings):
    settings.DEBUG, settings.DEMO_ADMIN_PASSWORD = False, ""

    printed = seed_demo_output()

    assert "No dashboard login was created" in printed
    assert not get_user_model().objects.filter(username="demo@example.com").exists()
