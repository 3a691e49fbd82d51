"""seed_demo: the demo region, the sandbox test driver, an operator and a LIVE demo business."""

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from accounts import services
from accounts.models import ApiKey, Business, Environment
from accounts.provisioning import provision_business
from geo.demo import seed_region
from orders.models import Driver

DEMO_EMAIL = "demo@example.com"
DEMO_KEY_LABEL = "Demo sandbox key"


class Command(BaseCommand):
    help = "Create the demo data (safe to run twice) and print a fresh demo sandbox key."

    @transaction.atomic
    def handle(self, *args, **opts):
        seed_region()
        Driver.objects.get_or_create(
            is_sandbox_test_driver=True,
            defaults={"name": "Sandbox Test Driver", "phone": "+85512000000"},
        )
        password = os.environ.get("DEMO_ADMIN_PASSWORD", "admin")
        User = get_user_model()
        admin, created = User.objects.get_or_create(
            username="admin",
            defaults={"is_staff": True, "is_superuser": True, "email": "admin@example.com"},
        )
        if created:
            admin.set_password(password)
            admin.save()
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
        self.stdout.write(f"Admin login: admin / {password if created else '(unchanged)'}")
        self.stdout.write(f"Sandbox key: {key.plaintext}")
