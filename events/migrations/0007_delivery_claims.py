# A worker's sender keeps many deliveries in flight (events/delivery.py): a business no
# longer takes a turn (its lease column goes), and a delivery's claim is marked, so that an
# endpoint's share is counted across workers.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0006_courier_position"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="webhookendpoint",
            name="sending_until",
        ),
        migrations.AddField(
            model_name="delivery",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("claimed_until__isnull", False)),
                fields=["endpoint", "claimed_until"],
                name="delivery_claimed",
            ),
        ),
    ]
