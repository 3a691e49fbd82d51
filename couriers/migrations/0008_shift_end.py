"""A courier's shift end (docs/contract.md §21): none for every existing courier."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("couriers", "0007_pay_plans"),
    ]

    operations = [
        migrations.AddField(
            model_name="driver",
            name="shift_ends_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
