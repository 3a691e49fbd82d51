"""The operator console's drop page shows the drop's commitments read-only (docs/contract.md
§17): its window, window status, the courier's notes and the undeliverable action."""

from __future__ import annotations

from datetime import UTC, datetime

from django.urls import reverse

from orders.models import Drop, DropStatus
from tests.operators import staff_client
from tests.tracking.helpers import drop_in

START = datetime(2026, 11, 23, 7, 0, tzinfo=UTC)
END = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def test_the_drop_page_shows_the_notes_and_the_window_read_only(open_for_business, make_tenant):
    business = make_tenant().business
    drop = drop_in(DropStatus.PENDING, business=business)
    Drop.objects.filter(pk=drop.pk).update(
        window_start=START,
        window_end=END,
        window_status="on_track",
        notes="Gate code 42, call on arrival",
        undeliverable_action="dispose",
    )
    operator = staff_client("dara", groups=["Operators"])

    page = operator.get(reverse("admin:orders_drop_change", args=[drop.pk]))

    assert page.status_code == 200
    html = page.content.decode()
    assert "Gate code 42, call on arrival" in html
    assert "On track" in html and "Dispose" in html
    assert "14:00" in html and "16:00" in html  # the window, in the service's zone
    assert 'name="notes"' not in html  # shown, not an input
