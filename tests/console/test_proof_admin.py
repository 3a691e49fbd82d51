"""Proof of delivery in the operator console (docs/contract.md §14): PINs, photos, failure
reasons."""

from __future__ import annotations

import re

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from events.models import Event, EventType
from orders.models import DeliveryEvent, Drop, DropStatus, FailureReason, Order
from tests.factories import DriverFactory
from tests.operators import staff_client
from tests.tracking.helpers import drop_in, place, statuses_of
from tracking.selectors import entries_by_drop_id
from tracking.services import move_drops_as_operator

pytestmark = pytest.mark.django_db

S = DropStatus
DROPS = "/admin/orders/drop/"
ORDERS = "/admin/orders/order/"
PIN = "4821"
VIEW = ["orders.view_order", "orders.view_drop"]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
WEBP = b"RIFF\x40\x00\x00\x00WEBPVP8 " + b"\x00" * 64


@pytest.fixture
def business(make_tenant):
    return make_tenant(name="Alice Shop").business


@pytest.fixture
def operator():
    return staff_client("operator@example.com", groups=["Operators"])


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def picked_up(business, client_order_id: str, pin: str | None = None) -> Drop:
    drop = drop_in(S.PICKED_UP, business=business, client_order_id=client_order_id)
    if pin is not None:
        Drop.objects.filter(pk=drop.pk).update(dropoff_pin=pin)
    return Drop.objects.get(pk=drop.pk)


def choose(client, changelist: str, action: str, *pks):
    """The first step of an action: ticked rows and the action menu, as the changelist posts."""
    data = {"action": action, "index": "0", "_selected_action": [str(pk) for pk in pks]}
    return client.post(changelist, data)


def confirm(client, changelist: str, action: str, *pks, **fields):
    """The confirmation form posted back (apply=1); returns (response, messages)."""
    data = {"action": action, "apply": "1", "_selected_action": [str(pk) for pk in pks], **fields}
    response = client.post(changelist, data, follow=True)
    assert response.status_code == 200
    return response, [(m.level_tag, str(m)) for m in response.context["messages"]]


def pin_field(drop: Drop) -> str:
    return f"pin_{drop.pk}"


def shows_pin(html: str, pin: str = PIN) -> bool:
    """The PIN as a number of its own (not four hex digits inside a UUID or a token)."""
    return re.search(rf"(?<![\w-]){pin}(?![\w-])", html) is not None


def readonly(html: str, label: str) -> str | None:
    """The value a read-only admin page shows beside `label`."""
    found = re.search(rf"{label}:?</label>\s*<div class=\"readonly\">(.*?)</div>", html, re.S)
    return found and found.group(1)


def refreshed(drop: Drop) -> Drop:
    return Drop.objects.get(pk=drop.pk)


def files_in(folder) -> list:
    return [path for path in folder.rglob("*") if path.is_file()]


# --- mark delivered: the form


def test_mark_delivered_first_asks_for_the_pins_and_moves_nothing(business, operator):
    locked = picked_up(business, "P-1", pin=PIN)
    open_ = picked_up(business, "N-1")

    response = choose(operator, DROPS, "mark_delivered", locked.pk, open_.pk)

    assert response.status_code == 200
    html = response.content.decode()
    assert 'enctype="multipart/form-data"' in html
    [box] = re.findall(r"<input[^>]*name=\"pin_[^\"]+\"[^>]*>", html)
    assert f'name="{pin_field(locked)}"' in box
    assert 'inputmode="numeric"' in box and 'autocomplete="off"' in box
    assert "value=" not in box
    assert "PIN for P-1" in html and "PIN for N-1" not in html
    assert 'name="received_by"' in html and 'name="photo"' in html
    assert not shows_pin(html)
    assert statuses_of(locked.pk) == statuses_of(open_.pk) == [S.PICKED_UP]


