"""Couriers in the operator console (docs/operator.md "Couriers"): who carries live orders."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin
from django.utils import timezone

from console.columns import ServiceTimesAdmin
from couriers.models import Driver
from couriers.services import (
    courier_phone,
    deactivate_courier,
    set_courier_password,
    set_online,
    shift_end_problem,
)
from fleet.models import VehicleType
from orders.decisions import phone_is_valid


class CourierForm(forms.ModelForm):
    """A courier as operators make one (docs/operator.md): name, phone (the sign-in), vehicle,
    active, a new password, written only as a hash and never shown, and when an online
    courier's shift ends."""

    new_password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Set or replace the courier's password (at least "
        f"{settings.COURIER_MIN_PASSWORD} characters); leave empty to keep it. A new password "
        "signs the courier out everywhere: every app session and token ends.",
    )

    class Meta:
        model = Driver
        fields = ["name", "phone", "vehicle", "active", "shift_ends_at"]
        help_texts = {
            "shift_ends_at": "An online courier's: the planner offers them nothing that would "
            "keep them later. Within 24 hours; empty, no end. Going offline clears it."
        }

    def clean_shift_ends_at(self):
        """Checked only when changed: an end already past may stay while other fields are
        edited. Offline has no shift (couriers.services.set_online)."""
        shift_ends_at = self.cleaned_data["shift_ends_at"]
        if "shift_ends_at" not in self.changed_data or shift_ends_at is None:
            return shift_ends_at
        if not self.instance.online:
            raise forms.ValidationError(
                "The courier is offline: a shift's end is set while they are online."
            )
        problem = shift_end_problem(shift_ends_at=shift_ends_at, now=timezone.now())
        if problem is not None:
            raise forms.ValidationError(problem)
        return shift_ends_at

    def clean_phone(self) -> str:
        phone = courier_phone(self.cleaned_data["phone"])
        if not phone_is_valid(phone):
            raise forms.ValidationError("The phone must be in E.164 form, such as +85512345678.")
        return phone

    def clean_vehicle(self) -> str:
        vehicle = self.cleaned_data["vehicle"]
        if not VehicleType.objects.filter(code=vehicle, active=True).exists():
            raise forms.ValidationError("Name an active vehicle type's code, such as motorbike.")
        return vehicle

    def clean_new_password(self) -> str:
        password = self.cleaned_data["new_password"]
        if password and len(password) < settings.COURIER_MIN_PASSWORD:
            minimum = settings.COURIER_MIN_PASSWORD
            raise forms.ValidationError(f"At least {minimum} characters.")
        return password

    def clean(self) -> dict:
        """The phone is the sign-in: a courier who can sign in (a password kept or set here)
        may not share it with another who can. The database's constraint holds it too; this
        says so on the form instead of failing the save."""
        cleaned = super().clean()
        phone = cleaned.get("phone")
        signs_in = bool(cleaned.get("new_password") or self.instance.password)
        others = (
            Driver.objects.filter(phone=phone).exclude(password="").exclude(pk=self.instance.pk)
        )
        if phone and signs_in and others.exists():
            self.add_error("phone", "Another courier signs in with this phone.")
        return cleaned


@admin.register(Driver)
class DriverAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    """Couriers (docs/contract.md §20): made by operators; a new password or switching one off
    ends their app sessions and tokens (couriers.services: set_courier_password,
    deactivate_courier)."""

    form = CourierForm
    list_display = [
        "name",
        "phone",
        "vehicle",
        "online",
        "shift_ends_at",
        "active",
        "is_sandbox_test_driver",
    ]
    list_filter = ["active", "online", "vehicle"]
    search_fields = ["name", "phone"]

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if not request.user.has_perm("couriers.manage_courier"):
            form.base_fields.pop("new_password", None)
        return form

    def save_model(self, request, obj, form, change) -> None:
        # A change writes the form's fields only: the password and credential version read
        # when the form opened must not overwrite a password set meanwhile. The shift's end
        # goes through set_online, the one way it changes, under the row's lock: a courier
        # who went offline meanwhile keeps no shift and is not put back online.
        fields = [name for name in CourierForm.Meta.fields if name != "shift_ends_at"]
        obj.save(update_fields=fields if change else None)
        if change and "shift_ends_at" in form.changed_data:
            courier = Driver.objects.select_for_update().get(pk=obj.pk)
            if courier.online:
                ends = form.cleaned_data["shift_ends_at"]
                set_online(courier=courier, online=True, shift_ends_at=ends)
        password = form.cleaned_data.get("new_password")
        if password and request.user.has_perm("couriers.manage_courier"):
            set_courier_password(courier=obj, password=password)
        if not obj.active:
            deactivate_courier(courier=obj)
