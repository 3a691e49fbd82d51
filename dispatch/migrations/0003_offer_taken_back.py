"""An offer may end taken back by an operator (`taken_back`, ten characters)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dispatch", "0002_offer_courier_in_couriers"),
    ]

    operations = [
        migrations.AlterField(
            model_name="offer",
            name="status",
            field=models.CharField(
                choices=[
                    ("offered", "Offered"),
                    ("accepted", "Accepted"),
                    ("declined", "Declined"),
                    ("expired", "Expired"),
                    ("withdrawn", "Withdrawn"),
                    ("taken_back", "Taken Back"),
                ],
                max_length=10,
            ),
        ),
    ]
