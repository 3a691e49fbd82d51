"""Dashboard forms: each checks the shape of one page's input; the services decide the rest."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator
from django.utils.translation import gettext_lazy as _

from accounts.login import RateLimitedLoginMixin
from accounts.models import ApiKey, Business, Environment
from events.endpoints import (
    ALL_TYPES,
    MAX_DESCRIPTION_LENGTH,
    MAX_URL_LENGTH,
    check_endpoint_url,
    event_types_of,
)
from events.models import EventType
from events.ssrf import UnsafeUrl
from notifications.models import Channel as NotificationChannel
from notifications.texts import SMS_MAX_CHARS, TemplateError
from notifications.texts import check as check_template
from orders.inputs import MAX_NAME, MAX_NOTES, MAX_WAYBILL
from orders.models import Batch, Drop, DropStatus, UndeliverableAction, WindowStatus
from orders.statuses import EDITABLE_LOCATION, HAPPY_PATH, RETURN_PATH
from tracking.lifecycle import ADVANCE_TARGETS


def _column_length(model, field_name: str) -> int:
    return model._meta.get_field(field_name).max_length


# The email is the username too, whose column (150) is shorter than an email column (254).
# A longer value must be a form error here, not a database error (a 500) in the service.
SIGNUP_EMAIL_MAX_LENGTH = min(
    _column_length(get_user_model(), "username"),
    _column_length(get_user_model(), "email"),
    _column_length(Business, "email"),
)


class SignupForm(forms.Form):
    business_name = forms.CharField(
        label=_("Business name"), max_length=_column_length(Business, "name")
    )
    email = forms.EmailField(
        label=_("Email"), max_length=SIGNUP_EMAIL_MAX_LENGTH, help_text=_("You sign in with it.")
    )
    password = forms.CharField(
        label=_("Password"),
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=_("At least 8 characters, not a common password."),
    )

    def clean_email(self) -> str:
        # Emails are usernames; one spelling per address, so sign-in is case-insensitive.
        email = self.cleaned_data["email"].strip().lower()
        # Lowercasing can lengthen: "İ" becomes two characters, and EmailValidator accepts it.
        if len(email) > SIGNUP_EMAIL_MAX_LENGTH:
            raise forms.ValidationError(
                _("Ensure this value has at most %(limit)s characters.")
                % {"limit": SIGNUP_EMAIL_MAX_LENGTH},
                code="max_length",
            )
        if get_user_model().objects.filter(username__iexact=email).exists():
            raise forms.ValidationError(_("An account with this email already exists."))
        return email

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        password_validation.validate_password(password)
        return password


class LoginForm(RateLimitedLoginMixin, AuthenticationForm):
    def __init__(self, request=None, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.fields["username"].label = _("Email")

    def clean_username(self) -> str:
        return self.cleaned_data["username"].strip().lower()


class RequestAccessForm(forms.Form):
    use_case = forms.CharField(
        label=_("Use case"),
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=_("What you deliver, from where, for whom."),
    )
    expected_monthly_volume = forms.IntegerField(
        label=_("Expected monthly volume"),
        min_value=1,
        max_value=10_000_000,
        help_text=_("Deliveries per month, roughly."),
    )


class ApiKeyForm(forms.Form):
    environment = forms.ChoiceField(
        label=_("Environment"), choices=Environment.choices, widget=forms.RadioSelect
    )
    label = forms.CharField(
        label=_("Label"),
        max_length=_column_length(ApiKey, "label"),
        required=False,
        help_text=_("Where the key will be used, e.g. “web shop”."),
    )

    def __init__(self, *args, environments: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["environment"].choices = [
            (value, Environment(value).label) for value in environments
        ]
        if environments:
            self.fields["environment"].initial = environments[0]


class SandboxTopUpForm(forms.Form):
    amount = forms.DecimalField(
        label=_("Amount"), max_digits=12, decimal_places=2, help_text=_("Play money.")
    )


class CodCreditForm(forms.Form):
    """Move collected cash into the wallet: POST /account/cod/credit-wallet's page twin."""

    environment = forms.ChoiceField(choices=Environment.choices, widget=forms.HiddenInput)
    amount = forms.DecimalField(
        max_digits=12, decimal_places=2, min_value=Decimal("0.01"), label=_("Amount to move")
    )

    def __init__(self, *args, **kwargs) -> None:
        # Its own ids: the sandbox top-up's form on the same page has an `amount` too.
        kwargs.setdefault("auto_id", "cod_%s")
        super().__init__(*args, **kwargs)