def test_the_right_pin_delivers_with_pin_as_the_proof(business, operator):
    drop = picked_up(business, "P-1", pin=PIN)

    _, messages = confirm(
        operator, DROPS, "mark_delivered", drop.pk, **{pin_field(drop): PIN, "received_by": "Dara"}
    )

    assert messages == [("success", "1 drop(s) delivered.")]
    drop = refreshed(drop)
    assert (drop.status, drop.pod_method, drop.pod_received_by) == (S.DELIVERED, "pin", "Dara")
    assert drop.pin_attempts == 0
    delivered = DeliveryEvent.objects.get(drop=drop, status=S.DELIVERED)
    assert delivered.actor == "operator operator@example.com"
    event = Event.objects.get(
        type=EventType.ORDER_STATUS_CHANGED, data__drop_id=str(drop.pk), data__status=S.DELIVERED
    )
    proof = event.data["proof_of_delivery"]
    assert (proof["method"], proof["received_by"], proof["photo_url"]) == ("pin", "Dara", None)
    assert event.data["previous_status"] == S.PICKED_UP


def test_no_pin_is_refused_and_counts_no_attempt(business, operator):
    drop = picked_up(business, "P-1", pin=PIN)

    _, messages = confirm(operator, DROPS, "mark_delivered", drop.pk, **{pin_field(drop): ""})

    assert messages == [("warning", "No PIN entered for P-1: not delivered.")]
    drop = refreshed(drop)
    assert (drop.status, drop.pin_attempts) == (S.PICKED_UP, 0)
    assert statuses_of(drop.pk) == [S.PICKED_UP]


def test_a_wrong_pin_is_refused_and_counted(business, operator):
    drop = picked_up(business, "P-1", pin=PIN)

    _, messages = confirm(operator, DROPS, "mark_delivered", drop.pk, **{pin_field(drop): "1111"})

    assert messages == [("warning", "Wrong PIN for P-1 (1 of 3): not delivered.")]
    drop = refreshed(drop)
    assert (drop.status, drop.pin_attempts) == (S.PICKED_UP, 1)
    assert statuses_of(drop.pk) == [S.PICKED_UP]


def test_the_third_wrong_pin_fails_the_drop_with_wrong_pin(business, operator):
    drop = picked_up(business, "P-1", pin=PIN)

    said = [
        confirm(operator, DROPS, "mark_delivered", drop.pk, **{pin_field(drop): wrong})[1]
        for wrong in ("1111", "2222", "3333")
    ]

    assert said == [
        [("warning", "Wrong PIN for P-1 (1 of 3): not delivered.")],
        [("warning", "Wrong PIN for P-1 (2 of 3): not delivered.")],
        [("error", "P-1 failed: a wrong PIN 3 times (WRONG_PIN).")],
    ]
    assert not any(shows_pin(text) for messages in said for _, text in messages)
    drop = refreshed(drop)
    assert (drop.status, drop.failure_reason, drop.pin_attempts) == (
        S.FAILED,
        FailureReason.WRONG_PIN,
        3,
    )
    assert drop.pod_method is None
    assert entries_by_drop_id([drop.pk])[str(drop.pk)]["failure"]["reason"] == "WRONG_PIN"
    assert statuses_of(drop.pk) == [S.PICKED_UP, S.FAILED]


def test_a_pin_that_is_not_four_digits_is_a_form_error_and_no_attempt(business, operator):
    drop = picked_up(business, "P-1", pin=PIN)

    response, messages = confirm(
        operator, DROPS, "mark_delivered", drop.pk, **{pin_field(drop): "48"}
    )

    assert messages == []
    assert "A PIN is four digits." in response.content.decode()
    assert refreshed(drop).pin_attempts == 0
    assert statuses_of(drop.pk) == [S.PICKED_UP]


