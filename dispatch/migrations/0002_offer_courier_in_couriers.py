"""An offer's courier is couriers.Driver now (the same table, orders_driver): state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("couriers", "0005_driver_from_orders"),
        ("dispatch", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="offer",
                    name="courier",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="offers",
                        to="couriers.driver",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
