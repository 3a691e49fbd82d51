"""What carries a parcel: the vehicle types a pickup can ask for (docs/contract.md §18).

Reference data, like the service areas: seeded by a migration, edited by operators in the
console, read by the batch rules (a parcel must fit its group's vehicle) and by pricing
(the vehicle's multiplier).
"""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _


class ParcelSize(models.TextChoices):
    """Sizes in increasing order: a vehicle takes its own size and every smaller one."""

    S = "S", _("Small (an envelope, a phone box)")
    M = "M", _("Medium (a shoe box)")
    L = "L", _("Large (a suitcase)")
    XL = "XL", _("Extra large (furniture)")


# A size's rank: a parcel fits a vehicle when its rank is at most the vehicle's.
SIZE_RANK = {size.value: rank for rank, size in enumerate(ParcelSize)}

DEFAULT_VEHICLE = "motorbike"

# The seeded types' names (migration 0002), marked so that the catalogues carry them: a
# page shows a type's name in its language when it is one of these, else as it was typed
# (VehicleType.display_name). A type an operator adds is named in its own words.
SEEDED_NAMES = (
    gettext_noop("Motorbike"),
    gettext_noop("Tuk-tuk"),
    gettext_noop("Car"),
    gettext_noop("Van"),
)


class VehicleType(models.Model):
    code = models.SlugField(max_length=20, primary_key=True)
    name = models.CharField(max_length=100)
    max_parcel_size = models.CharField(max_length=2, choices=ParcelSize.choices)
    max_parcel_weight_kg = models.DecimalField(
        "max parcel kg", max_digits=7, decimal_places=2, validators=[MinValueValidator(0)]
    )
    max_load_kg = models.DecimalField(
        "max load kg per order", max_digits=8, decimal_places=2, validators=[MinValueValidator(0)]
    )
    price_multiplier = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("1.00"),
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text="The delivery price (base fee + distance) is multiplied by this.",
    )
    active = models.BooleanField(default=True, help_text="Inactive types cannot be asked for.")

    class Meta:
        ordering = ["price_multiplier", "code"]
        constraints = [
            models.CheckConstraint(
                condition=Q(price_multiplier__gt=0), name="vehicle_multiplier_positive"
            ),
            models.CheckConstraint(
                condition=Q(max_parcel_weight_kg__gt=0)
                & Q(max_load_kg__gte=models.F("max_parcel_weight_kg")),
                name="vehicle_limits_consistent",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def display_name(self) -> str:
        """The name in the page's language: a seeded name is in the catalogues."""
        return gettext(self.name) if self.name else ""  # gettext("") is the catalogue's header

    def takes_size(self, size: str) -> bool:
        return SIZE_RANK[size] <= SIZE_RANK[self.max_parcel_size]
