"""seed_demo: the demo region, the sandbox test driver, a LIVE demo business, a demo admin."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from accounts import services
from accounts.models import ApiKey, Business, Environment
from console.provisioning import provision_business
from geo.demo import seed_region
from orders.models import Driver

DEMO_EMAIL = "demo@example.com"
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


class Command(BaseCommand):
    help = "Create the demo data (safe to run twice) and print a fresh demo sandbox key."

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
        # Keys are shown once; mint a fresh demo key so the printed one always works.
        ApiKey.objects.filter(business=business, label=DEMO_KEY_LABEL).update(
            revoked_at=timezone.now()
        )
        key = services.create_api_key(
            business=business, environment=Environment.SANDBOX, label=DEMO_KEY_LABEL
        )
        self.stdout.write(f"Demo business: {business.name} ({business.stage})")
        self.stdout.write(admin_login)
        self.stdout.write(f"Sandbox key: {key.plaintext}")
