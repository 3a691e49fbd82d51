"""The courier model moves from orders to couriers: `couriers.Driver`, on the table it had
(orders_driver), so no row moves and every foreign key to it (orders' orders, couriers'
tokens and positions, dispatch's offers) keeps pointing at the same rows. Only Django's
state changes here; the database keeps its table, and the content type (with the
permissions and admin history that hang on it) is relabelled from orders to couriers."""

import django.db.models.deletion
from django.db import migrations, models


def relabel(apps, schema_editor, old, new):
    ContentType = apps.get_model("contenttypes", "ContentType")
    types = ContentType.objects.using(schema_editor.connection.alias)
    if not types.filter(app_label=new, model="driver").exists():
        types.filter(app_label=old, model="driver").update(app_label=new)


def forwards(apps, schema_editor):
    relabel(apps, schema_editor, "orders", "couriers")


def backwards(apps, schema_editor):
    relabel(apps, schema_editor, "couriers", "orders")


def courier_field(**options):
    return models.ForeignKey(
        on_delete=django.db.models.deletion.CASCADE, to="couriers.driver", **options
    )


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("couriers", "0004_position_box"),
        ("orders", "0019_recipient_email"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Driver",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("name", models.CharField(max_length=200)),
                        (
                            "phone",
                            models.CharField(
                                help_text="E.164, e.g. +85512345678: the sign-in.", max_length=20
                            ),
                        ),
                        ("is_sandbox_test_driver", models.BooleanField(default=False)),
                        ("active", models.BooleanField(default=True)),
                        (
                            "vehicle",
                            models.CharField(
                                db_default="motorbike",
                                default="motorbike",
                                help_text="A vehicle type's code (fleet): what the courier rides.",
                                max_length=20,
                            ),
                        ),
                        (
                            "password",
                            models.CharField(blank=True, db_default="", default="", max_length=128),
                        ),
                        ("online", models.BooleanField(db_default=False, default=False)),
                        ("online_changed_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "verbose_name": "courier",
                        "db_table": "orders_driver",
                        "permissions": [
                            ("manage_courier", "Can create couriers and set their passwords")
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("is_sandbox_test_driver", True)),
                                fields=("is_sandbox_test_driver",),
                                name="one_sandbox_test_driver",
                            ),
                            models.UniqueConstraint(
                                condition=models.Q(("password", ""), _negated=True),
                                fields=("phone",),
                                name="courier_phone_signs_in_once",
                            ),
                        ],
                    },
                ),
                migrations.AlterField(
                    model_name="couriertoken",
                    name="courier",
                    field=courier_field(related_name="tokens"),
                ),
                migrations.AlterField(
                    model_name="courierposition",
                    name="courier",
                    field=models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="position",
                        serialize=False,
                        to="couriers.driver",
                    ),
                ),
                migrations.AlterField(
                    model_name="courierpoint",
                    name="courier",
                    field=courier_field(db_index=False, related_name="+"),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]
