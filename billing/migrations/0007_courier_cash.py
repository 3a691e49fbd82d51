"""The courier cash ledger (docs/contract.md §23): who holds the cash the COD ledger says
was collected."""

from decimal import Decimal

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0006_cod_totals_kept"),
        ("couriers", "0005_driver_from_orders"),
        ("orders", "0020_driver_to_couriers"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="codentry",
            name="courier",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="couriers.driver",
            ),
        ),
        migrations.CreateModel(
            name="CourierCashAccount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "environment",
                    models.CharField(
                        choices=[("live", "Live"), ("sandbox", "Sandbox")], max_length=10
                    ),
                ),
                ("currency", models.CharField(max_length=3)),
                (
                    "in_hand",
                    models.DecimalField(
                        db_default=Decimal("0.00"),
                        decimal_places=2,
                        default=Decimal("0.00"),
                        max_digits=16,
                    ),
                ),
                (
                    "collected_total",
                    models.DecimalField(
                        db_default=Decimal("0.00"),
                        decimal_places=2,
                        default=Decimal("0.00"),
                        max_digits=16,
                    ),
                ),
                (
                    "handed_over_total",
                    models.DecimalField(
                        db_default=Decimal("0.00"),
                        decimal_places=2,
                        default=Decimal("0.00"),
                        max_digits=16,
                    ),
                ),
                (
                    "courier_owes",
                    models.DecimalField(
                        db_default=Decimal("0.00"),
                        decimal_places=2,
                        default=Decimal("0.00"),
                        max_digits=16,
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "courier",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="cash_accounts",
                        to="couriers.driver",
                    ),
                ),
            ],
            options={
                "verbose_name": "courier cash account",
                "verbose_name_plural": "cash desk",
                "permissions": [
                    ("record_hand_over", "Can record a courier's cash hand-over (Cashier)")
                ],
            },
        ),
        migrations.CreateModel(
            name="CourierCashEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("COLLECTED", "Collected"),
                            ("HANDED_OVER", "Handed over"),
                            ("SHORTAGE", "Shortage"),
                        ],
                        max_length=20,
                    ),
                ),
                ("amount", models.DecimalField(decimal_places=2, max_digits=12)),
                ("in_hand_after", models.DecimalField(decimal_places=2, max_digits=16)),
                ("receipt", models.CharField(blank=True, max_length=100)),
                ("note", models.CharField(blank=True, max_length=200)),
                ("created_at", models.DateTimeField()),
                (
                    "account",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="entries",
                        to="billing.couriercashaccount",
                    ),
                ),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "drop",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="orders.drop",
                    ),
                ),
            ],
            options={
                "verbose_name": "courier cash entry",
                "verbose_name_plural": "courier cash entries",
                "ordering": ["-id"],
            },
        ),
        migrations.CreateModel(
            name="HubCashEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "environment",
                    models.CharField(
                        choices=[("live", "Live"), ("sandbox", "Sandbox")], max_length=10
                    ),
                ),
                ("currency", models.CharField(max_length=3)),
                (
                    "kind",
                    models.CharField(
                        choices=[("SURPLUS", "Surplus")], default="SURPLUS", max_length=20
                    ),
                ),
                ("amount", models.DecimalField(decimal_places=2, max_digits=12)),
                ("receipt", models.CharField(max_length=100)),
                ("note", models.CharField(blank=True, max_length=200)),
                ("created_at", models.DateTimeField()),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "courier",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="couriers.driver",
                    ),
                ),
            ],
            options={
                "verbose_name": "hub cash entry",
                "verbose_name_plural": "hub cash entries",
                "ordering": ["-id"],
            },
        ),
        migrations.AddConstraint(
            model_name="couriercashaccount",
            constraint=models.UniqueConstraint(
                condition=models.Q(("courier__isnull", False)),
                fields=("courier", "environment", "currency"),
                name="courier_cash_account_once",
            ),
        ),
        migrations.AddConstraint(
            model_name="couriercashaccount",
            constraint=models.UniqueConstraint(
                condition=models.Q(("courier__isnull", True)),
                fields=("environment", "currency"),
                name="unattributed_cash_account_once",
            ),
        ),
        migrations.AddConstraint(
            model_name="couriercashaccount",
            constraint=models.CheckConstraint(
                condition=models.Q(("in_hand__gte", 0)), name="cash_in_hand_non_negative"
            ),
        ),
        migrations.AddConstraint(
            model_name="couriercashaccount",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("collected_total__gte", 0),
                    ("courier_owes__gte", 0),
                    ("handed_over_total__gte", 0),
                ),
                name="cash_totals_non_negative",
            ),
        ),
        migrations.AddIndex(
            model_name="couriercashentry",
            index=models.Index(fields=["account", "created_at"], name="cash_entry_when"),
        ),
        migrations.AddConstraint(
            model_name="couriercashentry",
            constraint=models.CheckConstraint(
                condition=models.Q(("in_hand_after__gte", 0)),
                name="cash_in_hand_after_non_negative",
            ),
        ),
        migrations.AddConstraint(
            model_name="couriercashentry",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("kind", "COLLECTED"), ("amount__gt", 0), ("drop__isnull", False)),
                    models.Q(
                        ("kind", "HANDED_OVER"),
                        ("amount__lt", 0),
                        models.Q(("receipt", ""), _negated=True),
                    ),
                    models.Q(
                        ("kind", "SHORTAGE"),
                        ("amount__lt", 0),
                        models.Q(("note", ""), _negated=True),
                    ),
                    _connector="OR",
                ),
                name="cash_entry_sign_by_kind",
            ),
        ),
        migrations.AddConstraint(
            model_name="couriercashentry",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind", "COLLECTED")),
                fields=("drop",),
                name="cash_collected_once_per_drop",
            ),
        ),
        migrations.AddConstraint(
            model_name="hubcashentry",
            constraint=models.CheckConstraint(
                condition=models.Q(("amount__gt", 0), ("kind", "SURPLUS")),
                name="hub_cash_surplus_positive",
            ),
        ),
    ]
