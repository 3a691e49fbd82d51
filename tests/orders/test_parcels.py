"""Vehicles on a pickup group and parcels on a drop (docs/contract.md §18): the 400s of their
shape, PARCEL_TOO_LARGE with the group's load in submission order, what is stored, and the
vehicle's multiplier in the price."""

from __future__ import annotations

from decimal import Decimal

import pytest

from fleet.models import VehicleType
from orders.models import Batch, Drop, Order
from tests.factories import batch, drop, group


def parcel_drop(client_order_id: str, **parcel) -> dict:
    return {**drop(client_order_id), "parcel": parcel}


def results_of(response) -> dict[str, dict]:
    assert response.status_code == 200, response.content
    return {entry["client_order_id"]: entry for entry in response.json()["data"]["orders"]}


def fields_of(response) -> dict[str, str]:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    return {detail["field"]: detail["message"] for detail in error["details"]}


# --- The vehicle of a pickup group -------------------------------------------------------------


def test_a_group_names_its_vehicle_and_the_default_is_a_motorbike(open_for_business, alice, api):
    body = batch(group(drop("V-1")), {**group(drop("V-2")), "vehicle": "van"})
    results = results_of(api.bulk(body, alice.sandbox_key))
    vehicles = {
        str(order.pk): order.vehicle for order in Order.objects.filter(business=alice.business)
    }
    assert vehicles[results["V-1"]["pass_order_id"]] == "motorbike"
    assert vehicles[results["V-2"]["pass_order_id"]] == "van"


@pytest.mark.parametrize(
    ("vehicle", "says"),
    [
        ("rocket", "'rocket' is not an active vehicle type"),
        ("", "Must be a vehicle type's code"),
        (3, "Must be a vehicle type's code"),
        ("x" * 21, "Must be a vehicle type's code"),
    ],
)
def test_an_unknown_vehicle_is_a_400_naming_its_group(open_for_business, alice, api, vehicle, says):
    body = batch(group(drop("U-1")), {**group(drop("U-2")), "vehicle": vehicle})
    errors = fields_of(api.bulk(body, alice.sandbox_key))
    assert list(errors) == ["orders[1].vehicle"]
    assert says in errors["orders[1].vehicle"]
    assert Batch.objects.count() == 0


def test_an_inactive_vehicle_cannot_be_asked_for(open_for_business, alice, api):
    VehicleType.objects.filter(code="van").update(active=False)
    body = batch({**group(drop("I-1")), "vehicle": "van"})
    errors = fields_of(api.bulk(body, alice.sandbox_key))
    assert (
        "'van' is not an active vehicle type (active: car, motorbike, tuktuk)"
        in (errors["orders[0].vehicle"])
    )


def test_the_vehicle_error_names_its_group_after_a_group_that_is_not_an_object(
    open_for_business, alice, api
):
    body = batch(group(drop("P-1")), {**group(drop("P-2")), "vehicle": "rocket"})
    body["orders"].insert(0, "not a group")
    errors = fields_of(api.bulk(body, alice.sandbox_key))
    assert set(errors) == {"orders[0]", "orders[2].vehicle"}


# --- The parcel's shape ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parcel", "field"),
    [
        ("big", "parcel"),
        ({"size": "XXL"}, "parcel.size"),
        ({"size": "m"}, "parcel.size"),
        ({"weight_kg": 0}, "parcel.weight_kg"),
        ({"weight_kg": -1}, "parcel.weight_kg"),
        ({"weight_kg": 1000.5}, "parcel.weight_kg"),
        ({"weight_kg": "2"}, "parcel.weight_kg"),
        ({"weight_kg": True}, "parcel.weight_kg"),
        ({"weight_kg": 0.0001}, "parcel.weight_kg"),  # nothing, to the gram
        ({"weight_kg": 4.7e241}, "parcel.weight_kg"),  # past what a Decimal may quantize
        ({"weight_kg": 2**63 - 1}, "parcel.weight_kg"),
        ({"description": "x" * 201}, "parcel.description"),
        ({"description": 7}, "parcel.description"),
        ({"value": "12.345"}, "parcel.value"),
        ({"value": 12}, "parcel.value"),
        ({"value": "-1"}, "parcel.value"),
        ({"colour": "red"}, "parcel"),
    ],
)
def test_a_parcel_of_the_wrong_shape_is_a_400_naming_its_field(
    open_for_business, alice, api, parcel, field
):
    body = batch(group(drop("S-1"), {**drop("S-2"), "parcel": parcel}))
    errors = fields_of(api.bulk(body, alice.sandbox_key))
    assert list(errors) == [f"orders[0].dropoff[1].{field}"]
    assert Drop.objects.count() == 0


