"""The courier API's request bodies, each declared once (couriers/inputs.py): the operation's
request body is the declaration's component, field for field, and the 400s are the table's
(tests/core/test_shapes.py holds every declared shape to its component the same way)."""

from __future__ import annotations

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from core.shapes import Shape
from couriers.inputs import LOCATION, MOVE, SIGN_IN, STATUS
from orders.models import Drop, DropStatus
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import drop

# Each body the courier API reads, by the operation that reads it, and the media types
# it comes as (a move may carry its photo and signature as a multipart form).
BODIES = [
    ("/api/v1/courier/session", SIGN_IN, ["application/json"]),
    ("/api/v1/courier/status", STATUS, ["application/json"]),
    ("/api/v1/courier/drops/{drop_id}/move", MOVE, ["application/json", "multipart/form-data"]),
    ("/api/v1/courier/location", LOCATION, ["application/json"]),
]


@pytest.fixture(scope="module")
def schema() -> dict:
    response = Client().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return orjson.loads(response.content)


def component(schema: dict, ref: str) -> dict:
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]  # a $ref or a name


def described_as_declared(schema: dict, described: dict, shape: Shape) -> None:
    assert list(described["properties"]) == [f.name for f in shape.fields], shape.name
    required = sorted(f.name for f in shape.fields if f.required)
    assert sorted(described.get("required", [])) == required, shape.name
    for field in shape.fields:
        if field.help:
            assert described["properties"][field.name]["description"] == field.help


@pytest.mark.parametrize(("path", "shape", "media"), BODIES, ids=[b[1].name for b in BODIES])
def test_each_courier_body_is_described_by_its_declaration(schema, path, shape, media):
    body = schema["paths"][path]["post"]["requestBody"]
    assert sorted(body["content"]) == sorted(media)
    for described in body["content"].values():
        ref = described["schema"]["$ref"]
        assert ref == f"#/components/schemas/{shape.name}"
        described_as_declared(schema, component(schema, ref), shape)


def test_a_point_is_described_by_its_declaration(schema):
    points = component(schema, LOCATION.name)["properties"]["points"]
    (point_field,) = LOCATION.fields
    assert points["items"]["$ref"] == f"#/components/schemas/{point_field.kind.item.shape.name}"
    assert (points["minItems"], points["maxItems"]) == (1, 100)
    described_as_declared(
        schema, component(schema, points["items"]["$ref"]), point_field.kind.item.shape
    )


# --- The 400s: the same fields and messages as the courier API has always said -------------


def details(answer) -> list[dict]:
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    return error["details"]


def test_sign_in_and_status_say_each_problem_at_its_field(open_for_business, dara, api):
    courier, client = dara
    answer = api.post("/courier/session", {"phone": "", "password": 7, "pin": "1"}, None)
    assert details(answer) == [
        {"field": "pin", "message": "Unknown field."},
        {"field": "phone", "message": "Must be a non-empty string."},
        {"field": "password", "message": "Must be a non-empty string."},
    ]
    assert details(api.post("/courier/session", [courier.phone, PASSWORD], None)) == [
        {"field": "", "message": "Must be a JSON object."}
    ]
    assert details(client.post("/status", {})) == [
        {"field": "online", "message": "Must be true or false."}
    ]


def test_a_nul_in_a_phone_or_a_receiver_is_a_400_naming_it(open_for_business, alice, api, dara):
    """PostgreSQL text holds no NUL: such a phone was a 500 at the courier lookup."""
    courier, client = dara
    answer = api.post("/courier/session", {"phone": "+855\x00", "password": PASSWORD}, None)
    assert details(answer) == [{"field": "phone", "message": "Must not contain NUL characters."}]
    (one,) = assigned_drops(api, alice, courier, drop("N-1"))
    answer = client.move(one.pk, to="PICKED_UP", received_by="Dara\x00")
    said = [{"field": "received_by", "message": "Must not contain NUL characters."}]
    assert details(answer) == said


