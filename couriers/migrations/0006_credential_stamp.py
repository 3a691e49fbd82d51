"""Credentials end with a password change or deactivation: a courier's credential version,
and the stamp each token carries. Tokens issued before get the stamp their courier has now
(the same value the app's sessions already carry), so no phone is signed out by this step."""

from django.db import migrations, models
from django.utils.crypto import salted_hmac


def stamp_issued_tokens(apps, schema_editor):
    CourierToken = apps.get_model("couriers", "CourierToken")
    tokens = CourierToken.objects.using(schema_editor.connection.alias).select_related("courier")
    for token in tokens.filter(stamp=""):
        # The stamp at credential version 0, as couriers.services.credential_stamp makes it.
        token.stamp = salted_hmac("courier_app.session", token.courier.password).hexdigest()
        token.save(update_fields=["stamp"])


class Migration(migrations.Migration):
    dependencies = [
        ("couriers", "0005_driver_from_orders"),
    ]

    operations = [
        migrations.AddField(
            model_name="driver",
            name="credential_version",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="couriertoken",
            name="stamp",
            field=models.CharField(db_default="", default="", max_length=64),
        ),
        migrations.RunPython(stamp_issued_tokens, migrations.RunPython.noop, elidable=True),
    ]