def test_a_parcel_read_once_is_not_taken_for_one_that_only_compares_equal(
    open_for_business, alice, api
):
    """The batch reads each distinct parcel once (orders/inputs.py): true == 1 and 1 == 1.0 in
    Python, but a weight of true is refused wherever it comes, and a bad parcel seen twice
    is named at both places."""
    body = batch(
        group(
            parcel_drop("S-1", weight_kg=1),
            parcel_drop("S-2", weight_kg=True),
            parcel_drop("S-3", weight_kg=-1),
            parcel_drop("S-4", weight_kg=-1),
            parcel_drop("S-5", weight_kg=1.0),
        )
    )
    errors = fields_of(api.bulk(body, alice.sandbox_key))
    assert list(errors) == [f"orders[0].dropoff[{i}].parcel.weight_kg" for i in (1, 2, 3)]


def test_drops_sharing_a_parcel_each_store_it(open_for_business, alice, api):
    same = {"size": "M", "weight_kg": 0.5, "description": "Shoes", "value": "40.00"}
    body = batch(group(*(parcel_drop(f"P-{i}", **same) for i in range(3))))
    results_of(api.bulk(body, alice.sandbox_key))
    stored = {(d.parcel_size, d.parcel_weight_kg, d.parcel_value) for d in Drop.objects.all()}
    assert stored == {("M", Decimal("0.500"), Decimal("40.00"))}
    assert Drop.objects.count() == 3


def test_a_parcel_is_stored_as_sent_and_defaults_to_a_small_kilo(open_for_business, alice, api):
    body = batch(
        {
            **group(
                drop("D-1"),
                parcel_drop("D-2", size="XL", weight_kg=120.25, description="Sofa", value="350.5"),
                parcel_drop("D-3", weight_kg=2),
            ),
            "vehicle": "van",
        }
    )
    results_of(api.bulk(body, alice.sandbox_key))
    stored = {
        d.client_order_id: (d.parcel_size, d.parcel_weight_kg, d.parcel_description, d.parcel_value)
        for d in Drop.objects.all()
    }
    assert stored == {
        "D-1": ("S", Decimal("1.000"), None, None),
        "D-2": ("XL", Decimal("120.250"), "Sofa", Decimal("350.50")),
        "D-3": ("S", Decimal("2.000"), None, None),
    }


# --- PARCEL_TOO_LARGE --------------------------------------------------------------------------


def test_a_parcel_larger_or_heavier_than_the_vehicle_takes_is_too_large(
    open_for_business, alice, api
):
    body = batch(
        group(
            parcel_drop("M-FITS", size="M", weight_kg=20),
            parcel_drop("L-BIG", size="L"),
            parcel_drop("HEAVY", weight_kg=20.001),
        ),
        {**group(parcel_drop("L-TUKTUK", size="L", weight_kg=50)), "vehicle": "tuktuk"},
    )
    results = results_of(api.bulk(body, alice.sandbox_key))
    assert results["M-FITS"]["status"] == results["L-TUKTUK"]["status"] == "accepted"
    assert results["L-BIG"]["failure_reason"] == "PARCEL_TOO_LARGE"
    assert results["L-BIG"]["message"] == (
        "A size L parcel is larger than a motorbike takes (up to M)."
    )
    assert results["HEAVY"]["failure_reason"] == "PARCEL_TOO_LARGE"
    assert results["HEAVY"]["message"] == "A parcel of 20.001 kg is over a motorbike's 20 kg."


