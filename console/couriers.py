"""Couriers in the operator console (docs/operator.md "Couriers"): who carries live orders."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.hashers import make_password

from console.columns import ServiceTimesAdmin
from couriers.services import courier_phone, deactivate_courier
from fleet.models import VehicleType
from orders.decisions import phone_is_valid
from orders.models import Driver


class CourierForm(forms.ModelForm):
    """A courier as operators make one (docs/operator.md): name, phone (the sign-in), vehicle,
    active, and a new password, written only as a hash and never shown."""

    new_password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Set or replace the courier's password (at least "
        f"{settings.COURIER_MIN_PASSWORD} characters); leave empty to keep it. A new password "
        "ends the courier's app sessions.",
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


@admin.register(Driver)
class DriverAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    """Couriers (docs/contract.md §20): made by operators; switching one off ends their app
    sessions and tokens (couriers.services.deactivate_courier)."""

    form = CourierForm
    list_display = ["name", "phone", "vehicle", "online", "active", "is_sandbox_test_driver"]
    list_filter = ["active", "online", "vehicle"]
    search_fields = ["name", "phone"]

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if not request.user.has_perm("orders.manage_courier"):
            form.base_fields.pop("new_password", None)
        return form

    def save_model(self, request, obj, form, change) -> None:
        password = form.cleaned_data.get("new_password")
        if password and request.user.has_perm("orders.manage_courier"):
            obj.password = make_password(password)
        super().save_model(request, obj, form, change)
        if not obj.active:
            deactivate_courier(courier=obj)
