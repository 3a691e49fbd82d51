"""The shared cache's table (CACHE_URL's default dbcache://django_cache), wherever migrate runs.

Rate limits and the login throttle count in it, so it must exist before the first request:
in production, under `make run`, and in the test database. With Redis or memcached
configured instead, createcachetable does nothing.
"""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_initial")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
