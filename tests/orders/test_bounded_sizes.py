"""Every answer has a bounded size (docs/api.md, Limits): the worst drop the API accepts (every
text at its maximum, in the character JSON writes longest) makes entries, pages, tracking
answers, events and webhook bodies no larger than the bounds the guide states.

An address was once unbounded: 50 drops of 18,000 address fields each made one page of
GET /orders answer 461 MB.
"""

from __future__ import annotations

import uuid

import orjson
import pytest
from django.conf import settings

from events.models import Event, EventType
from events.tasks import send_due_deliveries_of
from orders.inputs import (
    MAX_ADDRESS_CHARS,
    MAX_ADDRESS_FIELDS,
    MAX_ID,
    MAX_NAME,
    MAX_WAYBILL,
)
from orders.models import Drop, DropStatus, Quote
from tests.dashboard.test_csv_upload import csv_bytes, order_row, page_of, upload
from tests.events.webhooks import make_endpoint
from tests.factories import DriverFactory, batch, drop, group
from tests.helpers import assert_error, assert_nothing_stored
from tests.webhook_receiver import start_receiver, webhook_receiver
from tracking.lifecycle import Outcome, along_happy_path, apply_moves

__all__ = ["start_receiver", "webhook_receiver"]  # fixtures

# The bounds docs/api.md states (Limits), in bytes of the JSON sent.
KIB, MIB = 1024, 1024 * 1024
ENTRY_BYTES = 20 * KIB  # a tracking entry: in a listing, a tracking answer, an event's data
EVENT_BYTES = 20 * KIB  # an event, in GET /events and as a webhook's body
RESULT_BYTES = 2560  # one drop's result in a batch's answer
PAGE_BYTES = 10 * MIB  # GET /orders and GET /events at 500 a page
TRACKING_BYTES = 20 * MIB  # POST /orders/tracking of 1000 identifiers
ENVELOPE_BYTES = 1000  # the envelope and paging around a list

# JSON writes a control character as \u0001: six bytes for one character of input.
W = "\x01"


def longest(length: int, tag: str = "") -> str:
    return tag + W * (length - len(tag))


def worst_address() -> dict[str, str]:
    """20 fields sharing the 1000 characters: the most JSON for an allowed address."""
    share = MAX_ADDRESS_CHARS // MAX_ADDRESS_FIELDS // 2
    return {longest(share, f"{i:02}"): longest(share) for i in range(MAX_ADDRESS_FIELDS)}


def worst_batch(tag: str, drops: int, *, scheduled_at: str) -> dict:
    return batch(
        group(
            *[
                drop(
                    longest(MAX_ID, f"{tag}-{i}-"),
                    waybill=longest(MAX_WAYBILL),
                    name=longest(MAX_NAME),
                    address=worst_address(),
                )
                for i in range(drops)
            ],
            name=longest(MAX_NAME),
            address=worst_address(),
            pickup_scheduled_at=scheduled_at,
        ),
        client_batch_id=longest(MAX_ID, tag),
    )


@pytest.fixture
def rich(make_tenant):
    return make_tenant(name="Rich Shop", live_balance="100.00", sandbox_balance="100000.00")


def size(value) -> int:
    return len(orjson.dumps(value))


