"""Couriers in the operator console (docs/operator.md "Couriers"): who carries live orders."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin

from console.columns import ServiceTimesAdmin
from couriers.models import Driver
from couriers.services import courier_phone, deactivate_courier, set_courier_password
from fleet.models import VehicleType
from orders.decisions import phone_is_valid


class CourierForm(forms.ModelForm):
    """A courier as operators make one (docs/operator.md): name, phone (the sign-in), vehicle,
    active, and a new password, written only as a hash and never shown."""

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
        fields = ["name", "phone", "vehicle", "active"]

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
    list_display = ["name", "phone", "vehicle", "online", "active", "is_sandbox_test_driver"]
    list_filter = ["active", "online", "vehicle"]
    search_fields = ["name", "phone"]

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if not request.user.has_perm("couriers.manage_courier"):
            form.base_fields.pop("new_password", None)
        return form

    def save_model(self, request, obj, form, change) -> None:
        # A change writes the form's fields only: the password and credential version read
        # when the form opened must not overwrite a password set meanwhile.
        obj.save(update_fields=CourierForm.Meta.fields if change else None)
        password = form.cleaned_data.get("new_password")
        if password and request.user.has_perm("couriers.manage_courier"):
            set_courier_password(courier=obj, password=password)
        if not obj.active:
            deactivate_courier(courier=obj)
