"""factory-boy factories and request-body builders shared by the suite."""

from __future__ import annotations

import itertools
import uuid
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model

from accounts.models import Business
from billing.models import PricingPlan
from couriers.models import Driver

_seq = itertools.count(1)

# Inside the demo area (Phnom Penh), ~1.5 km apart.
SHOP = {"lat": 11.5564, "long": 104.9282}
HOME = {"lat": 11.5696, "long": 104.9210}
PHONE = "+85512345678"
RECIPIENT_PHONE = "+85512345679"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}@example.com")
    email = factory.SelfAttribute("username")

    @factory.post_generation
    def password(user, create, extracted, **kwargs):
        user.set_password(extracted or "correct horse battery")
        if create:
            user.save(update_fields=["password"])


class PricingPlanFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PricingPlan

    name = "Standard"
    base_fee = Decimal("2.00")
    per_km_fee = Decimal("0.50")
    included_km = Decimal("0")


class BusinessFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Business

    name = factory.Sequence(lambda n: f"Shop {n}")
    email = factory.Sequence(lambda n: f"shop{n}@example.com")


class DriverFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Driver

    name = factory.Sequence(lambda n: f"Driver {n}")
    phone = "+85512999999"


def recipient(**overrides) -> dict:
    return {"name": "Recipient", "phone": RECIPIENT_PHONE, **HOME, **overrides}


def drop(
    client_order_id: str | None = None, *, waybill: str | None = None, **recipient_overrides
) -> dict:
    entry = {
        "client_order_id": client_order_id or f"C-{next(_seq)}",
        "dropoff": recipient(**recipient_overrides),
    }
    if waybill is not None:
        entry["external_waybill"] = waybill
    return entry


def pickup(**overrides) -> dict:
    return {"name": "Shop", "phone": PHONE, **SHOP, **overrides}


def group(*drops: dict, **pickup_overrides) -> dict:
    return {"pickup": pickup(**pickup_overrides), "dropoff": list(drops) or [drop()]}


def batch(*groups: dict, client_batch_id: str | None = None) -> dict:
    return {
        "client_batch_id": client_batch_id or f"B-{uuid.uuid4().hex[:12]}",
        "orders": list(groups) or [group()],
    }


def many_drops(n: int, prefix: str = "N") -> dict:
    """One pickup group with n coordinate drops."""
    return batch(group(*[drop(f"{prefix}-{i}") for i in range(n)]))
