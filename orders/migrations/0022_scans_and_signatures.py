"""A drop may ask for the label's code to be scanned and for the recipient's signature
(docs/contract.md §24): two flags (false for every existing drop, written with the column's
database default) and the stored signature beside the delivery photo."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0021_short_codes"),
    ]

    operations = [
        migrations.AddField(
            model_name="drop",
            name="needs_scan",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="drop",
            name="needs_signature",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="drop",
            name="pod_signature",
            field=models.FileField(
                blank=True,
                null=True,
                upload_to="proof/%Y/%m/",
                verbose_name="delivery signature",
            ),
        ),
        migrations.AlterField(
            model_name="drop",
            name="pod_method",
            field=models.CharField(
                blank=True,
                choices=[
                    ("pin", "PIN"),
                    ("photo", "Photo"),
                    ("signature", "Signature"),
                    ("none", "None"),
                ],
                max_length=9,
                null=True,
                verbose_name="proof of delivery",
            ),
        ),
    ]
