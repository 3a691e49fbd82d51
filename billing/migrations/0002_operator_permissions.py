from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("billing", "0001_initial")]

    operations = [
        migrations.AlterModelOptions(
            name="wallet",
            options={"permissions": [("adjust_wallet", "Can top up and adjust a wallet")]},
        ),
        migrations.AlterModelOptions(
            name="invoice",
            options={
                "ordering": ["-period"],
                "permissions": [
                    ("issue_invoice", "Can issue invoices of ended months"),
                    ("mark_invoice_paid", "Can mark invoices paid"),
                ],
            },
        ),
    ]