def test_a_move_says_each_problem_at_its_field_in_table_order(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("S-1"))
    body = {"scan": 7, "reason": None, "cod_collected": "yes", "pin": "12", "zz": 1, "to": "GO"}
    assert details(client.post(f"/drops/{one.pk}/move", body)) == [
        {"field": "zz", "message": "Unknown field."},
        {"field": "to", "message": "Must be one of PICKED_UP, DELIVERED, FAILED, RETURNING, "
         "RETURNED."},
        {"field": "pin", "message": "A PIN is four digits, as a string."},
        {"field": "reason", "message": "Must be one of RECIPIENT_UNAVAILABLE, ADDRESS_NOT_FOUND, "
         "REFUSED, OTHER."},
        {"field": "cod_collected", "message": "Must be true or false."},
        {"field": "scan", "message": "The label's code, as a string."},
    ]  # fmt: skip
    assert Drop.objects.get(pk=one.pk).status == DropStatus.ASSIGNED


def test_a_pin_of_other_digits_is_a_400_not_a_wrong_attempt(open_for_business, alice, api, dara):
    """Only 0-9 can be a drop's PIN, as the schema's pattern says: four Khmer or Arabic-Indic
    digits are refused before the PIN rule, and do not count towards failing the drop."""
    courier, client = dara
    (one,) = assigned_drops(
        api, alice, courier, {**drop("P-1"), "dropoff_verification": {"pin": True}}
    )
    client.move(one.pk, to="PICKED_UP")
    for pin in ("១២៣៤", "١٢٣٤", "²²²²"):
        answer = client.move(one.pk, to="DELIVERED", pin=pin)
        assert details(answer) == [
            {"field": "pin", "message": "A PIN is four digits, as a string."}
        ]
    one.refresh_from_db()
    assert one.pin_attempts == 0 and one.status == DropStatus.PICKED_UP


def test_a_multipart_move_reads_its_booleans_as_text_beside_its_photo(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, {**drop("M-1"), "cod": {"amount": "5.00"}})
    client.move(one.pk, to="PICKED_UP")
    png = SimpleUploadedFile("p.png", b"\x89PNG\r\n\x1a\n" + b"0" * 64, content_type="image/png")
    url = f"/api/v1/courier/drops/{one.pk}/move"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {client.token}"}
    fields = {"to": "DELIVERED", "cod_collected": "maybe", "photo": png}
    answer = Client().post(url, fields, **auth)
    assert details(answer) == [{"field": "cod_collected", "message": "Must be true or false."}]
    png.seek(0)
    answer = Client().post(url, {**fields, "cod_collected": "true"}, **auth)
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["stop"]["cod"]["collected"] is True


def test_points_say_each_problem_at_its_path(open_for_business, dara, settings):
    courier, client = dara
    at = "2026-11-25T10:00:00Z"
    body = {
        "points": [
            {"lat": 11.5, "long": 104.9, "at": at},
            {"long": 200, "at": "2026-11-25T10:00:00", "accuracy": -1, "alt": 3},
            "here",
        ],
        "where": 1,
    }
    assert details(client.post("/location", body)) == [
        {"field": "where", "message": "Unknown field."},
        {"field": "points[1].alt", "message": "Unknown field."},
        {"field": "points[1].lat", "message": "Must be a number from -90 to 90."},
        {"field": "points[1].long", "message": "Must be a number from -180 to 180."},
        {"field": "points[1].at", "message": "Must be a time with a zone, e.g. …T10:00:00Z."},
        {"field": "points[1].accuracy", "message": "Metres: a number of at least 0."},
        {"field": "points[2]", "message": "Must be an object."},
    ]
    settings.MAX_COURIER_POINTS = 2  # read when the body is, not when the table was made
    answer = client.post("/location", {"points": [{"lat": 11.5, "long": 104.9, "at": at}] * 3})
    assert details(answer) == [{"field": "points", "message": "Must be 1 to 2 points."}]
