"""Runs (docs/contract.md §21): a courier carries the stops of one or more orders in one
order to ride. Three nullable columns: existing orders and drops keep what they had, and a
run without positions is ridden in the order its orders were assigned (orders/runs.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0022_scans_and_signatures"),
    ]

    operations = [
        migrations.AddField(
            model_name="order",
            name="run_id",
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="order",
            name="pickup_run_position",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="drop",
            name="run_position",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
