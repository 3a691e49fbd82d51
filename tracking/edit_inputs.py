"""The body of PATCH /orders/<drop_id> (docs/contract.md §17), declared once: its shape, every
400, and its OpenAPI description (tracking/schema.py, through core.shapes).

A partial drop, in the shape of a drop of POST /orders/bulk, each field checked as bulk
checks it (the same fields of orders.inputs). As at creation, a bad phone or pin is not a
400: it is a rule of the drop, judged by the edit itself (tracking/edits.py, 422
EDIT_REJECTED).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rest_framework import serializers

from core.api import validation_error
from core.shapes import Field as ShapeField
from core.shapes import Object, Passed, Problems, Shape, Text, path_of
from orders.inputs import (
    DROP,
    MAX_NAME,
    VERIFICATION,
    AddressKind,
    FieldErrors,
    Place,
    coordinates,
    phone,
)

# The fields of a drop, by path, in the order an edit's `changed` lists them.
WHILE_ACTIVE = ("dropoff.name", "dropoff.phone", "notes", "external_waybill")
LOCATION = ("dropoff.lat", "dropoff.long", "dropoff.address")
BEFORE_PICKUP = (*LOCATION, "dropoff_window", "undeliverable_action", "parcel", "cod")
# A drop's fields at creation that never change after it: sent unchanged they are ignored
# (a client may send a whole drop back), sent changed they are 409 NOT_EDITABLE.
FIXED = ("client_order_id", "dropoff_verification", "sandbox_scenario", "recipient_language")
FIELDS = (*WHILE_ACTIVE, *BEFORE_PICKUP, *FIXED)

_UNKNOWN = "Unknown field: a drop has no such field (docs/contract.md §17 lists what may change)."
MAX_FIELD_ECHO = 100  # an unknown name is echoed in its path up to this many characters
_NEVER = "Never changes: sent unchanged it is ignored, changed it is 409 NOT_EDITABLE."


@dataclass(frozen=True, slots=True)
class DropChange:
    """What a PATCH body asks for, shape-checked: the value of each field sent, by path.

    The location is one thing: when any of dropoff.lat, dropoff.long, dropoff.address is
    sent, `location` is the new place as sent (the others absent), judged as at creation.
    """

    values: dict[str, Any] = field(default_factory=dict)
    location: Place | None = None
    # Which of LOCATION the body sent, in that order: a refused location names only those.
    location_fields: tuple[str, ...] = ()

    @property
    def moves_location(self) -> bool:
        return self.location is not None


def _unknown(problems: Problems, obj: dict, where: str, known: dict) -> None:
    """Each field a drop does not have, named (up to MAX_FIELD_ECHO characters)."""
    for key in obj:
        if key not in known:
            problems.add(path_of(where, key[:MAX_FIELD_ECHO]), _UNKNOWN)


def _as_in_bulk(name: str, help: str) -> ShapeField:
    """A field of a drop read as POST /orders/bulk reads it, with what it means in an edit."""
    return dataclasses.replace(DROP.by_name[name], help=help)


EDITED_RECIPIENT = Shape(
    "EditedRecipient",
    [
        ShapeField(
            "name",
            Text(MAX_NAME, blank=False, missing="Must be a non-empty string."),
            null=False,
            help="Any time while the drop is active.",
        ),
        phone("+85512345670"),
        *coordinates(11.5710, 104.9250),
        ShapeField(
            "address",
            AddressKind(),
            help="An object of strings, as in POST /orders/bulk. Sent without coordinates, "
            "it is geocoded and the pin moves there.",
        ),
    ],
    unknown=_unknown,
    sent_only=True,
)
# In the order its problems are listed: what is carried and the cash to collect first, read
# as a batch reads them (the same parsers: the same parcel sent back is seen as unchanged).
DROP_EDIT = Shape(
    "DropEdit",
    [
        _as_in_bulk(
            "parcel",
            "SCHEDULED or PENDING only; null is the default parcel (S, 1 kg). It must fit "
            "the order's vehicle, with its other active drops' parcels (PARCEL_TOO_LARGE).",
        ),
        _as_in_bulk(
            "cod",
            "SCHEDULED or PENDING only; null removes it and gives its fee back. A new "
            "amount (INVALID_COD as at creation) has the plan's fee, settled at once.",
        ),
        _as_in_bulk("external_waybill", "null removes it."),
        _as_in_bulk("notes", 'For the courier; null or "" removes them.'),
        _as_in_bulk("dropoff_window", "SCHEDULED or PENDING only; null removes it."),
        _as_in_bulk(
            "undeliverable_action", "SCHEDULED or PENDING only; null is the default, return."
        ),
        ShapeField(
            "dropoff",
            Object(EDITED_RECIPIENT, "Must be an object: the recipient's fields to change."),
            null=False,
            help="name and phone while active. The location (lat and long, or address) only "
            "in SCHEDULED or PENDING, and as a whole: the fields of it sent are the new "
            "location, judged as at creation (an address alone is geocoded; coordinates win).",
        ),
        # Taken as sent: only compared with the drop's (tracking/edits.py).
        ShapeField("client_order_id", Passed(doc=serializers.CharField), null=False, help=_NEVER),
        ShapeField("dropoff_verification", Passed(doc=VERIFICATION.serializer()), help=_NEVER),
        ShapeField("sandbox_scenario", Passed(doc=serializers.CharField), help=_NEVER),
        ShapeField("recipient_language", Passed(doc=serializers.CharField), help=_NEVER),
    ],
    doc="The fields to change, in the shape of a drop of POST /orders/bulk; only those sent.",
    unknown=_unknown,
    sent_only=True,
)


def parse_drop_change(body: Any) -> DropChange:
    """Check the shape of a PATCH body; raise one VALIDATION_ERROR listing every problem."""
    if not isinstance(body, dict):
        message = "The body must be a JSON object of the drop's fields to change."
        raise validation_error([{"field": "", "message": message}])
    errors = FieldErrors()
    values = DROP_EDIT.read(errors, body, "")
    if "notes" in values:
        values["notes"] = values["notes"] or None  # "" is none
    recipient = values.pop("dropoff", None) or {}
    for name in ("name", "phone"):
        if name in recipient:
            values[f"dropoff.{name}"] = recipient[name]
    location_fields = tuple(n for n in LOCATION if n.removeprefix("dropoff.") in recipient)
    location = None
    if location_fields:
        location = Place(recipient.get("lat"), recipient.get("long"), recipient.get("address"))
    if errors.items:
        raise validation_error(errors.items, errors.more)
    return DropChange(values, location, location_fields)