class OrderFilterForm(forms.Form):
    """The orders page's filters (and its export's): GET parameters, kept from page to page."""

    q = forms.CharField(
        required=False,
        max_length=100,
        label=_("Search"),
        help_text=_("client_order_id, waybill or recipient name"),
        widget=forms.TextInput(attrs={"type": "search", "placeholder": _("Order, waybill, name")}),
    )
    environment = forms.ChoiceField(
        required=False,
        label=_("Environment"),
        choices=[("", _("All environments")), *Environment.choices],
    )
    status = forms.MultipleChoiceField(
        required=False,
        choices=DropStatus.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("None ticked: every status."),
    )
    window_status = forms.MultipleChoiceField(
        required=False,
        label=_("Drop-off window"),
        choices=WindowStatus.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("None ticked: any order, with a window or not."),
    )
    created_from = forms.DateField(
        required=False, label=_("Created from"), widget=forms.DateInput(attrs={"type": "date"})
    )
    created_to = forms.DateField(
        required=False, label=_("to"), widget=forms.DateInput(attrs={"type": "date"})
    )
    batch = forms.CharField(
        required=False,
        max_length=_column_length(Batch, "client_batch_id"),
        label=_("Batch"),
        help_text=_("client_batch_id or batch_id"),
        widget=forms.TextInput(attrs={"placeholder": _("client_batch_id or batch_id")}),
    )

    def clean_q(self) -> str:
        return self.cleaned_data["q"].strip()

    def clean_batch(self) -> str:
        return self.cleaned_data["batch"].strip()

    def clean(self) -> dict:
        data = super().clean()
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and start > end:
            self.add_error("created_to", _("The last day comes before the first."))
        return data


class EnvironmentFilterForm(forms.Form):
    environment = forms.ChoiceField(
        required=False,
        label=_("Environment"),
        choices=[("", _("All environments")), *Environment.choices],
    )


# In lifecycle order, then FAILED and the way back, so the menu reads like the delivery it drives.
_ADVANCE_ORDER = [*HAPPY_PATH, *RETURN_PATH]


class AdvanceForm(forms.Form):
    client_order_id = forms.CharField(label=_("Client order id"), max_length=100)
    to = forms.ChoiceField(
        required=False,
        label=_("Target status"),
        choices=[("", _("One step forward"))]
        + [(status.value, status.label) for status in _ADVANCE_ORDER if status in ADVANCE_TARGETS],
    )


class ScenarioForm(forms.Form):
    """The sandbox console's "watch a delivery": one sample drop the test driver walks."""

    scenario = forms.ChoiceField(
        label=_("Scenario"),
        choices=[
            ("deliver", _("Deliver")),
            ("fail", _("Fail (recipient unavailable), then return to the pickup")),
            ("cancel_by_courier", _("Cancelled by the courier")),
        ],
        initial="deliver",
    )
    pin = forms.BooleanField(required=False, label=_("Ask for a delivery PIN"))
    cod = forms.DecimalField(
        required=False,
        max_digits=12,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=settings.COD_MAX_AMOUNT,
        label=_("Cash to collect (COD)"),
        help_text=_(
            "Optional: the courier collects it at the door; your wallet page shows it held."
        ),
    )


# --- Webhook endpoints ------------------------------------------------------------------

_SUBSCRIPTION_CHOICES = [
    (ALL_TYPES, _("All events, including types added later")),
    *((value, value) for value in EventType.values),
]


class WebhookEndpointForm(forms.Form):
    url = forms.CharField(
        label=_("URL"),
        max_length=MAX_URL_LENGTH,
        widget=forms.TextInput(attrs={"placeholder": "https://example.com/webhooks"}),
        help_text=_("We POST each event here; a 2xx answer within 10 seconds is a success."),
    )
    description = forms.CharField(
        label=_("Description"), max_length=MAX_DESCRIPTION_LENGTH, required=False
    )
    event_types = forms.MultipleChoiceField(
        label=_("Events"),
        choices=_SUBSCRIPTION_CHOICES,
        initial=[ALL_TYPES],
        widget=forms.CheckboxSelectMultiple,
        help_text=_("A test event is sent on request, whatever is ticked here."),
    )

    def clean_url(self) -> str:
        url = self.cleaned_data["url"].strip()
        try:
            check_endpoint_url(url)  # the API's rule: https, never an internal address
        except UnsafeUrl as exc:
            raise forms.ValidationError(str(exc)) from exc
        return url

    def clean_event_types(self) -> list[str]:
        # "All events" wins over single ticks, as ["*"] alone does in the API.
        return event_types_of(self.cleaned_data["event_types"])


