"""seed_demo: the demo region, the sandbox test driver, a LIVE demo business with a dashboard
login, a demo admin, and a sandbox key that stays the same from one run to the next."""

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from accounts import services
from accounts.keys import digest_of
from accounts.models import ApiKey, Business, Environment, Membership
from console.provisioning import provision_business
from couriers.models import Driver
from couriers.services import provision_courier
from dashboard.models import PickupPlace
from geo.demo import seed_region

DEMO_EMAIL = "demo@example.com"
DEMO_USER_PASSWORD = "demo-shop"
DEMO_KEY_LABEL = "Demo sandbox key"
ADMIN_USERNAME = "admin"


def ensure_demo_admin() -> str:
    """The `admin` superuser, only where a known password is acceptable; returns the login line.

    A database seeded with DEBUG off may be reachable by others, so `admin` / `admin` is never
    made there; DEMO_ADMIN_PASSWORD is an explicit choice and is not printed back.
    """
    User = get_user_model()
    if User.objects.filter(username=ADMIN_USERNAME).exists():
        return f"Admin login: {ADMIN_USERNAME} / (unchanged)"
    if settings.DEMO_ADMIN_PASSWORD:
        password, shown = settings.DEMO_ADMIN_PASSWORD, "(the DEMO_ADMIN_PASSWORD you set)"
    elif settings.DEBUG:
        password = shown = "admin"
    else:
        return (
            "No admin login was created (DEBUG is off and DEMO_ADMIN_PASSWORD is not set): "
            "run `manage.py createsuperuser`, or set DEMO_ADMIN_PASSWORD and run seed_demo again."
        )
    User.objects.create_superuser(ADMIN_USERNAME, "admin@example.com", password)
    return f"Admin login: {ADMIN_USERNAME} / {shown}"


def ensure_demo_login(business: Business) -> str:
    """A dashboard login of the demo business, under the same rules as the demo admin."""
    User = get_user_model()
    if User.objects.filter(username=DEMO_EMAIL).exists():
        return f"Dashboard login: {DEMO_EMAIL} / (unchanged)"
    if settings.DEMO_ADMIN_PASSWORD:
        password, shown = settings.DEMO_ADMIN_PASSWORD, "(the DEMO_ADMIN_PASSWORD you set)"
    elif settings.DEBUG:
        password = shown = DEMO_USER_PASSWORD
    else:
        return "No dashboard login was created (DEBUG is off and DEMO_ADMIN_PASSWORD is not set)."
    user = User.objects.create_user(username=DEMO_EMAIL, email=DEMO_EMAIL, password=password)
    Membership.objects.create(user=user, business=business, is_owner=True)
    return f"Dashboard login: {DEMO_EMAIL} / {shown}"


DEMO_COURIER_PHONE = "+85512000001"
DEMO_COURIER_PASSWORD = "demo-courier"


def ensure_demo_courier() -> str:
    """A courier who signs in to the courier app, under the same rules as the demo admin."""
    if Driver.objects.filter(phone=DEMO_COURIER_PHONE).exclude(password="").exists():
        return f"Courier login (/courier/): {DEMO_COURIER_PHONE} / (unchanged)"
    if settings.DEMO_ADMIN_PASSWORD:
        password, shown = settings.DEMO_ADMIN_PASSWORD, "(the DEMO_ADMIN_PASSWORD you set)"
    elif settings.DEBUG:
        password = shown = DEMO_COURIER_PASSWORD
    else:
        return "No courier login was created (DEBUG is off and DEMO_ADMIN_PASSWORD is not set)."
    provision_courier(
        name="Dara Demo", phone=DEMO_COURIER_PHONE, vehicle="motorbike", password=password
    )
    return f"Courier login (/courier/): {DEMO_COURIER_PHONE} / {shown}"


def demo_key(business: Business, key_file: Path | None) -> str:
    """The sandbox key kept in `key_file` while it still works; else a new one, kept there.

    Keys are stored only as digests, so the plaintext a restart should print again lives in
    that local file (mode 0600, next to the SQLite database; never in the repository).
    """
    if key_file is not None and key_file.exists():
        kept = key_file.read_text().strip()
        if ApiKey.objects.filter(
            business=business, digest=digest_of(kept), revoked_at__isnull=True
        ).exists():
            return kept
    ApiKey.objects.filter(business=business, label=DEMO_KEY_LABEL).update(revoked_at=timezone.now())
    key = services.create_api_key(
        business=business, environment=Environment.SANDBOX, label=DEMO_KEY_LABEL
    )
    if key_file is not None:
        key_file.touch(mode=0o600)
        key_file.write_text(key.plaintext + "\n")
        os.chmod(key_file, 0o600)
    return key.plaintext


class Command(BaseCommand):
    help = (
        "Create the demo data (safe to run twice) and print the demo logins and a sandbox key "
        "(the one in --key-file while it works, else a fresh one)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--key-file",
            type=Path,
            help="Keep the demo sandbox key here, so the same key is printed on every run.",
        )

    @transaction.atomic
    def handle(self, *args, **opts):
        seed_region()
        Driver.objects.get_or_create(
            is_sandbox_test_driver=True,
            defaults={"name": "Sandbox Test Driver", "phone": "+85512000000"},
        )
        admin_login = ensure_demo_admin()
        business = Business.objects.filter(email=DEMO_EMAIL).first()
        if business is None:
            business = provision_business(
                name="Demo Shop",
                email=DEMO_EMAIL,
                live_balance=0,
                sandbox_balance=100,
                key_label=DEMO_KEY_LABEL,
            ).business
        dashboard_login = ensure_demo_login(business)
        # A saved pickup place, so New delivery books at once (docs/dashboard.md).
        PickupPlace.objects.get_or_create(
            business=business,
            name="Demo Shop, Riverside",
            defaults={"phone": "+85512345678", "address": "Sisowath Quay, Phnom Penh",
                      "lat": 11.5690, "long": 104.9310},
        )  # fmt: skip
        courier_login = ensure_demo_courier()
        key = demo_key(business, opts.get("key_file"))
        self.stdout.write(f"Demo business: {business.name} ({business.stage})")
        self.stdout.write(admin_login)
        self.stdout.write(dashboard_login)
        self.stdout.write(courier_login)
        self.stdout.write(f"Sandbox key: {key}")