@pytest.mark.django_db(transaction=True)  # the webhook is sent after the move commits
def test_the_worst_allowed_drops_stay_within_the_stated_sizes(
    open_for_business, rich, api, settings, webhook_receiver
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # the receiver listens on loopback
    page, tracked = 500, settings.MAX_TRACKING_IDENTIFIERS
    answers = [send_worst_batch(api, rich, tag, tracked // 2) for tag in ("A", "B")]
    walk_every_drop_to_delivered(rich, webhook_receiver)

    sizes = {
        "result": [size(result) for answer in answers for result in answer["orders"]],
        "batch": [
            len(api.get(f"/batches/{answer['batch_id']}", rich.sandbox_key).content)
            for answer in answers
        ],
    }
    listing = api.get(f"/orders?limit={page}", rich.sandbox_key)
    assert len(listing.json()["data"]["orders"]) == page
    identifiers = list(Drop.objects.values_list("client_order_id", flat=True))
    tracking = api.track(identifiers, rich.sandbox_key)
    assert len(tracking.json()["data"]["orders"]) == tracked
    entries = listing.json()["data"]["orders"] + tracking.json()["data"]["orders"]
    sizes |= {
        "listing": [len(listing.content)],
        "tracking": [len(tracking.content)],
        "entry": [size(entry) for entry in entries],
    }
    # The last 500 events (the drops' last moves: the largest), and the webhook's body.
    after = Event.objects.filter(business=rich.business).order_by("-seq")[page].public_id
    listed = api.get(f"/events?limit={page}&after={after}", rich.sandbox_key)
    assert len(listed.json()["data"]["events"]) == page
    webhooks = webhook_receiver.received
    assert all(webhook.verified for webhook in webhooks)
    assert DropStatus.DELIVERED in {webhook.json["data"]["status"] for webhook in webhooks}
    sizes |= {
        "events": [len(listed.content)],
        "event": [size(event) for event in listed.json()["data"]["events"]],
        "webhook": [len(webhook.body.encode()) for webhook in webhooks],
    }

    largest = {name: max(values) for name, values in sizes.items()}
    print(largest)  # with -s: how close the worst comes to each bound
    assert largest["entry"] <= ENTRY_BYTES
    assert largest["event"] <= EVENT_BYTES
    assert largest["webhook"] <= EVENT_BYTES
    assert largest["result"] <= RESULT_BYTES
    assert largest["batch"] <= tracked // 2 * RESULT_BYTES + ENVELOPE_BYTES
    assert largest["listing"] <= page * ENTRY_BYTES + ENVELOPE_BYTES <= PAGE_BYTES
    assert largest["events"] <= page * EVENT_BYTES + ENVELOPE_BYTES <= PAGE_BYTES
    assert largest["tracking"] <= tracked * ENTRY_BYTES + ENVELOPE_BYTES <= TRACKING_BYTES


def send_worst_batch(api, tenant, tag: str, drops: int) -> dict:
    """A batch of worst drops, scheduled in an hour (so each starts SCHEDULED): its answer.
    1000 of them are more than one body may carry, so tests send two."""
    body = orjson.dumps(worst_batch(tag, drops, scheduled_at="2026-11-23T04:00:00Z"))
    assert len(body) <= settings.MAX_BODY_BYTES
    key = {"Idempotency-Key": str(uuid.uuid4())}
    response = api.post("/orders/bulk", body, tenant.sandbox_key, key, raw=True)
    assert response.status_code == 200, response.content[:2000]
    answer = response.json()["data"]
    assert answer["counts"]["accepted"] == drops
    return answer


def walk_every_drop_to_delivered(tenant, receiver) -> None:
    """Every status a drop passes through, with the longest driver and proof texts; the
    last drop's delivery also goes to a webhook endpoint made just before it (the worst event)."""
    drop_ids = list(Drop.objects.values_list("pk", flat=True))
    walk = {
        "steps": along_happy_path(DropStatus.DELIVERED),
        "actor": "operator@example.com",
        "driver": DriverFactory(name=longest(200), phone=longest(20)),
        "outcome": Outcome(photo=longest(100, "proof/"), received_by=longest(200)),
    }
    apply_moves(drop_ids=drop_ids[:-1], **walk)
    endpoint = make_endpoint(tenant, receiver.url(), types=(EventType.ORDER_STATUS_CHANGED,))
    receiver.trust(endpoint.secret)
    apply_moves(drop_ids=drop_ids[-1:], **walk)
    assert send_due_deliveries_of(endpoint.pk) == 4  # SCHEDULED → ... → DELIVERED


# --- every over-limit address is a 400 naming its path -----------------------------------------

BAD_NAME = "Field names must be 1 to 50 characters, without NUL."
OVER_LIMIT = {
    "21 fields": ({f"f{i}": "x" for i in range(21)}, "", "At most 20 fields; got 21."),
    "18,000 fields": ({f"f{i}": "x" for i in range(18_000)}, "", "At most 20 fields; got 18000."),
    "a 51-character name": ({"n" * 51: "x", "city": "Phnom Penh"}, "", BAD_NAME),
    "an empty name": ({"": "x"}, "", BAD_NAME),
    "a 501-character value": (
        {"city": "x" * 501},
        ".city",
        "Must be a string of at most 500 characters without NUL.",
    ),
    "1001 characters in all": (
        {"a": "x" * 500, "b": "x" * 499},
        "",
        "At most 1000 characters in all; got 1001.",
    ),
}
WHERE = {
    "pickup": ("orders[1].pickup.address", lambda address: group(drop(), address=address)),
    "drop": (
        "orders[1].dropoff[3].dropoff.address",
        lambda address: group(drop(), drop(), drop(), drop(address=address)),
    ),
}


@pytest.mark.parametrize("endpoint", ["/orders/bulk", "/orders/quote"])
@pytest.mark.parametrize("where", list(WHERE))
@pytest.mark.parametrize(("address", "suffix", "message"), OVER_LIMIT.values(), ids=OVER_LIMIT)
def test_an_address_over_a_limit_is_a_400_naming_its_path(
    open_for_business, alice, api, endpoint, where, address, suffix, message
):
    path, placed = WHERE[where]
    body = batch(group(drop()), placed(address))
    headers = {"Idempotency-Key": str(uuid.uuid4())}

    response = api.post(endpoint, body, alice.sandbox_key, headers)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"] == [{"field": path + suffix, "message": message}]
    assert len(response.content) < 1000
    assert_nothing_stored()
    assert not Quote.objects.exists()


def test_an_address_at_every_limit_is_stored_whole(open_for_business, alice, api):
    at_limits = worst_address()  # 20 fields, 1000 characters
    long_name = {"n" * 50: "x" * 500, "city": "Phnom Penh"}
    body = batch(group(drop("AT-1", address=at_limits), drop("AT-2", address=long_name)))

    response = api.bulk(body, alice.sandbox_key)

    assert response.status_code == 200, response.content[:500]
    assert response.json()["data"]["counts"]["accepted"] == 2
    assert Drop.objects.get(client_order_id="AT-1").address == at_limits
    assert Drop.objects.get(client_order_id="AT-2").address == long_name


def test_a_csv_row_over_the_address_limit_names_its_row_and_column(
    open_for_business, alice, alice_web
):
    data = csv_bytes(
        order_row("CSV-1"),
        order_row("CSV-2", dropoff_address="a" * 500, dropoff_city="c" * 500),
    )

    response = upload(alice_web, data)

    assert response.status_code == 400
    assert "Row 3, column dropoff_address: At most 1000 characters in all; got 1020." in (
        page_of(response)
    )
    assert not Drop.objects.exists()