# --- An order's edit ----------------------------------------------------------------------

# The fields by when they may change (docs/contract.md §17): while the drop is active, or
# only before pickup (SCHEDULED or PENDING). The service decides; the page only shows it.
WHILE_ACTIVE_FIELDS = ("name", "phone", "notes", "external_waybill")
BEFORE_PICKUP_FIELDS = ("address", "city", "lat", "long", "window_start", "window_end")
BEFORE_PICKUP_FIELDS += ("undeliverable_action",)
_PLACE_FIELDS = frozenset({"address", "city", "lat", "long"})
_WINDOW_FIELDS = frozenset({"window_start", "window_end"})
# A PATCH body's field path (tracking/edit_inputs.py) → the form field its errors go to.
_FIELD_OF_PATH = {
    "dropoff": "name",
    "dropoff.name": "name",
    "dropoff.phone": "phone",
    "notes": "notes",
    "external_waybill": "external_waybill",
    "dropoff.lat": "lat",
    "dropoff.long": "long",
    "dropoff.address": "address",
    "dropoff_window": "window_start",
    "dropoff_window.start": "window_start",
    "dropoff_window.end": "window_end",
    "undeliverable_action": "undeliverable_action",
}


def _coordinate_input() -> forms.NumberInput:
    return forms.NumberInput(attrs={"step": "any"})


def _moment_input() -> forms.DateTimeInput:
    # The browser's own picker, in the service time zone (Django reads and shows form times
    # in the current time zone, settings.TIME_ZONE).
    return forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class OrderEditForm(forms.Form):
    """An order's editable fields, shape only: what it sends is a PATCH body, parsed and
    judged by the API's own code (tracking.edit_inputs, tracking.edits), so every rule and
    message is the API's. Each field carries the value it was shown with (a hidden initial),
    so only what the person changed is sent: a change made meanwhile elsewhere (the API,
    another tab) is never written back over."""

    name = forms.CharField(
        label=_("Recipient name"),
        required=False,
        widget=forms.TextInput(attrs={"maxlength": MAX_NAME}),
    )
    phone = forms.CharField(
        label=_("Phone"),
        required=False,
        help_text=_("With the country code, e.g. +85512345678."),
        widget=forms.TextInput(attrs={"type": "tel", "autocomplete": "off"}),
    )
    notes = forms.CharField(
        label=_("Notes for the courier"),
        required=False,
        help_text=_("At most 500 characters; never shown on the recipient's page."),
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": MAX_NOTES}),
    )
    external_waybill = forms.CharField(
        label=_("Waybill"), required=False, widget=forms.TextInput(attrs={"maxlength": MAX_WAYBILL})
    )
    address = forms.CharField(label=_("Address"), required=False)
    city = forms.CharField(label=_("City"), required=False)
    lat = forms.FloatField(label=_("Latitude"), required=False, widget=_coordinate_input())
    long = forms.FloatField(label=_("Longitude"), required=False, widget=_coordinate_input())
    window_start = forms.DateTimeField(label=_("From"), required=False, widget=_moment_input())
    window_end = forms.DateTimeField(label=_("To"), required=False, widget=_moment_input())
    undeliverable_action = forms.ChoiceField(
        label=_("If it cannot be delivered"), choices=UndeliverableAction.choices
    )

    def __init__(self, data=None, *, drop: Drop) -> None:
        super().__init__(data, initial=_initial_of(drop))
        for name, field in self.fields.items():
            field.show_hidden_initial = True
            # Shown: what may change in the drop's status. Sent: a field the page showed
            # disabled is not in the POST, and stays as it is; one that was shown enabled is
            # judged by the service as the drop is now (a stale page gets its refusal).
            if data is None:
                field.disabled = name in BEFORE_PICKUP_FIELDS and drop.status not in (
                    EDITABLE_LOCATION
                )
            else:
                field.disabled = name not in data

    def change_body(self) -> dict[str, Any]:
        """The PATCH body of what was changed on the page (docs/contract.md §17)."""
        changed, data = set(self.changed_data), self.cleaned_data
        recipient = {key: data[key] for key in ("name", "phone") if key in changed}
        if changed & _PLACE_FIELDS:
            recipient |= self._place(coordinates=bool(changed & {"lat", "long"}))
        body: dict[str, Any] = {"dropoff": recipient} if recipient else {}
        if "notes" in changed:
            body["notes"] = data["notes"]  # "" is none, as the API reads it
        if "external_waybill" in changed:
            body["external_waybill"] = data["external_waybill"] or None
        if changed & _WINDOW_FIELDS:
            start, end = data["window_start"], data["window_end"]
            body["dropoff_window"] = (
                None if start is None and end is None else {"start": _iso(start), "end": _iso(end)}
            )
        if "undeliverable_action" in changed:
            body["undeliverable_action"] = data["undeliverable_action"]
        return body

    def _place(self, *, coordinates: bool) -> dict[str, Any]:
        """A new address alone is found on the map (the coordinates follow it); new
        coordinates, or an address taken away, keep the coordinates as they stand."""
        data = self.cleaned_data
        parts = (("complete_address", data["address"]), ("city", data["city"]))
        address = {key: value for key, value in parts if value} or None
        if address and not coordinates:
            return {"address": address}
        return {"lat": data["lat"], "long": data["long"], "address": address}

    def add_refusal(self, message: str, details: list[dict[str, str]]) -> None:
        """A refusal in the API's words: each message once, by the first field it names
        (several fields share one message: a location is one thing), else at the top."""
        said = set()
        for detail in details or [{"field": "", "message": message}]:
            path, text = detail.get("field", ""), detail["message"]
            if text in said:
                continue
            said.add(text)
            field = _FIELD_OF_PATH.get(path)
            if field is None and path.startswith(("dropoff.address.", "dropoff_window.")):
                field = "address" if path.startswith("dropoff.address.") else "window_start"
            self.add_error(field, text)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _initial_of(drop: Drop) -> dict[str, Any]:
    address = drop.address or {}
    return {
        "name": drop.recipient_name,
        "phone": drop.recipient_phone,
        "notes": drop.notes or "",
        "external_waybill": drop.external_waybill or "",
        "address": address.get("complete_address", ""),
        "city": address.get("city", ""),
        "lat": drop.lat,
        "long": drop.long,
        "window_start": drop.window_start,
        "window_end": drop.window_end,
        "undeliverable_action": drop.undeliverable_action,
    }


