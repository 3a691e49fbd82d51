"""The embedded default (SQLite, what `make run` uses) runs the same paths as PostgreSQL.

The suite runs on PostgreSQL; this drives the SQLite forms of the set-based code (bulk
inserts, `__any`, IsoZ, UuidText) end to end in a subprocess with its own settings.
"""

from tests.helpers import SCRIPT_WITH_A_TENANT, run_django_script

SCRIPT = (
    SCRIPT_WITH_A_TENANT
    + r"""
import time_machine
from datetime import datetime, UTC
from orders.inputs import parse_batch
from orders.services import create_batch
from tracking.selectors import track_drops
from tracking.services import advance_sandbox_orders, cancel_orders

body = {"client_batch_id": "b1", "orders": [{"pickup": {"name": "Shop", "phone": "+85512345678",
        "lat": 11.5564, "long": 104.9282}, "dropoff": [
        {"client_order_id": "A", "dropoff": {"name": "R", "phone": "+85512345679",
         "address": {"complete_address": "Royal Palace, Phnom Penh"}}},
        {"client_order_id": "B", "dropoff": {"name": "R", "phone": "+85512345679",
         "lat": 11.5696, "long": 104.921}},
        {"client_order_id": "A", "dropoff": {"name": "R", "phone": "+85512345679",
         "lat": 11.5696, "long": 104.921}}]}]}
with time_machine.travel(datetime(2026, 11, 23, 3, 0, 0, 123456, tzinfo=UTC), tick=False):
    out = create_batch(business=tenant.business, environment="sandbox",
                       idempotency_key=uuid.uuid4(), batch=parse_batch(body), base_url="http://x")
    advance_sandbox_orders(business=tenant.business, identifiers=["B"], to="ASSIGNED")
    cancel_orders(business=tenant.business, environment="sandbox", identifiers=["A"], actor="t")
created = json.loads(out.body)["data"]
tracked = track_drops(business=tenant.business, environment="sandbox", identifiers=["A", "B", "Z"])
print(json.dumps({"created": created, "tracked": tracked}))
"""
)


def test_batch_tracking_and_moves_work_on_the_sqlite_default(tmp_path):
    result = run_django_script(SCRIPT, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    created, tracked = result["created"], result["tracked"]

    assert [o["status"] for o in created["orders"]] == ["accepted", "accepted", "rejected"]
    assert created["orders"][2]["failure_reason"] == "DUPLICATE_CLIENT_ORDER_ID"
    a, b, z = tracked
    assert a["drop_id"] == created["orders"][0]["drop_id"]  # canonical text, dashes included
    assert b["pass_order_id"] == created["orders"][1]["pass_order_id"]
    assert b["batch_id"] == created["batch_id"]
    assert a["created_at"] == created["created_at"] == "2026-11-23T03:00:00.123Z"
    assert a["status"] == "CANCELLED"
    assert a["dropoff"]["resolved_pin"] == {"lat": 11.5637, "long": 104.9311}
    # The price as the bulk answer gave it: two decimals, formatted by SQLite (MoneyText).
    assert a["price"] == created["orders"][0]["price"] and a["price"].count(".") == 1
    assert len(a["price"].split(".")[1]) == 2
    assert [e["status"] for e in b["events"]] == ["PENDING", "ASSIGNED"]
    assert all(e["at"] == "2026-11-23T03:00:00.123Z" for e in b["events"])
    assert b["driver"]["name"] == "Sandbox Test Driver"
    assert z == {"client_order_id": "Z", "status": "NOT_FOUND"}