def test_the_groups_load_is_counted_in_submission_order_from_its_accepted_drops(
    open_for_business, alice, api
):
    # A motorbike carries 30 kg per order. 12 + 12 fit; the next 12 would make 36; a lighter
    # one after it still fits (30). A drop refused for a later rule adds nothing.
    body = batch(
        group(
            parcel_drop("A", weight_kg=12),
            parcel_drop("A", weight_kg=5),  # a duplicate of this batch's A: rule 10
            parcel_drop("B", weight_kg=12),
            parcel_drop("C", weight_kg=12),
            parcel_drop("D", weight_kg=6),
        ),
        group(parcel_drop("OTHER-GROUP", weight_kg=20)),  # a load of its own
    )
    response = api.bulk(body, alice.sandbox_key)
    entries = response.json()["data"]["orders"]
    assert [e.get("failure_reason") for e in entries] == [
        None,
        "DUPLICATE_CLIENT_ORDER_ID",
        None,
        "PARCEL_TOO_LARGE",
        None,
        None,
    ]
    assert entries[3]["message"] == (
        "With this parcel the pickup's accepted load would be 36 kg, over a motorbike's 30 kg."
    )


def test_parcel_too_large_comes_after_the_window_and_before_cod_and_duplicates(
    open_for_business, alice, api
):
    api.bulk(batch(group(drop("TAKEN"))), alice.sandbox_key)
    too_large = {"parcel": {"size": "XL"}}
    body = batch(
        group(
            {**drop("TAKEN"), **too_large, "cod": {"amount": "0"}},
            {
                **drop("LATE"),
                **too_large,
                "dropoff_window": {"start": "2026-11-23T03:00:00Z", "end": "2026-11-23T03:10:00Z"},
            },
        )
    )
    results = results_of(api.bulk(body, alice.sandbox_key))
    assert results["TAKEN"]["failure_reason"] == "PARCEL_TOO_LARGE"
    assert results["LATE"]["failure_reason"] == "INVALID_TIME_WINDOW"


def test_a_quote_applies_the_same_parcel_rules(open_for_business, alice, api):
    body = batch(group(parcel_drop("Q-1", weight_kg=18), parcel_drop("Q-2", weight_kg=13)))
    quoted = api.post("/orders/quote", body, alice.sandbox_key).json()["data"]["orders"]
    assert [q["status"] for q in quoted] == ["quotable", "rejected"]
    assert quoted[1]["failure_reason"] == "PARCEL_TOO_LARGE"


# --- The vehicle's multiplier in the price -----------------------------------------------------


@pytest.mark.parametrize(
    ("vehicle", "delivery"),
    [
        ("motorbike", "1.03"),
        # 1.03 × 1.50 = 1.545: half-up to 1.55 (half-even would say 1.54).
        ("tuktuk", "1.55"),
        ("car", "2.06"),
        ("van", "3.09"),
    ],
)
def test_the_delivery_price_is_the_plan_times_the_vehicles_multiplier_half_up(
    open_for_business, make_tenant, api, vehicle, delivery
):
    tenant = make_tenant(base_fee="1.03", per_km_fee="0", sandbox_balance="100.00")
    body = batch({**group(drop("P-1")), "vehicle": vehicle})
    entry = results_of(api.bulk(body, tenant.sandbox_key))["P-1"]
    assert entry["price"] == delivery
    assert entry["price_breakdown"] == {"delivery": delivery, "cod_fee": "0.00"}
    assert Drop.objects.get().price == Decimal(delivery)


def test_an_operators_multiplier_is_read_when_the_batch_is(open_for_business, make_tenant, api):
    tenant = make_tenant(base_fee="2.00", per_km_fee="0")
    VehicleType.objects.filter(code="car").update(price_multiplier=Decimal("2.25"))
    body = batch({**group(drop("P-1")), "vehicle": "car"})
    assert results_of(api.bulk(body, tenant.sandbox_key))["P-1"]["price"] == "4.50"


def test_drops_that_say_nothing_of_their_parcel_are_not_weighed(
    open_for_business, make_tenant, api
):
    alice = make_tenant(sandbox_balance="1000.00")
    # 31 drops of the default kilo would pass a motorbike's 30 kg; said, the 31st is refused,
    # unsaid (a client from before parcels), every drop goes as it always did.
    unsaid = batch(group(*[drop(f"U-{i}") for i in range(31)]))
    said = batch(group(*[parcel_drop(f"S-{i}", weight_kg=1) for i in range(31)]))
    unsaid_results = results_of(api.bulk(unsaid, alice.sandbox_key))
    said_results = results_of(api.bulk(said, alice.sandbox_key))
    assert {e["status"] for e in unsaid_results.values()} == {"accepted"}
    assert [e.get("failure_reason") for e in said_results.values()] == [None] * 30 + [
        "PARCEL_TOO_LARGE"
    ]