def test_the_pin_is_never_in_the_admin_pages(business, operator, media):
    drop = picked_up(business, "P-1", pin=PIN)
    Order.objects.filter(drops=drop).update(driver=DriverFactory())

    change = operator.get(f"{DROPS}{drop.pk}/change/").content.decode()
    order_change = operator.get(f"{ORDERS}{drop.order_id}/change/").content.decode()
    pages = {
        "drop list": operator.get(DROPS).content.decode(),
        "order list": operator.get(ORDERS).content.decode(),
        "drop": change,
        "order": order_change,
        "form": choose(operator, DROPS, "mark_delivered", drop.pk).content.decode(),
        # Shown again after an error, the form forgets even the PIN just typed.
        "form again": confirm(
            operator,
            DROPS,
            "mark_delivered",
            drop.pk,
            **{pin_field(drop): PIN, "photo": SimpleUploadedFile("x.png", b"not an image")},
        )[0].content.decode(),
    }

    assert [name for name, html in pages.items() if shows_pin(html)] == []
    assert (readonly(change, "PIN required"), readonly(change, "Photo")) == ("yes", "-")
    # Nor can a search for it tell which drop has it.
    assert operator.get(DROPS, {"q": PIN}).context["cl"].result_count == 0
    assert refreshed(drop).status == S.PICKED_UP


def test_the_drop_page_shows_the_proof(business, operator, media):
    drop = picked_up(business, "P-1")
    confirm(
        operator,
        DROPS,
        "mark_delivered",
        drop.pk,
        received_by="Dara",
        photo=SimpleUploadedFile("door.png", PNG, content_type="image/png"),
    )

    html = operator.get(f"{DROPS}{drop.pk}/change/").content.decode()

    shown = {
        label: readonly(html, label)
        for label in [
            "PIN required",
            "Wrong PIN attempts",
            "Proof of delivery",
            "Received by",
            "Failure reason",
            "Sandbox scenario",
        ]
    }
    assert shown == {
        "PIN required": "no",
        "Wrong PIN attempts": "0",
        "Proof of delivery": "Photo",
        "Received by": "Dara",
        "Failure reason": "-",
        "Sandbox scenario": "-",
    }
    assert re.fullmatch(r'<a href="http[^"]*/pod/[^"]+"[^>]*>photo</a>.*', readonly(html, "Photo"))
    assert "proof/" not in html  # the stored file's name or media URL is never linked


# --- photos


@pytest.mark.parametrize(
    ("name", "content", "extension"),
    [
        ("door.png", PNG, "png"),
        ("door.jpeg", JPEG, "jpg"),
        ("door.webp", WEBP, "webp"),
    ],
)
def test_a_photo_proves_a_drop_without_pin(business, operator, media, name, content, extension):
    drop = picked_up(business, "N-1")

    _, messages = confirm(
        operator,
        DROPS,
        "mark_delivered",
        drop.pk,
        photo=SimpleUploadedFile(name, content, content_type="application/octet-stream"),
    )

    assert messages == [("success", "1 drop(s) delivered.")]
    drop = refreshed(drop)
    assert (drop.status, drop.pod_method, drop.pod_received_by) == (S.DELIVERED, "photo", None)
    assert drop.pod_photo.name.endswith(f".{extension}")
    assert name not in drop.pod_photo.name  # stored under a name of ours
    assert default_storage.open(drop.pod_photo.name).read() == content
    assert [path.read_bytes() for path in files_in(media)] == [content]
    proof = entries_by_drop_id([drop.pk])[str(drop.pk)]["proof_of_delivery"]
    assert proof["method"] == "photo"
    assert "/pod/" in proof["photo_url"]


def test_a_pin_drop_with_a_photo_keeps_pin_as_its_method(business, operator, media):
    drop = picked_up(business, "P-1", pin=PIN)

    confirm(
        operator,
        DROPS,
        "mark_delivered",
        drop.pk,
        **{pin_field(drop): PIN, "photo": SimpleUploadedFile("a.png", PNG)},
    )

    drop = refreshed(drop)
    assert (drop.status, drop.pod_method) == (S.DELIVERED, "pin")
    assert drop.pod_photo
    assert entries_by_drop_id([drop.pk])[str(drop.pk)]["proof_of_delivery"]["photo_url"]


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"%PDF-1.7 a document", "The photo must be a PNG, JPEG or WebP image."),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "The photo must be a PNG, JPEG or WebP"),
        (b"RIFF\x40\x00\x00\x00WAVEfmt ", "The photo must be a PNG, JPEG or WebP image."),
        (PNG + b"\x00" * (5 * 1024 * 1024), "The photo is larger than 5 MB."),
    ],
    ids=["pdf", "svg", "wav", "too-large"],
)
def test_an_upload_that_is_not_a_small_image_is_a_form_error_and_moves_nothing(
    business, operator, media, content, error
):
    drop = picked_up(business, "N-1")
    upload = SimpleUploadedFile("door.png", content, content_type="image/png")

    response, messages = confirm(operator, DROPS, "mark_delivered", drop.pk, photo=upload)

    assert messages == []
    assert error in response.content.decode()
    assert "nothing was moved" in response.content.decode()
    assert statuses_of(drop.pk) == [S.PICKED_UP]
    assert refreshed(drop).status == S.PICKED_UP
    assert files_in(media) == []