class LanguagesForm(forms.Form):
    """The business's languages where nothing better says (docs/contract.md §26)."""

    recipient_language = forms.ChoiceField(
        choices=settings.LANGUAGES,
        label=_("Your recipients' language"),
        help_text=_("Their tracking page and messages, when the order does not say."),
    )
    dashboard_language = forms.ChoiceField(
        choices=settings.LANGUAGES,
        label=_("Your dashboard's language"),
        help_text=_("When your browser does not say."),
    )


class NotificationTemplateForm(forms.Form):
    """One (channel, event) of the notifications page: on or off, and its text, whose
    variables are checked (notifications.texts: an unknown one is this field's error)."""

    enabled = forms.BooleanField(required=False, label=_("Send it"))
    subject = forms.CharField(required=False, max_length=200, label=_("Subject"))
    body = forms.CharField(
        max_length=2000, label=_("Message"), widget=forms.Textarea(attrs={"rows": 4})
    )

    def __init__(self, *args, channel: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.channel = channel
        if channel == NotificationChannel.SMS:
            del self.fields["subject"]
            self.fields["body"].validators.append(MaxLengthValidator(SMS_MAX_CHARS))
            self.fields["body"].widget.attrs["maxlength"] = str(SMS_MAX_CHARS)

    def clean_subject(self) -> str:
        return self._checked(self.cleaned_data["subject"])

    def clean_body(self) -> str:
        return self._checked(self.cleaned_data["body"])

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        email = self.channel == NotificationChannel.EMAIL
        if email and cleaned.get("enabled") and not cleaned.get("subject"):
            self.add_error("subject", _("An email needs a subject."))
        return cleaned

    @staticmethod
    def _checked(text: str) -> str:
        try:
            check_template(text)
        except TemplateError as exc:
            raise forms.ValidationError(str(exc)) from None
        return text
