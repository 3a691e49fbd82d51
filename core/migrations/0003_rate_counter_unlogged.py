"""The rate counters need no WAL (docs/decisions.md, "Rate counters live in an unlogged
table, or in Redis").

Every API call counts one hit, in a statement that commits on its own. On a logged table
that commit waits for the WAL to reach the disk (and, with a synchronous standby, the
standby): a flush per call for a number that only matters for the next minute. An unlogged
table is not written to the WAL, so its commits wait for nothing. What that gives up: after
a crash or a failover the table is empty, so every key starts a fresh window. Counters are
read on the primary only (core/replica.py: core is not a lag-tolerant app), where an
unlogged table lives. SQLite has no such thing: nothing to do there.
"""

from django.db import migrations


def set_persistence(persistence: str):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE core_rate_counter SET {persistence}")

    return run


class Migration(migrations.Migration):
    dependencies = [("core", "0002_periodic_slot")]

    operations = [
        migrations.RunPython(set_persistence("UNLOGGED"), set_persistence("LOGGED")),
    ]
