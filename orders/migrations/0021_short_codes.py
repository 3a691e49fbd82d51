"""Every drop gets a short code (docs/contract.md §24), unique per environment.

Adding the column with its database default gives each existing drop its own random code in
the same statement (a volatile default is evaluated per row), so the backfill is set-based.
Before the unique index goes on, any code two drops of one environment happen to share is
drawn afresh, one statement per round, until none is (48 random bits: almost never a round).
"""

from django.db import migrations, models

import orders.short_codes

# The drops of an environment whose code an earlier one (by id) already has.
_REPEATS = """
    UPDATE orders_drop SET short_code = {new_code} WHERE id IN (
        SELECT id FROM (
            SELECT id, row_number() OVER (PARTITION BY environment, short_code ORDER BY id) AS n
            FROM orders_drop
        ) AS coded WHERE coded.n > 1
    )
"""
_NEW_CODE = {
    "postgresql": "upper(substr(md5(gen_random_uuid()::text), 1, 12))",
    "sqlite": "upper(hex(randomblob(6)))",
}


def draw_repeats_afresh(apps, schema_editor):
    sql = _REPEATS.format(new_code=_NEW_CODE[schema_editor.connection.vendor])
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(sql)
        while cursor.rowcount:
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_low_balance_threshold"),
        ("orders", "0020_driver_to_couriers"),
    ]

    operations = [
        migrations.AddField(
            model_name="drop",
            name="short_code",
            field=models.CharField(
                db_default=orders.short_codes.NewShortCode(), editable=False, max_length=12
            ),
        ),
        migrations.RunPython(draw_repeats_afresh, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="drop",
            constraint=models.UniqueConstraint(
                fields=("short_code", "environment"), name="drop_short_code_once"
            ),
        ),
    ]
