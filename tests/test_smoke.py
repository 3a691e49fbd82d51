"""The harness itself: PostgreSQL underneath, a batch through the API."""

from django.db import connection

from orders.models import Drop
from tests.factories import batch, drop, group


def test_suite_runs_on_postgresql(db):
    assert connection.vendor == "postgresql"


def test_one_drop_is_accepted_in_business_hours(open_for_business, alice, api):
    response = api.bulk(batch(group(drop("A-1"))), alice.sandbox_key)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["counts"] == {"total": 1, "accepted": 1, "rejected": 0}
    assert Drop.objects.get().client_order_id == "A-1"
