"""Forms of the operator console itself: its login, and the confirmations of drop moves."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from uuid import UUID

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.core.validators import RegexValidator
from django.forms import BoundField

from accounts.login import RateLimitedLoginMixin
from orders.models import Drop, FailureReason
from tracking.proof import MAX_PHOTO_BYTES, photo_extension

# WRONG_PIN is the PIN rule's to set (tracking.lifecycle), never an operator's choice.
OPERATOR_FAILURE_REASONS = [
    (reason.value, reason.label) for reason in FailureReason if reason != FailureReason.WRONG_PIN
]


class RateLimitedAdminLoginForm(RateLimitedLoginMixin, AdminAuthenticationForm):
    """The dashboard's failed-login throttle, for the operator console's login."""


class PinInput(forms.TextInput):
    """A PIN box that never writes a value into the page, not even the one just typed."""

    def __init__(self) -> None:
        super().__init__(
            attrs={
                "inputmode": "numeric",
                "autocomplete": "off",
                "pattern": "[0-9]{4}",
                "maxlength": "4",
                "size": "6",
            }
        )

    def format_value(self, value) -> None:
        return None


class DeliverForm(forms.Form):
    """Mark delivered: one PIN box per drop that asks for one, who took it, and a photo."""

    received_by = forms.CharField(label="Received by", max_length=200, required=False)
    photo = forms.FileField(
        required=False,
        help_text="Optional: a PNG, JPEG or WebP image of at most 5 MB.",
        widget=forms.FileInput(attrs={"accept": "image/png,image/jpeg,image/webp"}),
    )

    def __init__(self, *args, asking_pin: Iterable[Drop] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pin_fields: dict[UUID, str] = {}
        for drop in asking_pin:
            name = f"pin_{drop.pk}"
            self.fields[name] = forms.CharField(
                label=f"PIN for {drop.client_order_id}",
                required=False,  # a drop left without one is reported and stays where it is
                validators=[RegexValidator(r"^[0-9]{4}$", "A PIN is four digits.")],
                widget=PinInput(),
            )
            self.pin_fields[drop.pk] = name
        self.order_fields([*self.pin_fields.values(), "received_by", "photo"])

    def pin_boxes(self) -> list[BoundField]:
        return [self[name] for name in self.pin_fields.values()]

    def proof_boxes(self) -> list[BoundField]:
        return [self["received_by"], self["photo"]]

    def clean_photo(self) -> UploadedFile | None:
        photo = self.cleaned_data.get("photo")
        if not photo:
            return None
        if photo.size > MAX_PHOTO_BYTES:
            raise ValidationError("The photo is larger than 5 MB.")
        photo.seek(0)
        extension = photo_extension(photo.read(12))
        photo.seek(0)
        if extension is None:
            raise ValidationError("The photo must be a PNG, JPEG or WebP image.")
        # Stored under a name of ours: the uploader's file name says nothing we can trust.
        photo.name = f"{uuid.uuid4().hex}.{extension}"
        return photo

    def pins(self) -> dict[UUID, str]:
        """The PINs entered, by drop id (drops left empty are not in it)."""
        return {
            drop_id: pin
            for drop_id, name in self.pin_fields.items()
            if (pin := self.cleaned_data.get(name))
        }


class FailForm(forms.Form):
    """Mark failed: why, from the reasons an operator may give."""

    reason = forms.ChoiceField(
        label="Reason", choices=[("", "---------"), *OPERATOR_FAILURE_REASONS]
    )


class ReturnForm(forms.Form):
    """Mark returned: who took the parcel back at the pickup (docs/contract.md §19)."""

    received_by = forms.CharField(
        label="Received by",
        max_length=200,
        help_text="Who took the parcel back at the pickup.",
    )


class UnitInput(forms.NumberInput):
    """A number box with its unit written after it, e.g. "USD per km".

    `{currency}` in the unit becomes settings.CURRENCY when the box is drawn. The unit is
    tied to the box by aria-describedby, so a screen reader reads it too.
    """

    template_name = "console/widgets/unit_input.html"

    def __init__(self, unit: str, attrs: dict | None = None) -> None:
        super().__init__(attrs)
        self.unit = unit

    def get_context(self, name: str, value, attrs: dict | None) -> dict:
        context = super().get_context(name, value, attrs)
        widget = context["widget"]
        widget["unit"] = self.unit.format(currency=settings.CURRENCY)
        if box_id := widget["attrs"].get("id"):
            widget["unit_id"] = f"{box_id}_unit"
            widget["attrs"]["aria-describedby"] = widget["unit_id"]
        return context
