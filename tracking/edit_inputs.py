"""The body of PATCH /orders/<drop_id> (docs/contract.md §17): its shape, and every 400.

A partial drop, in the shape of a drop of POST /orders/bulk, each field checked as bulk
checks it (orders.inputs). As at creation, a bad phone or pin is not a 400: it is a rule of
the drop, judged by the edit itself (tracking/edits.py, 422 EDIT_REJECTED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.api import validation_error
from orders.inputs import MAX_NAME, MAX_WAYBILL, FieldErrors, Place

# The fields of a drop, by path, in the order an edit's `changed` lists them.
WHILE_ACTIVE = ("dropoff.name", "dropoff.phone", "notes", "external_waybill")
LOCATION = ("dropoff.lat", "dropoff.long", "dropoff.address")
BEFORE_PICKUP = (*LOCATION, "dropoff_window", "undeliverable_action", "parcel", "cod")
# A drop's fields at creation that never change after it: sent unchanged they are ignored
# (a client may send a whole drop back), sent changed they are 409 NOT_EDITABLE.
FIXED = ("client_order_id", "dropoff_verification", "sandbox_scenario")
FIELDS = (*WHILE_ACTIVE, *BEFORE_PICKUP, *FIXED)

_TOP = frozenset({"dropoff", *WHILE_ACTIVE[2:], *BEFORE_PICKUP[3:], *FIXED})
_PLACE = frozenset({"lat", "long", "address"})
_RECIPIENT = frozenset({"name", "phone", *_PLACE})
_UNKNOWN = "Unknown field: a drop has no such field (docs/contract.md §17 lists what may change)."
MAX_FIELD_ECHO = 100  # an unknown name is echoed in its path up to this many characters


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


def parse_drop_change(body: Any) -> DropChange:
    """Check the shape of a PATCH body; raise one VALIDATION_ERROR listing every problem."""
    if not isinstance(body, dict):
        message = "The body must be a JSON object of the drop's fields to change."
        raise validation_error([{"field": "", "message": message}])
    errors = FieldErrors()
    _unknown(errors, body, _TOP, "")
    values: dict[str, Any] = {key: body[key] for key in FIXED if key in body}
    # What is carried and the cash to collect, read as a batch reads them (the same parsers):
    # the same parcel sent back is seen as unchanged, and a new one is judged as at creation.
    if "parcel" in body:
        values["parcel"] = errors.parcel(body, "")
    if "cod" in body:
        values["cod"] = errors.cod(body, "")
    if "external_waybill" in body:
        values["external_waybill"] = errors.text(
            body, "external_waybill", "", MAX_WAYBILL, required=False
        )
    if "notes" in body:
        values["notes"] = errors.notes(body, "")
    if "dropoff_window" in body:
        values["dropoff_window"] = errors.window(body, "")
    if "undeliverable_action" in body:
        values["undeliverable_action"] = errors.undeliverable_action(body, "")
    location, location_fields = None, ()
    if "dropoff" in body:
        location = _recipient(errors, body["dropoff"], values)
        if location is not None:
            sent = body["dropoff"].keys()
            location_fields = tuple(n for n in LOCATION if n.removeprefix("dropoff.") in sent)
    if errors.items:
        # The drop's field checks name a field under its drop's path ("path.key"); here the
        # drop is the body itself, so the path is empty.
        details = [{**item, "field": item["field"].lstrip(".")} for item in errors.items]
        raise validation_error(details, errors.more)
    return DropChange(values, location, location_fields)


def _recipient(errors: FieldErrors, recipient: Any, values: dict[str, Any]) -> Place | None:
    """The recipient's fields sent: name and phone into `values`; the new place, if any."""
    if not isinstance(recipient, dict):
        errors.add("dropoff", "Must be an object: the recipient's fields to change.")
        return None
    _unknown(errors, recipient, _RECIPIENT, "dropoff.")
    if "name" in recipient:
        if recipient["name"] is None:
            errors.add("dropoff.name", "Must be a non-empty string.")
        else:
            values["dropoff.name"] = errors.text(recipient, "name", "dropoff", MAX_NAME)
    if "phone" in recipient:
        values["dropoff.phone"] = recipient["phone"]  # validity is a rule (INVALID_PHONE)
    if not _PLACE & recipient.keys():
        return None
    return errors.place(recipient, "dropoff")


def _unknown(errors: FieldErrors, obj: dict, known: frozenset[str], prefix: str) -> None:
    for key in obj:
        if key not in known:
            errors.add(f"{prefix}{key[:MAX_FIELD_ECHO]}", _UNKNOWN)
