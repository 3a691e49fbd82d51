"""The vehicle types of docs/contract.md §18, and who may edit them: Operators (view, add,
change; a type is retired by switching it off, never deleted: drops name it). Finance sees
them. Frozen here on purpose, like accounts 0005: a later change is a new migration."""

from decimal import Decimal

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

VEHICLE_TYPES = [
    # code, name, max parcel size, max parcel kg, max load kg per order, price multiplier
    ("motorbike", "Motorbike", "M", "20", "30", "1.00"),
    ("tuktuk", "Tuk-tuk", "L", "50", "150", "1.50"),
    ("car", "Car", "L", "50", "200", "2.00"),
    ("van", "Van", "XL", "200", "800", "3.00"),
]
GROUPS = {
    "Operators": ["view_vehicletype", "add_vehicletype", "change_vehicletype"],
    "Finance": ["view_vehicletype"],
}


def seed(apps, schema_editor):
    using = schema_editor.connection.alias
    VehicleType = apps.get_model("fleet", "VehicleType")
    VehicleType.objects.using(using).bulk_create(
        [
            VehicleType(
                code=code,
                name=name,
                max_parcel_size=size,
                max_parcel_weight_kg=Decimal(parcel_kg),
                max_load_kg=Decimal(load_kg),
                price_multiplier=Decimal(multiplier),
            )
            for code, name, size, parcel_kg, load_kg, multiplier in VEHICLE_TYPES
        ],
        ignore_conflicts=True,
    )


def grant(apps, schema_editor):
    using = schema_editor.connection.alias
    # Django makes permissions in post_migrate: on a fresh database none exist yet.
    create_permissions(global_apps.get_app_config("fleet"), apps=apps, verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        found = list(
            Permission.objects.using(using).filter(
                content_type__app_label="fleet", codename__in=codenames
            )
        )
        if len(found) != len(codenames):  # a typo must fail the migration
            raise LookupError(f"fleet has no permission among {codenames}")
        group.permissions.add(*found)


def unseed(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.using(schema_editor.connection.alias).filter(
        content_type__app_label="fleet"
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0001_vehicle_types"),
        ("accounts", "0005_operator_groups"),
    ]

    operations = [
        migrations.RunPython(seed, migrations.RunPython.noop),
        migrations.RunPython(grant, unseed),
    ]
