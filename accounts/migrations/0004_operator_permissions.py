from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("accounts", "0003_cache_table")]

    operations = [
        migrations.AlterModelOptions(
            name="business",
            options={
                "ordering": ["name"],
                "permissions": [
                    ("approve_business", "Can approve, reject and price a business"),
                    ("enable_live_business", "Can switch a business live"),
                    ("suspend_business", "Can suspend and reactivate a business"),
                ],
                "verbose_name_plural": "businesses",
            },
        ),
        migrations.AlterModelOptions(
            name="apikey",
            options={
                "ordering": ["-created_at"],
                "permissions": [("revoke_apikey", "Can revoke API keys")],
            },
        ),
    ]
