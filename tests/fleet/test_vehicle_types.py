"""Vehicle types (docs/contract.md §18): seeded by migration, listed by GET /vehicle-types,
edited by operators in the console under their own permissions."""

from __future__ import annotations

import importlib
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction

from fleet.models import VehicleType
from tests.operators import staff_client

seeding = importlib.import_module("fleet.migrations.0002_seed_and_operators")

SEEDED = [
    {
        "code": "motorbike",
        "name": "Motorbike",
        "max_parcel_size": "M",
        "max_parcel_weight_kg": 20.0,
        "max_load_kg": 30.0,
        "price_multiplier": "1.00",
    },
    {
        "code": "tuktuk",
        "name": "Tuk-tuk",
        "max_parcel_size": "L",
        "max_parcel_weight_kg": 50.0,
        "max_load_kg": 150.0,
        "price_multiplier": "1.50",
    },
    {
        "code": "car",
        "name": "Car",
        "max_parcel_size": "L",
        "max_parcel_weight_kg": 50.0,
        "max_load_kg": 200.0,
        "price_multiplier": "2.00",
    },
    {
        "code": "van",
        "name": "Van",
        "max_parcel_size": "XL",
        "max_parcel_weight_kg": 200.0,
        "max_load_kg": 800.0,
        "price_multiplier": "3.00",
    },
]


@pytest.fixture
def seeded(db) -> None:
    """The migration's rows (a transactional test before this one may have flushed them)."""
    seeding.seed(apps, SimpleNamespace(connection=connection))


def test_the_migration_seeds_the_contract_table_listed_cheapest_first(seeded, alice, api):
    response = api.get("/vehicle-types", alice.sandbox_key)
    assert response.status_code == 200, response.content
    assert response.json()["data"] == {"vehicle_types": SEEDED}


def test_an_inactive_type_is_not_listed(seeded, alice, api):
    VehicleType.objects.filter(code="tuktuk").update(active=False)
    codes = [
        v["code"] for v in api.get("/vehicle-types", alice.live_key).json()["data"]["vehicle_types"]
    ]
    assert codes == ["motorbike", "car", "van"]


def test_the_list_needs_a_key(seeded, api):
    response = api.get("/vehicle-types", None)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"


def test_a_size_fits_its_vehicle_and_every_smaller_one(seeded):
    motorbike, van = VehicleType.objects.get(code="motorbike"), VehicleType.objects.get(code="van")
    assert [motorbike.takes_size(s) for s in ("S", "M", "L", "XL")] == [True, True, False, False]
    assert all(van.takes_size(s) for s in ("S", "M", "L", "XL"))


@pytest.mark.parametrize(
    "change",
    [
        {"price_multiplier": Decimal("0")},
        {"max_parcel_weight_kg": Decimal("0")},
        {"max_load_kg": Decimal("10")},  # less than one parcel may weigh
    ],
    ids=["free multiplier", "weightless parcels", "load below a parcel"],
)
def test_the_database_refuses_inconsistent_limits(seeded, change):
    with pytest.raises(IntegrityError), transaction.atomic():
        VehicleType.objects.filter(code="motorbike").update(**change)


def test_operators_edit_a_type_in_the_console_but_never_delete_it(seeded):
    operator = staff_client("ops", groups=["Operators"])
    url = "/admin/fleet/vehicletype/tuktuk/change/"
    page = operator.get(url)
    assert page.status_code == 200
    assert 'name="code"' not in page.content.decode()  # the code never changes
    form = {
        "name": "Tuk-tuk (remorque)",
        "max_parcel_size": "L",
        "max_parcel_weight_kg": "60",
        "max_load_kg": "160",
        "price_multiplier": "1.75",
        "active": "on",
        "_save": "Save",
    }
    assert operator.post(url, form).status_code == 302
    tuktuk = VehicleType.objects.get(code="tuktuk")
    assert (tuktuk.name, tuktuk.price_multiplier) == ("Tuk-tuk (remorque)", Decimal("1.75"))
    assert (
        operator.post("/admin/fleet/vehicletype/tuktuk/delete/", {"post": "yes"}).status_code == 403
    )
    assert VehicleType.objects.filter(code="tuktuk").exists()


def test_finance_sees_the_types_but_cannot_change_them(seeded):
    finance = staff_client("money", groups=["Finance"])
    assert finance.get("/admin/fleet/vehicletype/").status_code == 200
    form = {"name": "Cheap van", "max_parcel_size": "XL", "max_parcel_weight_kg": "200",
            "max_load_kg": "800", "price_multiplier": "0.50", "_save": "Save"}  # fmt: skip
    assert finance.post("/admin/fleet/vehicletype/van/change/", form).status_code == 403
    assert VehicleType.objects.get(code="van").price_multiplier == Decimal("3.00")


def test_the_active_types_read_for_a_batch_are_what_the_orm_reads(seeded):
    """fleet.selectors.active_vehicle_types makes the instances from the driver's rows with
    SQL compiled once: every field, its type and the order as the ORM's own read."""
    from fleet.selectors import active_vehicle_types

    VehicleType.objects.filter(code="tuktuk").update(active=False)
    VehicleType.objects.filter(code="van").update(price_multiplier=Decimal("2.50"))

    def fields(vehicle):
        return {f.attname: getattr(vehicle, f.attname) for f in VehicleType._meta.concrete_fields}

    expected = [fields(v) for v in VehicleType.objects.filter(active=True)]
    for _ in range(2):  # compiled, then sent again as compiled
        read = active_vehicle_types()
        assert [fields(v) for v in read] == expected
        assert [{k: type(v) for k, v in fields(v).items()} for v in read] == [
            {k: type(v) for k, v in e.items()} for e in expected
        ]
        assert all(not v._state.adding for v in read)
    assert "tuktuk" not in [v.code for v in read] and len(read) == len(expected) >= 2
