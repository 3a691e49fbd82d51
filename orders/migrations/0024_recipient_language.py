"""A drop's recipient_language as sent (docs/contract.md §26); null: the business's setting.
Nullable: existing drops keep their business's."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0023_runs"),
    ]

    operations = [
        migrations.AddField(
            model_name="drop",
            name="recipient_language",
            field=models.CharField(
                blank=True, choices=[("en", "English"), ("km", "ភាសាខ្មែរ")], max_length=5, null=True
            ),
        ),
    ]
