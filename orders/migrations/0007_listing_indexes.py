"""The indexes GET /orders and /batches page through (tracking/listing.py, orders/selectors)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_low_balance_threshold"),
        ("orders", "0006_quotes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="drop",
            index=models.Index(
                fields=["business", "environment", "status", "created_at", "id"],
                name="drop_listing_by_created",
            ),
        ),
        migrations.AddIndex(
            model_name="drop",
            index=models.Index(
                fields=["business", "environment", "status", "updated_at", "id"],
                name="drop_listing_by_updated",
            ),
        ),
        migrations.AddIndex(
            model_name="batch",
            index=models.Index(
                fields=["business", "environment", "created_at", "id"], name="batch_listing"
            ),
        ),
    ]
