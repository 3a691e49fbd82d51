"""Request shapes declared once (core/shapes.py): the parser and the OpenAPI description of a
body are made from one table, so what the description says is what the parser does.

The bodies so declared: POST /orders/bulk and /orders/quote (orders/inputs.py),
PATCH /orders/<id> (tracking/edit_inputs.py), POST /account/cod/credit-wallet
(billing/inputs.py) and the courier API's (couriers/inputs.py).
"""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest
from django.test import Client

from billing.inputs import CREDIT
from core.api import ApiError
from core.shapes import REQUIRED, Array, Choice, Object, Problems, Shape, Text
from core.shapes import Field as ShapeField
from couriers.inputs import LOCATION, MOVE, SIGN_IN, STATUS
from orders.inputs import BATCH_REQUEST, QUOTE_REQUEST, parse_batch
from orders.models import Drop
from tests.factories import batch, drop, group
from tracking.edit_inputs import DROP_EDIT


@pytest.fixture(scope="module")
def components() -> dict:
    response = Client().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return orjson.loads(response.content)["components"]["schemas"]


def shapes_in(shape: Shape):
    """The shape and every shape inside it, each once."""
    yield shape
    for field in shape.fields:
        kind = field.kind
        inner = kind.item.shape if isinstance(kind, Array) else getattr(kind, "shape", None)
        if inner is not None:
            yield from shapes_in(inner)


def component_of(components: dict, shape: Shape) -> dict:
    # A PATCH body is a "Patched…" component (every field optional), as spectacular names it.
    return components.get(shape.name) or components[f"Patched{shape.name}"]


@pytest.mark.parametrize(
    "root",
    [BATCH_REQUEST, QUOTE_REQUEST, DROP_EDIT, CREDIT, SIGN_IN, STATUS, MOVE, LOCATION],
    ids=lambda s: s.name,
)
def test_each_declared_shape_is_described_field_for_field(components, root):
    for shape in shapes_in(root):
        component = component_of(components, shape)
        properties = component["properties"]
        assert list(properties) == [field.name for field in shape.fields], shape.name
        required = sorted(field.name for field in shape.fields if field.required)
        assert sorted(component.get("required", [])) == required, shape.name
        for field in shape.fields:
            described = properties[field.name]
            if not field.required:
                assert described.get("nullable", False) == field.null, (shape.name, field.name)
            if isinstance(field.kind, Text) and field.kind.doc is None:
                assert described["maxLength"] == field.kind.max_length, (shape.name, field.name)
            if field.help:
                assert described["description"] == field.help, (shape.name, field.name)


# Each text of a drop, by its path in a one-drop body, and the component describing it.
DROP_TEXTS = [
    (("client_order_id",), "Drop"),
    (("external_waybill",), "Drop"),
    (("notes",), "Drop"),
    (("dropoff", "name"), "Recipient"),
    (("parcel", "description"), "Parcel"),
]


@pytest.mark.parametrize(("path", "component"), DROP_TEXTS, ids=lambda p: ".".join(p))
def test_a_text_at_its_described_length_is_read_and_one_over_is_refused(
    db, components, path, component
):
    longest = components[component]["properties"][path[-1]]["maxLength"]

    def body_with(text: str) -> dict:
        one = drop("T-1")
        one.setdefault("parcel", {})
        target = one
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = text
        return batch(group(one))

    parse_batch(body_with("x" * longest))
    with pytest.raises(ApiError) as refused:
        parse_batch(body_with("x" * (longest + 1)))
    assert refused.value.details == [
        {
            "field": "orders[0].dropoff[0]." + ".".join(path),
            "message": f"Must be at most {longest} characters.",
        }
    ]


