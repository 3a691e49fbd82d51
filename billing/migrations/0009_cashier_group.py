"""The Cashier group: who records couriers' cash hand-overs at the hub (docs/contract.md §23);
Operators and Finance see the cash desk. Frozen here, like accounts 0005: a later change is a
new migration."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

SEE = ["view_couriercashaccount", "view_couriercashentry", "view_hubcashentry"]
GROUPS = {
    "Cashier": [*SEE, "record_hand_over"],
    "Operators": SEE,
    "Finance": SEE,
}


def grant(apps, schema_editor):
    using = schema_editor.connection.alias
    # Django makes permissions in post_migrate: on a fresh database none exist yet.
    create_permissions(global_apps.get_app_config("billing"), apps=apps, verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        found = list(
            Permission.objects.using(using).filter(
                content_type__app_label="billing", codename__in=codenames
            )
        )
        if len(found) != len(codenames):  # a typo must fail the migration
            raise LookupError(f"billing has no permission among {codenames}")
        group.permissions.add(*found)


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name="Cashier").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_operator_groups"),
        ("billing", "0008_attribute_collected_cash"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
