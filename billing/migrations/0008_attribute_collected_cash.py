"""Cash collected before the courier cash ledger (docs/contract.md §23) is attributed: each COD
COLLECTED entry names the courier who delivered its drop (the drop's order's driver), and
that courier's cash account gets the same COLLECTED, in hand until handed over. Entries whose
order has no driver go to the environment's unattributed account, which the cash desk shows.
"""

from decimal import Decimal

from django.db import migrations
from django.db.models import OuterRef, Subquery


def attribute(apps, schema_editor) -> None:
    CodEntry = apps.get_model("billing", "CodEntry")
    Drop = apps.get_model("orders", "Drop")
    Account = apps.get_model("billing", "CourierCashAccount")
    Entry = apps.get_model("billing", "CourierCashEntry")
    collected = CodEntry.objects.filter(kind="COLLECTED")
    collected.filter(courier__isnull=True).update(
        courier_id=Subquery(
            Drop.objects.filter(pk=OuterRef("drop_id")).values("order__driver_id")[:1]
        )
    )
    done = Entry.objects.filter(kind="COLLECTED").values("drop_id")
    pending = collected.exclude(drop_id__in=done).select_related("account", "drop")
    pending = pending.order_by("id")
    accounts: dict[tuple, object] = {}
    rows = []
    for entry in pending.iterator():
        key = (entry.courier_id, entry.account.environment, entry.drop.currency)
        if key not in accounts:
            accounts[key], _ = Account.objects.get_or_create(
                courier_id=key[0], environment=key[1], currency=key[2]
            )
        account = accounts[key]
        account.in_hand += entry.amount
        account.collected_total += entry.amount
        rows.append(
            Entry(
                account=account,
                kind="COLLECTED",
                amount=entry.amount,
                in_hand_after=account.in_hand,
                drop_id=entry.drop_id,
                created_at=entry.created_at,
            )
        )
    Entry.objects.bulk_create(rows, batch_size=1000)
    for account in accounts.values():
        account.save(update_fields=["in_hand", "collected_total"])
    assert all(a.in_hand >= Decimal("0.00") for a in accounts.values())


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0007_courier_cash"),
    ]

    operations = [
        migrations.RunPython(attribute, migrations.RunPython.noop),
    ]
