"""A business's languages where a page or message has no better clue (docs/contract.md §26):
its recipients' (Khmer unless set) and its dashboard's (English unless set)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_low_balance_threshold"),
    ]

    operations = [
        migrations.AddField(
            model_name="business",
            name="dashboard_language",
            field=models.CharField(
                choices=[("en", "English"), ("km", "ភាសាខ្មែរ")],
                db_default="en",
                default="en",
                max_length=5,
            ),
        ),
        migrations.AddField(
            model_name="business",
            name="recipient_language",
            field=models.CharField(
                choices=[("en", "English"), ("km", "ភាសាខ្មែរ")],
                db_default="km",
                default="km",
                max_length=5,
            ),
        ),
    ]
