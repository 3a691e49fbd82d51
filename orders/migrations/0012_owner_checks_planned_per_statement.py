# The ownership triggers of migration 0009 plan their check at every run.
#
# A query in a PL/pgSQL function that takes no parameter is planned once per connection and
# the plan kept. The check's plan was made for the first statement a connection ran: for a
# one-drop batch while the orders table was small, a nested loop that reads every order for
# every drop. Kept, it made a later 100,000-drop COPY read 250 million order rows (31 s,
# where a plan for its size takes well under a second). EXECUTE plans the check for the
# rows at hand, each time (a fraction of a millisecond).

from django.db import migrations

PLANNED_PER_STATEMENT = """
CREATE OR REPLACE FUNCTION drops_belong_to_their_orders() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    stray boolean;
BEGIN
    EXECUTE 'SELECT EXISTS (
        SELECT 1 FROM added AS d
        WHERE NOT EXISTS (
            SELECT 1 FROM orders_order AS o
            WHERE o.id = d.order_id AND o.batch_id = d.batch_id
              AND o.business_id = d.business_id AND o.environment = d.environment
        )
    )' INTO stray;
    IF stray THEN
        RAISE EXCEPTION 'a drop must belong to an order of its batch, business and environment'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'drop_belongs_to_its_order';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orders_with_drops_stay() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    kept boolean;
BEGIN
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM gone JOIN orders_drop AS d ON d.order_id = gone.id)'
        INTO kept;
    IF kept THEN
        RAISE EXCEPTION 'an order with drops cannot be deleted'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'drop_belongs_to_its_order';
    END IF;
    RETURN NULL;
END $$;
"""

PLANNED_ONCE = """
CREATE OR REPLACE FUNCTION drops_belong_to_their_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM added AS d
        WHERE NOT EXISTS (
            SELECT 1 FROM orders_order AS o
            WHERE o.id = d.order_id AND o.batch_id = d.batch_id
              AND o.business_id = d.business_id AND o.environment = d.environment
        )
    ) THEN
        RAISE EXCEPTION 'a drop must belong to an order of its batch, business and environment'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'drop_belongs_to_its_order';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orders_with_drops_stay() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM gone JOIN orders_drop AS d ON d.order_id = gone.id) THEN
        RAISE EXCEPTION 'an order with drops cannot be deleted'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'drop_belongs_to_its_order';
    END IF;
    RETURN NULL;
END $$;
"""


def plan_per_statement(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PLANNED_PER_STATEMENT, params=None)


def plan_once(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PLANNED_ONCE, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0011_drops_found_by_batch_through_orders"),
    ]

    operations = [migrations.RunPython(plan_per_statement, plan_once)]
