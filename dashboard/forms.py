"""Dashboard forms: each checks the shape of one page's input; the services decide the rest."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm

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
from orders.models import Batch, DropStatus
from tracking.lifecycle import ADVANCE_TARGETS, HAPPY_PATH


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
    business_name = forms.CharField(max_length=_column_length(Business, "name"))
    email = forms.EmailField(max_length=SIGNUP_EMAIL_MAX_LENGTH, help_text="You sign in with it.")
    password = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, not a common password.",
    )

    def clean_email(self) -> str:
        # Emails are usernames; one spelling per address, so sign-in is case-insensitive.
        email = self.cleaned_data["email"].strip().lower()
        # Lowercasing can lengthen: "İ" becomes two characters, and EmailValidator accepts it.
        if len(email) > SIGNUP_EMAIL_MAX_LENGTH:
            raise forms.ValidationError(
                f"Ensure this value has at most {SIGNUP_EMAIL_MAX_LENGTH} characters.",
                code="max_length",
            )
        if get_user_model().objects.filter(username__iexact=email).exists():
            raise forms.ValidationError("An account with this email already exists.")
        return email

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        password_validation.validate_password(password)
        return password


class LoginForm(RateLimitedLoginMixin, AuthenticationForm):
    def __init__(self, request=None, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.fields["username"].label = "Email"

    def clean_username(self) -> str:
        return self.cleaned_data["username"].strip().lower()


class RequestAccessForm(forms.Form):
    use_case = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="What you deliver, from where, for whom.",
    )
    expected_monthly_volume = forms.IntegerField(
        min_value=1, max_value=10_000_000, help_text="Deliveries per month, roughly."
    )


class ApiKeyForm(forms.Form):
    environment = forms.ChoiceField(choices=Environment.choices, widget=forms.RadioSelect)
    label = forms.CharField(
        max_length=_column_length(ApiKey, "label"),
        required=False,
        help_text="Where the key will be used, e.g. “web shop”.",
    )

    def __init__(self, *args, environments: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["environment"].choices = [
            (value, Environment(value).label) for value in environments
        ]
        if environments:
            self.fields["environment"].initial = environments[0]


class SandboxTopUpForm(forms.Form):
    amount = forms.DecimalField(max_digits=12, decimal_places=2, help_text="Play money.")


class OrderFilterForm(forms.Form):
    """The orders page's filters (and its export's): GET parameters, kept from page to page."""

    q = forms.CharField(
        required=False,
        max_length=100,
        label="Search",
        help_text="client_order_id, waybill or recipient name",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Order, waybill, name"}),
    )
    environment = forms.ChoiceField(
        required=False, choices=[("", "All environments"), *Environment.choices]
    )
    status = forms.MultipleChoiceField(
        required=False,
        choices=DropStatus.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every status.",
    )
    created_from = forms.DateField(
        required=False, label="Created from", widget=forms.DateInput(attrs={"type": "date"})
    )
    created_to = forms.DateField(
        required=False, label="to", widget=forms.DateInput(attrs={"type": "date"})
    )
    batch = forms.CharField(
        required=False,
        max_length=_column_length(Batch, "client_batch_id"),
        label="Batch",
        help_text="client_batch_id or batch_id",
        widget=forms.TextInput(attrs={"placeholder": "client_batch_id or batch_id"}),
    )

    def clean_q(self) -> str:
        return self.cleaned_data["q"].strip()

    def clean_batch(self) -> str:
        return self.cleaned_data["batch"].strip()

    def clean(self) -> dict:
        data = super().clean()
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and start > end:
            self.add_error("created_to", "The last day comes before the first.")
        return data


class EnvironmentFilterForm(forms.Form):
    environment = forms.ChoiceField(
        required=False, choices=[("", "All environments"), *Environment.choices]
    )


# In lifecycle order, FAILED last, so the menu reads like the delivery it drives.
_ADVANCE_ORDER = [*HAPPY_PATH, DropStatus.FAILED]


class AdvanceForm(forms.Form):
    client_order_id = forms.CharField(max_length=100)
    to = forms.ChoiceField(
        required=False,
        label="Target status",
        choices=[("", "One step forward")]
        + [(status.value, status.label) for status in _ADVANCE_ORDER if status in ADVANCE_TARGETS],
    )


class ScenarioForm(forms.Form):
    """The sandbox console's "watch a delivery": one sample drop the test driver walks."""

    scenario = forms.ChoiceField(
        choices=[
            ("deliver", "Deliver"),
            ("fail", "Fail (recipient unavailable)"),
            ("cancel_by_courier", "Cancelled by the courier"),
        ],
        initial="deliver",
    )
    pin = forms.BooleanField(required=False, label="Ask for a delivery PIN")


# --- Webhook endpoints ------------------------------------------------------------------

_SUBSCRIPTION_CHOICES = [
    (ALL_TYPES, "All events, including types added later"),
    *((value, value) for value in EventType.values),
]


class WebhookEndpointForm(forms.Form):
    url = forms.CharField(
        label="URL",
        max_length=MAX_URL_LENGTH,
        widget=forms.TextInput(attrs={"placeholder": "https://example.com/webhooks"}),
        help_text="We POST each event here; a 2xx answer within 10 seconds is a success.",
    )
    description = forms.CharField(max_length=MAX_DESCRIPTION_LENGTH, required=False)
    event_types = forms.MultipleChoiceField(
        label="Events",
        choices=_SUBSCRIPTION_CHOICES,
        initial=[ALL_TYPES],
        widget=forms.CheckboxSelectMultiple,
        help_text="A test event is sent on request, whatever is ticked here.",
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