def test_a_photo_is_not_kept_when_nothing_was_delivered(business, operator, media):
    drop = picked_up(business, "P-1", pin=PIN)

    confirm(
        operator,
        DROPS,
        "mark_delivered",
        drop.pk,
        **{pin_field(drop): "1111", "photo": SimpleUploadedFile("a.png", PNG)},
    )

    assert refreshed(drop).status == S.PICKED_UP
    assert files_in(media) == []


# --- selections of several drops, and orders


def test_an_order_delivers_its_drops_each_by_its_own_pin(open_for_business, alice, api, operator):
    ids = place(api, alice.live_key, "O-1", "O-2", "O-3")
    move_drops_as_operator(
        drop_ids=list(ids.values()), to=S.ASSIGNED, actor="test", driver=DriverFactory()
    )
    move_drops_as_operator(drop_ids=list(ids.values()), to=S.PICKED_UP, actor="test")
    Drop.objects.filter(pk=ids["O-1"]).update(dropoff_pin=PIN)
    Drop.objects.filter(pk=ids["O-2"]).update(dropoff_pin="0000")
    order = Order.objects.get(drops__pk=ids["O-1"])

    html = choose(operator, ORDERS, "mark_delivered", order.pk).content.decode()
    assert "PIN for O-1" in html and "PIN for O-2" in html and "PIN for O-3" not in html
    _, messages = confirm(
        operator, ORDERS, "mark_delivered", order.pk, **{f"pin_{ids['O-1']}": PIN}
    )

    assert messages == [
        ("success", "2 drop(s) delivered."),
        ("warning", "No PIN entered for O-2: not delivered."),
    ]
    status = dict(Drop.objects.filter(pk__in=ids.values()).values_list("client_order_id", "status"))
    assert status == {"O-1": S.DELIVERED, "O-2": S.PICKED_UP, "O-3": S.DELIVERED}
    methods = dict(
        Drop.objects.filter(status=S.DELIVERED).values_list("client_order_id", "pod_method")
    )
    assert methods == {"O-1": "pin", "O-3": "none"}


def test_drops_not_picked_up_are_named_on_the_form_and_refused(business, operator):
    ready = picked_up(business, "P-1")
    waiting = drop_in(S.PENDING, business=business, client_order_id="W-1")

    html = choose(operator, DROPS, "mark_delivered", ready.pk, waiting.pk).content.decode()
    assert "W-1 (PENDING)" in html
    _, messages = confirm(operator, DROPS, "mark_delivered", ready.pk, waiting.pk)

    assert messages == [
        ("success", "1 drop(s) delivered."),
        ("warning", "1 drop(s) refused: illegal from PENDING."),
    ]
    assert refreshed(waiting).status == S.PENDING


@pytest.mark.parametrize("action", ["mark_delivered", "mark_failed"])
def test_nothing_picked_up_is_refused_without_a_form(business, operator, action):
    waiting = drop_in(S.ASSIGNED, business=business, client_order_id="W-1")

    response = choose(operator, DROPS, action, waiting.pk)

    assert response.status_code == 302
    messages = [str(m) for m in operator.get(DROPS).context["messages"]]
    assert messages == ["1 drop(s) refused: illegal from ASSIGNED."]
    assert statuses_of(waiting.pk) == [S.ASSIGNED]


