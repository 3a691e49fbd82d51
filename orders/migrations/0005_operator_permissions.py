from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("orders", "0004_failed_batch_frees_client_batch_id")]

    operations = [
        migrations.AlterModelOptions(
            name="drop",
            options={
                "ordering": ["-created_at"],
                "permissions": [
                    (
                        "dispatch_drop",
                        "Can dispatch drops: assign a driver, picked up, delivered, failed",
                    ),
                    ("cancel_drop", "Can cancel drops (refund or reverse the charge)"),
                ],
            },
        ),
    ]
