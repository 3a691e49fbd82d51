"""New delivery: the booking form's shape, its bulk body, a refusal said beside its field, and
the address book of recipients the business sent to before.

No rule lives here: the body goes through the API's own parse_batch, quote_batch and
create_batch (dashboard/batches.py), so a booked drop is judged and priced exactly as
POST /orders/bulk would (docs/contract.md §4, §12, §25). This module only translates a page
into that body and the pipeline's answers back into the page's words.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import phonenumbers
from django import forms
from django.conf import settings
from django.db.models import Q
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from accounts.models import Business, Environment
from dashboard.batches import drop_body, present
from dashboard.models import PickupPlace
from fleet.models import ParcelSize
from fleet.selectors import active_vehicle_types
from geo.geocoders import address_key, geocode_addresses
from orders.decisions import MESSAGES, Reason
from orders.inputs import SANDBOX_SCENARIOS
from orders.models import Drop, IdempotencyRecord

# The country a number typed without its code belongs to: the shops are in Cambodia.
HOME_REGION = "KH"
MAX_DROPS = 20  # drops in one form; a bigger batch is a spreadsheet (Upload CSV)
BATCH_PREFIX = "dashboard-"
ADDRESS_BOOK_SIZE = 8  # recipients offered at once
ADDRESS_BOOK_SCAN = 200  # the newest matching drops read to find them

SCENARIO_CHOICES = [
    ("manual", _("Manual: it moves when you move it on the sandbox console")),
    ("deliver", _("Deliver: the test driver delivers it by itself")),
    ("fail", _("Fail: the recipient is not there")),
    ("cancel_by_courier", _("Cancelled by the courier after assignment")),
]
assert [code for code, _ in SCENARIO_CHOICES] == list(SANDBOX_SCENARIOS)


def e164(text: str) -> str:
    """A phone number as the API wants it (E.164), read as a Cambodian number when it has no
    country code ("012 345 678" → "+85512345678"); as typed when it cannot be read, for the
    pipeline to refuse in its own words."""
    text = text.strip()
    try:
        number = phonenumbers.parse(text, HOME_REGION)
    except phonenumbers.NumberParseException:
        return text
    if not phonenumbers.is_valid_number(number):
        return text
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def geocoded(address: str) -> tuple[float, float] | None:
    """The pin of an address, through the batch pipeline's geocoder chain and its cache."""
    query = {"complete_address": address}
    return geocode_addresses([query]).get(address_key(query))


def _phone_field(label: str) -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=20,
        help_text=_("A Cambodian number as you dial it (012 345 678), or with its country code."),
        widget=forms.TextInput(attrs={"type": "tel", "autocomplete": "off"}),
    )


def _pin_input() -> forms.HiddenInput:
    return forms.HiddenInput(attrs={"data-pin": "true"})