def test_a_bad_vehicle_is_listed_even_beside_a_bad_pickup(alice, api):
    """Every problem of a group is listed: its vehicle is read whether or not its pickup is
    an object (the table reads every field)."""
    body = batch({"pickup": "nowhere", "vehicle": "", "dropoff": [drop("V-1")]})
    response = api.bulk(body, alice.sandbox_key)
    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"field": "orders[0].pickup", "message": "Must be an object."},
        {
            "field": "orders[0].vehicle",
            "message": "Must be a vehicle type's code, such as motorbike.",
        },
    ]


def test_a_drops_problems_are_listed_in_the_order_of_its_fields(alice, api):
    """The recipient's problems (its email's too) come together, before the drop's next field."""
    bad = drop("E-1", email="not an address") | {"sandbox_scenario": "explode"}
    response = api.bulk(batch(group(bad)), alice.sandbox_key)
    assert response.status_code == 400
    assert [d["field"] for d in response.json()["error"]["details"]] == [
        "orders[0].dropoff[0].dropoff.email",
        "orders[0].dropoff[0].sandbox_scenario",
    ]


def test_a_null_weight_is_the_default_weight_as_described(
    components, open_for_business, alice, api
):
    """A parcel's weight_kg of null counts as absent (1 kg), and the description says so."""
    assert components["Parcel"]["properties"]["weight_kg"]["nullable"] is True
    body = batch(group(drop("W-1") | {"parcel": {"size": "M", "weight_kg": None}}))
    response = api.bulk(body, alice.sandbox_key)
    assert response.status_code == 200, response.content
    assert response.json()["data"]["counts"]["accepted"] == 1
    assert Drop.objects.get().parcel_weight_kg == Decimal("1.000")


# --- the tables themselves ----------------------------------------------------------------

SIZE = ShapeField("size", Choice(("S", "M")), null=False, default="S")
LABEL = ShapeField("label", Text(10), required=True)
BOX = Shape("Box", [LABEL, SIZE], closed="only label and size")


def read(shape: Shape, obj: dict) -> tuple:
    problems = Problems()
    return shape.read(problems, obj, "box"), problems.items


def test_a_table_reads_defaults_and_says_each_problem_at_its_path():
    assert read(BOX, {"label": "a"}) == ({"label": "a", "size": "S"}, [])
    assert read(BOX, {"size": None}) == (
        {"label": None, "size": "S"},
        [
            {"field": "box.label", "message": REQUIRED},
            {"field": "box.size", "message": "Must be one of S, M."},
        ],
    )
    assert read(BOX, {"label": " ", "size": "XL"})[1] == [
        {"field": "box.label", "message": "Must not be empty."},
        {"field": "box.size", "message": "Must be one of S, M."},
    ]
    assert read(BOX, {"label": "a", "lid": 1}) == (
        None,
        [{"field": "box", "message": "Unknown field(s): lid; only label and size."}],
    )


def test_a_stopping_field_ends_the_object_and_a_change_reads_only_what_was_sent():
    crate = Shape("Crate", [ShapeField("box", Object(BOX, "Must be a box."), required=True), LABEL])
    crate_stops = Shape("Crate", crate.fields, stops="box")
    assert read(crate, {"box": 1})[1] == [
        {"field": "box.box", "message": "Must be a box."},
        {"field": "box.label", "message": REQUIRED},
    ]
    assert read(crate_stops, {"box": 1}) == (
        None,
        [{"field": "box.box", "message": "Must be a box."}],
    )
    change = Shape("BoxChange", [ShapeField("label", Text(10)), SIZE], sent_only=True)
    assert read(change, {"size": "M"}) == ({"size": "M"}, [])
    assert read(change, {}) == ({}, [])


def test_a_build_must_take_the_fields_in_their_order():
    with pytest.raises(TypeError):
        Shape("Box", [LABEL, SIZE], build=lambda size, label: (label, size))
    box = Shape("Box", [LABEL, SIZE], build=lambda label, size: (label, size))
    assert read(box, {"label": "a", "size": "M"}) == (("a", "M"), [])
