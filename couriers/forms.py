"""The courier app's sign-in form (docs/couriers.md): phone and password, behind the
dashboard's sign-in throttle (accounts/ratelimit.py), as POST /api/v1/courier/session is."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts import ratelimit
from couriers.models import Driver
from couriers.services import courier_phone, sign_in

LOCKED_OUT = {
    ratelimit.ADDRESS: _(
        "Too many failed sign-ins from this network. Try again in %(minutes)s minutes."
    ),
    ratelimit.USERNAME: _(
        "Too many failed sign-ins with this phone. Try again in %(minutes)s minutes, or ask "
        "your dispatcher."
    ),
    ratelimit.UNAVAILABLE: _("Signing in is paused for a moment. Try again in a minute."),
}
WRONG = _("The phone or the password is wrong.")


class CourierSignInForm(forms.Form):
    phone = forms.CharField(
        max_length=40,
        widget=forms.TextInput(
            attrs={
                "type": "tel",
                "autocomplete": "tel",
                "inputmode": "tel",
                "aria-describedby": "phone-help",
            }
        ),
        help_text=_("With the country code, e.g. +855 12 345 678."),
    )
    password = forms.CharField(
        max_length=200,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, request, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.request = request
        self.courier: Driver | None = None
        self.locked_out = False

    def clean_phone(self) -> str:
        return courier_phone(self.cleaned_data["phone"])

    def clean(self):
        """The lockout first (one counter read, no hashing), then the password check;
        a failure counts, a success clears this phone's count (not the address's)."""
        cleaned = super().clean()
        phone = cleaned.get("phone") or courier_phone(self.data.get("phone") or "")
        address = ratelimit.client_address(self.request)
        # A field left empty: nothing to check, but it counts as a guess.
        password = "" if self.errors else cleaned["password"]
        signed = sign_in(phone=phone, password=password, address=address)
        if signed.locked:
            self.locked_out = True
            raise forms.ValidationError(
                LOCKED_OUT[signed.locked],
                code="rate_limited",
                params={"minutes": ratelimit.WINDOW_SECONDS // 60},
            )
        if self.errors:
            return cleaned
        self.courier = signed.courier
        if self.courier is None:
            raise forms.ValidationError(WRONG, code="invalid_login")
        return cleaned
