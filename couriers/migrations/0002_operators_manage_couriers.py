"""Who may create couriers (orders.Driver) and set their passwords: Operators, in admin.
Frozen here on purpose, like fleet 0002: a later change is a new migration."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUPS = {
    "Operators": ["view_driver", "add_driver", "change_driver", "manage_courier"],
}


def grant(apps, schema_editor):
    using = schema_editor.connection.alias
    # Django makes permissions in post_migrate: on a fresh database none exist yet.
    create_permissions(global_apps.get_app_config("orders"), apps=apps, verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        found = list(
            Permission.objects.using(using).filter(
                content_type__app_label="orders", codename__in=codenames
            )
        )
        if len(found) != len(codenames):  # a typo must fail the migration
            raise LookupError(f"orders has no permission among {codenames}")
        group.permissions.add(*found)


class Migration(migrations.Migration):
    dependencies = [
        ("couriers", "0001_couriers"),
        ("orders", "0017_couriers"),
        ("accounts", "0005_operator_groups"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
