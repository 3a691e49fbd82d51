"""make ha-test's own invariants (bench/ha.py check_ha, docs/scaling.md) read the database as
it is: each passes on a run that kept it and fails on the breach it names. The breaches
(a batch answered 200 and lost, a batch billed by no ledger entry, two primaries, a
failover that never finished) are written here by hand, as a good failover never makes
them. The failover itself is proven by the short failover run (test_ha_short.py, marked
slow) and by `make ha-test`."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from django.db import connection

from bench.ha import check_ha
from billing.models import LedgerEntry
from tests.dispatch.conftest import live_order, shop  # noqa: F401 (fixture)

STORED = "every batch answered 200 is stored, with its ledger entry"
FAILED_OVER = "1 failover(s), the lost nodes back as standbys"
HEALTHY = {"node1": ("secondary", "secondary"), "node2": ("primary", "primary")}


class Db:
    """The test's connection, read as bench/ha.py reads its psycopg one."""

    def execute(self, sql: str, params=None):
        cursor = connection.cursor()
        cursor.execute(sql, params)
        return cursor


def checks(batch_ids, states=HEALTHY, error=None) -> dict[str, tuple[bool, str]]:
    cluster = SimpleNamespace(db=Db(), formation=SimpleNamespace(states=lambda: states))
    phase = SimpleNamespace(records={"keys": {str(uuid.uuid4()): [b] for b in batch_ids}})
    failovers = SimpleNamespace(fractions=[0.3], runs=[] if error else [{}], error=error)
    return {name: (ok, detail) for name, ok, detail in check_ha(cluster, phase, failovers)}


def test_a_run_that_kept_them_passes(api, shop):  # noqa: F811
    order = live_order(api, shop)
    results = checks([str(order.batch_id)])
    assert results[STORED][0], results[STORED]
    assert results[FAILED_OVER][0], results[FAILED_OVER]


def test_a_batch_answered_200_and_lost_fails(api, shop):  # noqa: F811
    order = live_order(api, shop)
    ok, detail = checks([str(order.batch_id), str(uuid.uuid4())])[STORED]
    assert not ok
    assert "2 batch ids answered 200, 1 in the database" in detail


def test_a_batch_with_drops_and_no_ledger_entry_fails(api, shop):  # noqa: F811
    order = live_order(api, shop)
    LedgerEntry.objects.filter(batch_id=order.batch_id).delete()
    ok, detail = checks([str(order.batch_id)])[STORED]
    assert not ok
    assert "1 with accepted drops and no ledger entry" in detail


def test_two_primaries_or_an_unfinished_failover_fail(api, shop):  # noqa: F811
    order = live_order(api, shop)
    both = {"node1": ("primary", "primary"), "node2": ("wait_primary", "wait_primary")}
    assert not checks([str(order.batch_id)], states=both)[FAILED_OVER][0]
    ok, detail = checks([str(order.batch_id)], error="BenchError: no write passed")[FAILED_OVER]
    assert not ok
    assert "no write passed" in detail
