"""The COD account keeps its entries' sums by kind (billing.cod._append), so that GET /account
reads three columns instead of summing every entry ever written; existing accounts get the
sums of their entries."""

from decimal import Decimal

from django.db import migrations, models
from django.db.models import DecimalField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce

# (column, kind of entry, sign): payouts and credits are negative entries, positive totals.
# Frozen here: the app's TOTALS may change, this migration must not.
TOTALS = (
    ("collected_total", "COLLECTED", Decimal(1)),
    ("remitted_total", "REMITTED", Decimal(-1)),
    ("credited_total", "CREDITED_TO_WALLET", Decimal(-1)),
)


def keep_totals(apps, schema_editor) -> None:
    """One UPDATE per total, whatever the number of accounts."""
    CodAccount = apps.get_model("billing", "CodAccount")
    CodEntry = apps.get_model("billing", "CodEntry")
    money = DecimalField(max_digits=16, decimal_places=2)
    for column, kind, sign in TOTALS:
        sums = (
            CodEntry.objects.filter(account=OuterRef("pk"), kind=kind)
            .order_by()
            .values("account")
            .annotate(total=Sum("amount"))
            .values("total")
        )
        summed = Coalesce(Subquery(sums), Value(Decimal("0.00")), output_field=money)
        CodAccount.objects.update(**{column: summed * Value(sign, output_field=money)})


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_low_balance_threshold"),
        ("billing", "0005_cod_ledger"),
    ]

    operations = [
        migrations.AddField(
            model_name="codaccount",
            name="collected_total",
            field=models.DecimalField(
                db_default=Decimal("0.00"), decimal_places=2, default=Decimal("0.00"), max_digits=16
            ),
        ),
        migrations.AddField(
            model_name="codaccount",
            name="credited_total",
            field=models.DecimalField(
                db_default=Decimal("0.00"), decimal_places=2, default=Decimal("0.00"), max_digits=16
            ),
        ),
        migrations.AddField(
            model_name="codaccount",
            name="remitted_total",
            field=models.DecimalField(
                db_default=Decimal("0.00"), decimal_places=2, default=Decimal("0.00"), max_digits=16
            ),
        ),
        migrations.AddConstraint(
            model_name="codaccount",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("collected_total__gte", 0),
                    ("credited_total__gte", 0),
                    ("remitted_total__gte", 0),
                ),
                name="cod_totals_non_negative",
            ),
        ),
        migrations.RunPython(keep_totals, migrations.RunPython.noop),
    ]