class PickupPlaceForm(forms.ModelForm):
    """A saved pickup place: the address is found on the map unless a pin was set on it."""

    phone = _phone_field(_("Phone"))
    lat = forms.FloatField(required=False, min_value=-90, max_value=90, widget=_pin_input())
    long = forms.FloatField(required=False, min_value=-180, max_value=180, widget=_pin_input())

    class Meta:
        model = PickupPlace
        fields = ["name", "phone", "address", "lat", "long"]
        labels = {"name": _("Name"), "address": _("Address")}
        help_texts = {"name": _("What you call it, e.g. “Shop” or “Warehouse”.")}

    def __init__(self, *args: Any, business: Business, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.business = business
        self.fields["address"].required = True

    def clean_phone(self) -> str:
        return e164(self.cleaned_data["phone"])

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        taken = self.business.pickup_places.filter(name__iexact=name).exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError(_("You already have a pickup place with this name."))
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("lat") is None or data.get("long") is None:
            address = data.get("address")
            pin = geocoded(address) if address else None
            if address and pin is None:
                self.add_error("address", _("We could not find this address: place the pin."))
            elif pin:
                data["lat"], data["long"] = pin
        return data

    def save(self, commit: bool = True) -> PickupPlace:
        self.instance.business = self.business
        return super().save(commit)


def _moment_input() -> forms.DateTimeInput:
    # The browser's own picker, in the service time zone (settings.TIME_ZONE).
    return forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class DropForm(forms.Form):
    """One drop-off of New delivery."""

    name = forms.CharField(
        label=_("Recipient name"),
        max_length=200,
        widget=forms.TextInput(attrs={"autocomplete": "off", "data-lookup": "name"}),
    )
    phone = _phone_field(_("Recipient phone"))
    address = forms.CharField(
        label=_("Address"),
        max_length=300,
        required=False,
        help_text=_("Found on the map as you type; drag the pin to correct it."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "data-geocode": "true"}),
    )
    lat = forms.FloatField(required=False, min_value=-90, max_value=90, widget=_pin_input())
    long = forms.FloatField(required=False, min_value=-180, max_value=180, widget=_pin_input())
    notes = forms.CharField(
        label=_("Notes for the courier"),
        max_length=500,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    window_start = forms.DateTimeField(label=_("From"), required=False, widget=_moment_input())
    window_end = forms.DateTimeField(label=_("To"), required=False, widget=_moment_input())
    parcel_size = forms.ChoiceField(label=_("Size"), choices=ParcelSize.choices, initial="S")
    parcel_weight_kg = forms.DecimalField(
        label=_("Weight (kg)"),
        required=False,
        min_value=Decimal("0.01"),
        max_value=1000,
        decimal_places=2,
        help_text=_("1 kg if empty."),
    )
    parcel_description = forms.CharField(label=_("What is it"), max_length=200, required=False)
    cod_amount = forms.DecimalField(
        label=_("Cash to collect (COD)"),
        required=False,
        min_value=Decimal("0.01"),
        decimal_places=2,
        help_text=format_lazy(
            _("In {currency}; empty: nothing to collect."), currency=settings.CURRENCY
        ),
    )
    ask_pin = forms.BooleanField(label=_("Ask the recipient for a PIN at the door"), required=False)
    # Empty (a form sent without it): the business's setting decides, as in the API.
    recipient_language = forms.ChoiceField(
        label=_("Recipient's language"),
        choices=settings.LANGUAGES,
        required=False,
        help_text=_("Of their tracking page and messages."),
    )
    reference = forms.CharField(
        label=_("Your reference"),
        max_length=100,
        required=False,
        help_text=_("Optional: your own order number. Empty: one is made for you."),
    )

    def __init__(self, *args: Any, recipient_language: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if recipient_language:  # the business's setting, until the row says otherwise
            self.fields["recipient_language"].initial = recipient_language

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("address") and (data.get("lat") is None or data.get("long") is None):
            self.add_error("address", _("Type the address, or place the pin on the map."))
        if bool(data.get("window_start")) != bool(data.get("window_end")):
            self.add_error("window_end", _("Give both times of the window, or neither."))
        return data


class BaseDropFormSet(forms.BaseFormSet):
    def clean(self) -> None:
        if any(self.errors):
            return
        references = [f.cleaned_data.get("reference") for f in self.forms if f.cleaned_data]
        given = [r for r in references if r]
        if len(given) != len(set(given)):
            raise forms.ValidationError(_("Two drops have the same reference."))


DropFormSet = forms.formset_factory(
    DropForm,
    formset=BaseDropFormSet,
    extra=0,
    min_num=1,
    max_num=MAX_DROPS,
    validate_min=True,
    validate_max=True,
)


class DeliveryForm(forms.Form):
    """What New delivery books as one batch: one pickup group and its drops."""

    form_token = forms.UUIDField(widget=forms.HiddenInput)
    environment = forms.ChoiceField(label=_("Book in"), widget=forms.RadioSelect)
    pickup_place = forms.ModelChoiceField(
        label=_("Pickup from"), queryset=PickupPlace.objects.none(), empty_label=None
    )
    vehicle = forms.ChoiceField(label=_("Vehicle"))
    scenario = forms.ChoiceField(
        label=_("In the sandbox, the test driver"),
        choices=SCENARIO_CHOICES,
        initial="deliver",
        required=False,
    )

    def __init__(self, *args: Any, business: Business, environments: list[str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["environment"].choices = [(e, Environment(e).label) for e in environments]
        self.fields["pickup_place"].queryset = business.pickup_places.all()
        self.fields["vehicle"].choices = [
            (
                v.code,
                _("%(name)s: parcels up to %(size)s, %(kg)s kg")
                % {
                    "name": v.display_name,
                    "size": v.max_parcel_size,
                    "kg": f"{v.max_parcel_weight_kg:g}",
                },
            )
            for v in active_vehicle_types()
        ]


def new_token() -> str:
    """The form's idempotency token: made when the form is shown, sent with every submission
    of it, and used as the batch's Idempotency-Key."""
    return str(uuid.uuid4())


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _money(amount: Decimal | None) -> str | None:
    return None if amount is None else f"{amount:.2f}"


def booking_body(delivery: dict[str, Any], drops: list[dict[str, Any]]) -> dict[str, Any]:
    """The bulk body of a booking (docs/contract.md §4): one pickup group, in form order.

    The same form sent again makes the same body, byte for byte, so a resubmission replays.
    """
    token = delivery["form_token"]
    sandbox = delivery["environment"] == Environment.SANDBOX
    scenario = (delivery.get("scenario") or "manual") if sandbox else None
    bodies = []
    for n, drop in enumerate(drops, start=1):
        recipient = {
            "name": drop["name"],
            "phone": e164(drop["phone"]),
            "lat": drop.get("lat"),
            "long": drop.get("long"),
            # The pin wins over the text when both are sent (§4): the corrected pin is sent.
            "address": {"complete_address": drop["address"]} if drop.get("address") else None,
        }
        parcel = {
            "size": drop.get("parcel_size") or None,
            "weight_kg": float(w) if (w := drop.get("parcel_weight_kg")) is not None else None,
            "description": drop.get("parcel_description") or None,
        }
        bodies.append(
            drop_body(
                client_order_id=drop.get("reference") or reference_of(token, n),
                recipient=recipient,
                ask_pin=bool(drop.get("ask_pin")),
                sandbox_scenario=scenario,
                window_start=_iso(drop.get("window_start")),
                window_end=_iso(drop.get("window_end")),
                notes=drop.get("notes") or None,
                parcel=parcel,
                cod_amount=_money(drop.get("cod_amount")),
                recipient_language=drop.get("recipient_language") or None,
            )
        )
    group = present(
        {
            "pickup": delivery["pickup_place"].pickup_body(),
            "vehicle": delivery["vehicle"],
            "dropoff": bodies,
        }
    )
    return {"client_batch_id": f"{BATCH_PREFIX}{token}", "orders": [group]}


def reference_of(token: uuid.UUID, n: int) -> str:
    """A drop's client_order_id when none was typed: short, readable, one per form and drop."""
    return f"D-{token.hex[:8].upper()}-{n}"


# --- Refusals in words, beside their field ---------------------------------------------------

# Where a rejected drop's reason points on the form.
DROP_FIELD = {
    "INVALID_PHONE": "phone",
    "INVALID_COORDINATES": "address",
    "GEOCODE_FAILED": "address",
    "OUT_OF_SERVICE_AREA": "address",
    "INVALID_TIME_WINDOW": "window_start",
    "PARCEL_TOO_LARGE": "parcel_size",
    "INVALID_COD": "cod_amount",
    "DUPLICATE_CLIENT_ORDER_ID": "reference",
}
WORDS = {
    ("INVALID_PHONE", "drop"): _("This phone number is not valid: check its digits."),
    ("INVALID_PHONE", "pickup"): _("The pickup place's phone number is not valid: edit the place."),
    ("INVALID_COORDINATES", "drop"): _("Type the address, or place the pin on the map."),
    ("INVALID_COORDINATES", "pickup"): _("The pickup place has no usable pin: edit the place."),
    ("GEOCODE_FAILED", "drop"): _(
        "We could not find this address: type it another way, or place the pin on the map."
    ),
    ("GEOCODE_FAILED", "pickup"): _(
        "We could not find the pickup place's address: edit the place."
    ),
    ("OUT_OF_SERVICE_AREA", "drop"): _("This address is outside the area we deliver to."),
    ("OUT_OF_SERVICE_AREA", "pickup"): _("The pickup place is outside the area we deliver to."),
    ("SCHEDULE_IN_PAST", "pickup"): _("The pickup time has passed."),
    ("OUTSIDE_OPERATING_HOURS", "pickup"): _(
        "Couriers do not ride at this hour: book during the area's opening hours."
    ),
    ("INVALID_TIME_WINDOW", "drop"): _("This drop-off window cannot be kept: {message}"),
    ("PARCEL_TOO_LARGE", "drop"): _(
        "This parcel does not fit the vehicle: {message} Choose a "
        "bigger vehicle or a smaller parcel."
    ),
    ("INVALID_COD", "drop"): _("This cash amount cannot be collected: {message}"),
    ("DUPLICATE_CLIENT_ORDER_ID", "drop"): _(
        "An order still under way already has this reference: choose another."
    ),
    ("INSUFFICIENT_BALANCE", "drop"): _(
        "Your wallet does not cover this delivery: top it up on the Wallet page, then book."
    ),
    ("INSUFFICIENT_BALANCE", "owed"): _(
        "Your wallet owes a return fee: top it up on the Wallet page, then book."
    ),
}
_PICKUP_MESSAGES = {text for (_, side), text in MESSAGES.items() if side == "pickup"}


@dataclass(frozen=True, slots=True)
class Refusal:
    """A rejected drop, said on the form: which drop, which field (None: the whole form)."""

    drop: int
    field: str | None
    words: str
    failure_reason: str

    def as_json(self) -> dict[str, Any]:
        return {"field": self.field, "message": self.words, "failure_reason": self.failure_reason}


def refusal_of(drop: int, failure_reason: str, message: str, side: str = "") -> Refusal:
    """A failure_reason and the pipeline's message in the page's words, at its field."""
    side = side or _side_of(failure_reason, message)
    words = WORDS.get((failure_reason, side), message).format(message=message)
    if side == "pickup":
        field = "pickup_place"
    elif side == "owed" or failure_reason not in DROP_FIELD:
        field = None
    else:
        field = DROP_FIELD[failure_reason]
    return Refusal(drop, field, words, failure_reason)


def _side_of(failure_reason: str, message: str) -> str:
    """Whose rule failed, read back from a stored answer's message (it says so)."""
    if message in _PICKUP_MESSAGES or "pickup address" in message:
        return "pickup"
    if message == MESSAGES[Reason.INSUFFICIENT_BALANCE, "owed"]:
        return "owed"
    return "drop"


def add_refusals(delivery: DeliveryForm, drops: forms.BaseFormSet, refusals: list[Refusal]):
    """Each refusal beside its field; one said for the whole form (a pickup's) only once."""
    said: set[str] = set()
    for refusal in refusals:
        if refusal.field == "pickup_place" or refusal.field is None:
            if refusal.words not in said:
                delivery.add_error(refusal.field, refusal.words)
            said.add(refusal.words)
        else:
            drops.forms[refusal.drop].add_error(refusal.field, refusal.words)


# --- The address book ------------------------------------------------------------------------


def recipients_like(*, business: Business, environment: str, text: str) -> list[dict[str, Any]]:
    """Recipients of the business's own drops in one environment whose phone or name matches
    what is typed, newest first, each person and address once (docs/dashboard.md)."""
    text = text.strip()
    if len(text) < 2:
        return []
    digits = "".join(ch for ch in text if ch.isdigit())
    match = Q(recipient_name__icontains=text)
    if len(digits) >= 3:
        # Typed as dialled (012…) or with the code (+85512…): the stored number ends alike.
        match |= Q(recipient_phone__contains=digits.lstrip("0"))
    rows = (
        Drop.objects.filter(match, business=business, environment=environment)
        .order_by("-created_at")
        .values_list("recipient_name", "recipient_phone", "address", "lat", "long")[
            :ADDRESS_BOOK_SCAN
        ]
    )
    found: dict[tuple, dict[str, Any]] = {}
    for name, phone, address, lat, long in rows:
        text_address = (address or {}).get("complete_address", "")
        key = (name.casefold(), phone, text_address, round(lat, 5), round(long, 5))
        if key not in found:
            found[key] = {
                "name": name,
                "phone": phone,
                "address": text_address,
                "lat": lat,
                "long": long,
            }
        if len(found) == ADDRESS_BOOK_SIZE:
            break
    return list(found.values())


# --- Reads of the booking ---------------------------------------------------------------------


def booked_batch_id(*, business: Business, environment: str, key: uuid.UUID) -> uuid.UUID | None:
    """The batch a form's token already booked, if it did (one indexed read)."""
    return (
        IdempotencyRecord.objects.filter(business=business, environment=environment, key=key)
        .values_list("batch_id", flat=True)
        .first()
    )


def initial_again(business: Business, drop: Drop) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """New delivery filled from an earlier drop ("Book again"): the same pickup place (by
    name, else the first), vehicle, recipient, place, parcel, cash and notes; no window (its
    day has passed) and no reference (a new order has a new one)."""
    order = drop.order
    place = business.pickup_places.filter(name__iexact=order.pickup_name).first()
    place = place or business.pickup_places.first()
    delivery = {
        "environment": drop.environment,
        "pickup_place": place.pk if place else None,
        "vehicle": order.vehicle,
        "scenario": drop.sandbox_scenario or "deliver",
    }
    row = {
        "name": drop.recipient_name,
        "phone": drop.recipient_phone,
        "address": (drop.address or {}).get("complete_address", ""),
        "lat": drop.lat,
        "long": drop.long,
        "notes": drop.notes or "",
        "parcel_size": drop.parcel_size,
        "parcel_weight_kg": drop.parcel_weight_kg,
        "parcel_description": drop.parcel_description or "",
        "cod_amount": drop.cod_amount,
        "ask_pin": bool(drop.dropoff_pin),
    }
    if drop.recipient_language:  # else the business's setting, as a new row has
        row["recipient_language"] = drop.recipient_language
    return delivery, [row]
