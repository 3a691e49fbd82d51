"""The courier model lives in couriers now (couriers 0005, on this app's old table
orders_driver): an order's driver points there, and orders forgets the model. State only:
the table, its rows and the foreign keys to it stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("couriers", "0005_driver_from_orders"),
        # Every foreign key to the model has moved before orders forgets it.
        ("dispatch", "0002_offer_courier_in_couriers"),
        ("orders", "0019_recipient_email"),
        # The operators' groups were granted orders.Driver's permissions while the model was
        # orders': on a new database they must be made before orders forgets it.
        ("accounts", "0005_operator_groups"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="order",
                    name="driver",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        to="couriers.driver",
                    ),
                ),
                migrations.DeleteModel(name="Driver"),
            ],
            database_operations=[],
        ),
    ]
