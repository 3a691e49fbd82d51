"""Pay plans per vehicle type (docs/contract.md §24): what a courier earns per delivered drop,
per km of the run and per return, never negative (a CHECK). Operators set them; Finance
exports the pay. The grants are frozen here on purpose: a later change is a new migration."""

from decimal import Decimal

import django.core.validators
import django.db.models.deletion
from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations, models

GROUPS = {
    "Operators": ["view_payplan", "add_payplan", "change_payplan"],
    "Finance": ["view_payplan", "export_pay"],
}


def grant(apps, schema_editor):
    using = schema_editor.connection.alias
    # Django makes permissions in post_migrate: on a fresh database none exist yet.
    create_permissions(global_apps.get_app_config("couriers"), apps=apps, verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        found = list(
            Permission.objects.using(using).filter(
                content_type__app_label="couriers", codename__in=codenames
            )
        )
        if len(found) != len(codenames):  # a typo must fail the migration
            raise LookupError(f"couriers has no permission among {codenames}")
        group.permissions.add(*found)


def money(verbose_name):
    return models.DecimalField(
        decimal_places=2,
        default=Decimal("0.00"),
        max_digits=8,
        validators=[django.core.validators.MinValueValidator(Decimal("0.00"))],
        verbose_name=verbose_name,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("couriers", "0006_credential_stamp"),
        ("fleet", "0002_seed_and_operators"),
        ("accounts", "0005_operator_groups"),
    ]

    operations = [
        migrations.CreateModel(
            name="PayPlan",
            fields=[
                (
                    "vehicle",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT,
                        primary_key=True,
                        related_name="pay_plan",
                        serialize=False,
                        to="fleet.vehicletype",
                    ),
                ),
                ("per_drop", money("per delivered drop")),
                ("per_km", money("per km of the run")),
                ("per_return", money("per return")),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "verbose_name": "pay plan",
                "permissions": [("export_pay", "Can export couriers' pay (CSV)")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("per_drop__gte", 0), ("per_km__gte", 0), ("per_return__gte", 0)
                        ),
                        name="pay_plan_non_negative",
                    )
                ],
            },
        ),
        migrations.RunPython(grant, migrations.RunPython.noop),
    ]
