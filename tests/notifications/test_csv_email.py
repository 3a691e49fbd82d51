"""The recipient_email column of a spreadsheet upload reaches the drop, like dropoff.email."""

from __future__ import annotations

import pytest

from orders.models import Drop
from tests.dashboard.test_csv_parcels import order_row, upload

pytestmark = pytest.mark.django_db


def test_the_recipient_email_column_reaches_the_drop(open_for_business, alice, alice_web):
    upload(
        alice_web,
        order_row("E-1", recipient_email="dara@example.com"),
        order_row("E-2"),
    )
    emails = dict(
        Drop.objects.filter(business=alice.business).values_list(
            "client_order_id", "recipient_email"
        )
    )
    assert emails == {"E-1": "dara@example.com", "E-2": None}


def test_a_bad_recipient_email_is_named_by_row_and_column(open_for_business, alice, alice_web):
    page = upload(alice_web, order_row("E-3", recipient_email="dara at example"), status=400)
    assert "Row 2, column recipient_email: Must be one email address" in page
    assert not Drop.objects.exists()
