"""Offers of several orders (docs/contract.md §21): an offer's rows share a bundle, its lead
holds the new stop order. Every existing offer is a bundle of its own order, its own lead."""

from django.db import migrations, models
from django.db.models import F, Q


def own_bundles(apps, schema_editor):
    apps.get_model("dispatch", "Offer").objects.update(bundle=F("id"))


class Migration(migrations.Migration):
    dependencies = [
        ("dispatch", "0003_offer_taken_back"),
    ]

    operations = [
        migrations.AddField(
            model_name="offer",
            name="bundle",
            field=models.UUIDField(null=True),
        ),
        migrations.RunPython(own_bundles, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="offer",
            name="bundle",
            field=models.UUIDField(db_index=True),
        ),
        migrations.AddField(
            model_name="offer",
            name="lead",
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.AddField(
            model_name="offer",
            name="stops",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="offer",
            name="extra_seconds",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.RemoveConstraint(model_name="offer", name="offer_one_open_per_courier"),
        migrations.AddConstraint(
            model_name="offer",
            constraint=models.UniqueConstraint(
                condition=Q(("lead", True), ("status", "offered")),
                fields=("courier",),
                name="offer_one_open_per_courier",
            ),
        ),
    ]