# --- mark failed


def test_mark_failed_asks_for_a_reason_an_operator_may_give(business, operator):
    drop = picked_up(business, "P-1")

    response = choose(operator, DROPS, "mark_failed", drop.pk)

    assert response.status_code == 200
    options = re.findall(r'<option value="([A-Z_]*)"', response.content.decode())
    assert options == ["", "RECIPIENT_UNAVAILABLE", "ADDRESS_NOT_FOUND", "REFUSED", "OTHER"]
    assert statuses_of(drop.pk) == [S.PICKED_UP]


def test_mark_failed_stores_the_reason(business, operator):
    drop = picked_up(business, "P-1", pin=PIN)

    _, messages = confirm(operator, DROPS, "mark_failed", drop.pk, reason="ADDRESS_NOT_FOUND")

    assert messages == [("success", "1 drop(s) failed.")]
    drop = refreshed(drop)
    assert (drop.status, drop.failure_reason) == (S.FAILED, FailureReason.ADDRESS_NOT_FOUND)
    assert entries_by_drop_id([drop.pk])[str(drop.pk)]["failure"]["reason"] == "ADDRESS_NOT_FOUND"
    event = Event.objects.get(data__drop_id=str(drop.pk), data__status=S.FAILED)
    assert event.data["failure"]["reason"] == "ADDRESS_NOT_FOUND"


@pytest.mark.parametrize("reason", ["", "WRONG_PIN", "LOST"])
def test_mark_failed_without_a_reason_it_accepts_is_a_form_error(business, operator, reason):
    drop = picked_up(business, "P-1")

    response, messages = confirm(operator, DROPS, "mark_failed", drop.pk, reason=reason)

    assert messages == []
    assert response.context["form"].errors["reason"]
    assert "nothing was moved" in response.content.decode()
    assert statuses_of(drop.pk) == [S.PICKED_UP]
    assert refreshed(drop).failure_reason is None


# --- permissions (docs/contract.md §16)


def offered(client, changelist: str) -> set[str]:
    html = client.get(changelist).content.decode()
    return {a for a in ("mark_delivered", "mark_failed") if f'value="{a}"' in html}


@pytest.mark.parametrize("changelist", [DROPS, ORDERS])
@pytest.mark.parametrize(
    ("username", "perms"),
    [("viewer@example.com", VIEW), ("canceller@example.com", [*VIEW, "orders.cancel_drop"])],
)
def test_without_dispatch_both_forms_are_hidden_and_403(business, changelist, username, perms):
    client = staff_client(username, perms=perms)
    drop = picked_up(business, "P-1", pin=PIN)
    pk = drop.order_id if changelist == ORDERS else drop.pk

    assert offered(client, changelist) == set()
    for action, fields in [
        ("mark_delivered", {pin_field(drop): PIN, "received_by": "Dara"}),
        ("mark_failed", {"reason": "REFUSED"}),
    ]:
        assert choose(client, changelist, action, pk).status_code == 403
        forged = {"action": action, "apply": "1", "_selected_action": [str(pk)], **fields}
        assert client.post(changelist, forged).status_code == 403

    drop = refreshed(drop)
    assert (drop.status, drop.pin_attempts, drop.failure_reason) == (S.PICKED_UP, 0, None)
    assert statuses_of(drop.pk) == [S.PICKED_UP]


@pytest.mark.parametrize("changelist", [DROPS, ORDERS])
def test_dispatch_alone_offers_both_forms(business, changelist):
    dispatcher = staff_client("dispatcher@example.com", perms=[*VIEW, "orders.dispatch_drop"])
    drop = picked_up(business, "P-1")
    pk = drop.order_id if changelist == ORDERS else drop.pk

    assert offered(dispatcher, changelist) == {"mark_delivered", "mark_failed"}
    _, messages = confirm(dispatcher, changelist, "mark_failed", pk, reason="REFUSED")

    assert messages == [("success", "1 drop(s) failed.")]
    assert refreshed(drop).failure_reason == FailureReason.REFUSED
