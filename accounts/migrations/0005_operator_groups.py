"""The operator groups: Operators (day-to-day) and Finance (money), docs/contract.md §16.

The lists are frozen here on purpose: a later change to who may do what is a new migration.
"""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

APPS = ["accounts", "billing", "orders", "geo"]

GROUPS = {
    "Operators": {
        "accounts": [
            "view_business",
            "change_business",
            "approve_business",
            "enable_live_business",
            "suspend_business",
            "view_membership",
            "view_apikey",
            "revoke_apikey",
        ],
        "billing": [
            "view_pricingplan",
            "add_pricingplan",
            "change_pricingplan",
            "view_wallet",
            "view_ledgerentry",
            "view_invoice",
            "view_invoiceline",
        ],
        "orders": [
            "view_batch",
            "view_idempotencyrecord",
            "view_order",
            "view_drop",
            "view_deliveryevent",
            "dispatch_drop",
            "cancel_drop",
            "view_driver",
            "add_driver",
            "change_driver",
        ],
        "geo": [
            "view_servicearea",
            "add_servicearea",
            "change_servicearea",
            "view_openinghours",
            "add_openinghours",
            "change_openinghours",
            "delete_openinghours",
            "view_place",
            "add_place",
            "change_place",
            "delete_place",
            "view_geocoderesult",
        ],
    },
    "Finance": {
        "accounts": ["view_business"],
        "billing": [
            "view_pricingplan",
            "view_wallet",
            "adjust_wallet",
            "view_ledgerentry",
            "view_invoice",
            "view_invoiceline",
            "issue_invoice",
            "mark_invoice_paid",
        ],
    },
}


def create_groups(apps, schema_editor):
    using = schema_editor.connection.alias
    # Django makes permissions in post_migrate, after every migration of this run: on a fresh
    # database none exist yet, so make the ones these groups need now.
    for label in APPS:
        create_permissions(global_apps.get_app_config(label), apps=apps, verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, by_app in GROUPS.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        for app_label, codenames in by_app.items():
            found = list(
                Permission.objects.using(using).filter(
                    content_type__app_label=app_label, codename__in=codenames
                )
            )
            missing = set(codenames) - {p.codename for p in found}
            if missing:  # a typo here must fail the migration, not quietly grant less
                raise LookupError(f"{app_label} has no permission {sorted(missing)}")
            group.permissions.add(*found)


def remove_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("accounts", "0004_operator_permissions"),
        ("billing", "0002_operator_permissions"),
        ("orders", "0005_operator_permissions"),
        ("geo", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
