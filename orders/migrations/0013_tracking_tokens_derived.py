"""Tracking tokens are derived from the drop's id (orders/links.py), no longer stored.

The tokens stored so far move to `LegacyTrackingToken`, so every link already sent keeps
opening its page; the drops lose the column and its unique index. Reversed, every
drop gets a stored token again: the one it had where there was one, else the derived one
its links show now, so no link breaks either way.
"""

import django.db.models.deletion
from django.db import migrations, models

import orders.links


def keep_stored_tokens(apps, schema_editor):
    # One statement, whatever the number of drops; the same SQL on PostgreSQL and SQLite.
    schema_editor.execute(
        "INSERT INTO orders_legacytrackingtoken (token, drop_id)"
        " SELECT tracking_token, id FROM orders_drop WHERE tracking_token IS NOT NULL"
    )


def store_tokens_again(apps, schema_editor):
    Drop = apps.get_model("orders", "Drop")
    Legacy = apps.get_model("orders", "LegacyTrackingToken")
    stored = dict(Legacy.objects.values_list("drop_id", "token"))
    ids = list(Drop.objects.order_by().values_list("pk", flat=True))
    for start in range(0, len(ids), 5000):
        chunk = ids[start : start + 5000]
        derived = orders.links.tracking_tokens([str(pk) for pk in chunk])
        drops = [
            Drop(pk=pk, tracking_token=stored.get(pk, token))
            for pk, token in zip(chunk, derived, strict=True)
        ]
        Drop.objects.bulk_update(drops, ["tracking_token"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0012_owner_checks_planned_per_statement"),
    ]

    operations = [
        migrations.CreateModel(
            name="LegacyTrackingToken",
            fields=[
                ("token", models.CharField(max_length=32, primary_key=True, serialize=False)),
                (
                    "drop",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="orders.drop",
                    ),
                ),
            ],
        ),
        migrations.RemoveConstraint(
            model_name="drop",
            name="drop_tracking_token_once",
        ),
        # Nullable first, so that reversed the column comes back empty and is filled
        # (store_tokens_again) before it is required and unique again.
        migrations.AlterField(
            model_name="drop",
            name="tracking_token",
            field=models.CharField(max_length=32, null=True),
        ),
        migrations.RunPython(keep_stored_tokens, store_tokens_again),
        migrations.RemoveField(
            model_name="drop",
            name="tracking_token",
        ),
    ]
