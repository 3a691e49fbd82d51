"""Tracking tokens derived from the drop's id (orders/links.py): unguessable, not the id,
turned back into the id when a recipient opens the page; old keys and stored tokens of
before keep their links opening (orders migration 0013)."""

from __future__ import annotations

import base64
import uuid

import psycopg
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from django.test import Client, override_settings

from core.ids import uuid7_texts
from orders.links import (
    TRACKING_PATH,
    drop_ids_of,
    drop_tracking_url,
    tracking_token,
    tracking_tokens,
)
from orders.models import Drop, DropStatus, LegacyTrackingToken
from tests.helpers import SCRIPT_WITH_A_TENANT, run_django_script
from tests.tracking.helpers import drop_in


def test_a_token_is_the_id_sealed_with_aes_under_a_key_of_its_own():
    """Written out here from the primitives: the key is SECRET_KEY's HMAC for this purpose
    (not SECRET_KEY itself), the token the id's 16 bytes encrypted, in URL-safe base64."""
    from django.conf import settings
    from django.utils.crypto import salted_hmac

    drop_id = uuid.UUID("019ab0c1-2d3e-7f40-8a1b-2c3d4e5f6071")
    key = salted_hmac(
        "orders.links.tracking-token", "aes-128", secret=settings.SECRET_KEY, algorithm="sha256"
    ).digest()[:16]
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()  # noqa: S305
    sealed = encryptor.update(drop_id.bytes) + encryptor.finalize()

    token = tracking_token(drop_id)

    assert token == base64.urlsafe_b64encode(sealed).decode().rstrip("=")
    assert len(token) == 22 and sealed != drop_id.bytes
    assert drop_ids_of(token) == [drop_id]


def test_tokens_made_together_are_the_ones_made_one_by_one_and_all_differ():
    ids = uuid7_texts(2000)

    together = tracking_tokens(ids)

    assert together == [tracking_token(uuid.UUID(i)) for i in ids]
    assert len(set(together)) == 2000
    assert all(drop_ids_of(t) == [uuid.UUID(i)] for t, i in zip(together, ids, strict=True))
    # Ids of one millisecond differ in their random bits only; their tokens share no prefix
    # beyond chance (the id's time does not show through).
    assert len({t[:4] for t in together}) > 1900


def test_another_secret_makes_other_tokens_and_reads_ours_as_another_id():
    drop_id = uuid.uuid4()
    ours = tracking_token(drop_id)

    with override_settings(SECRET_KEY="another-secret-key-" + "x" * 40):
        assert tracking_token(drop_id) != ours
        assert drop_ids_of(ours) != [drop_id]

    with override_settings(
        SECRET_KEY="another-secret-key-" + "x" * 40, SECRET_KEY_FALLBACKS=["a", "b"]
    ):
        assert len(drop_ids_of(ours)) == 3


@pytest.mark.parametrize(
    "token",
    ["A" * 21, "A" * 23, "A" * 21 + "!", "A" * 21 + "B", "A" * 21 + "_", "", "A" * 20 + "=="],
)
def test_anything_but_a_canonical_22_character_token_names_no_id(token):
    """Of 22 characters the last holds 2 bits of the id and 4 unused ones: a token with the
    unused bits set would be a second spelling of another token, and is refused."""
    assert drop_ids_of(token) == []


def test_the_canonical_spelling_is_accepted():
    assert len(drop_ids_of("A" * 21 + "Q")) == 1  # "Q" = 010000: the unused bits are clear


@pytest.fixture
def web() -> Client:
    return Client()


def test_the_link_in_the_answer_opens_its_drop_and_a_guess_opens_nothing(
    open_for_business, alice, web
):
    row = drop_in(DropStatus.PENDING, business=alice.business)
    other = drop_in(DropStatus.PENDING, business=alice.business)
    token = tracking_token(row.pk)

    page = web.get(f"{TRACKING_PATH}{token}")
    assert page.status_code == 200
    assert 'data-status="PENDING"' in page.content.decode()
    assert drop_tracking_url(row.pk).endswith(f"{TRACKING_PATH}{token}")
    assert drop_tracking_url(other.pk) != drop_tracking_url(row.pk)

    # The id itself in token form, or a neighbour of the token, names nothing.
    as_id = base64.urlsafe_b64encode(row.pk.bytes).decode().rstrip("=")
    neighbour = token[:10] + ("B" if token[10] != "B" else "C") + token[11:]
    for guess in (as_id, neighbour):
        assert web.get(f"{TRACKING_PATH}{guess}").status_code == 404


def test_links_made_under_a_fallback_key_open_until_the_key_is_dropped(
    open_for_business, alice, web, settings
):
    row = drop_in(DropStatus.PENDING, business=alice.business)
    old_token = tracking_token(row.pk)
    old_secret = settings.SECRET_KEY

    settings.SECRET_KEY = "the-rotated-secret-" + "y" * 40
    settings.SECRET_KEY_FALLBACKS = [old_secret]
    assert tracking_token(row.pk) != old_token  # links shown from now on are the new key's
    assert web.get(f"{TRACKING_PATH}{old_token}").status_code == 200
    assert web.get(f"{TRACKING_PATH}{tracking_token(row.pk)}").status_code == 200

    settings.SECRET_KEY_FALLBACKS = []
    assert web.get(f"{TRACKING_PATH}{old_token}").status_code == 404


def test_a_token_stored_before_tokens_were_derived_still_opens_its_drop(
    open_for_business, alice, web
):
    row = drop_in(DropStatus.ASSIGNED, business=alice.business)
    LegacyTrackingToken.objects.create(token="Stored-before-0013-abc", drop=row)

    page = web.get(f"{TRACKING_PATH}Stored-before-0013-abc")

    assert page.status_code == 200
    assert 'data-status="ASSIGNED"' in page.content.decode()
    assert web.get(f"{TRACKING_PATH}{tracking_token(row.pk)}").status_code == 200
    assert web.get(f"{TRACKING_PATH}Stored-before-0013-abd").status_code == 404


def test_the_page_finds_its_drop_through_an_index_for_either_kind_of_link(open_for_business, alice):
    """By primary key for a derived token, through the stored token's own key for one of
    before: never a scan of every drop (an OR of the two in one query would be one)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tracking.page_data import tracking_page

    row = drop_in(DropStatus.PENDING, business=alice.business)
    # Canonical base64 like the tokens of before ("w": its unused bits clear), so it is read
    # as a derived token first.
    LegacyTrackingToken.objects.create(token="Stored-before-0013-xyw", drop=row)
    reads = []
    for token in (tracking_token(row.pk), "Stored-before-0013-xyw"):
        with CaptureQueriesContext(connection) as queries:
            assert tracking_page(token).status == DropStatus.PENDING
        reads += [q["sql"] for q in queries if "business__name" in q["sql"]]
    assert len(reads) == 3  # the derived token's read; the stored one's two (none, then it)

    with connection.cursor() as cursor:
        # A table of some size, analysed: on one row every index on id costs the same, and
        # the planner's pick among them is chance (a wider index won in a full run).
        columns = [field.column for field in Drop._meta.concrete_fields]
        copies = {
            "id": "gen_random_uuid()",
            "client_order_id": "client_order_id || '-' || n",
            "short_code": "upper(substr(md5(gen_random_uuid()::text), 1, 12))",
        }
        cursor.execute(
            f"INSERT INTO orders_drop ({', '.join(columns)}) "
            f"SELECT {', '.join(copies.get(c, c) for c in columns)} "
            "FROM orders_drop, generate_series(1, 2000) AS n"
        )
        cursor.execute("ANALYZE orders_drop")
        cursor.execute("SET LOCAL enable_seqscan = off")
        for sql in reads:
            cursor.execute("EXPLAIN " + sql)
            plan = "\n".join(line for (line,) in cursor.fetchall())
            assert "Seq Scan on orders_drop" not in plan, plan
            assert "orders_drop_pkey" in plan, plan


def test_a_new_drop_is_written_to_no_index_of_tokens(db):
    """What the derived token is for: the drops' table has no token column, so
    no unique index of random values for every drop written."""
    columns = {f.column for f in Drop._meta.concrete_fields}
    assert "tracking_token" not in columns
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'orders_drop'"
            " AND indexdef ILIKE '%%token%%'"
        )
        assert cursor.fetchall() == []


# --- Migration 0013, both ways, on PostgreSQL and on the SQLite default -----------------------

MIGRATION_SCRIPT = (
    SCRIPT_WITH_A_TENANT
    + r"""
from django.db import connection
from orders.inputs import parse_batch
from orders.links import tracking_token
from orders.models import Drop
from orders.services import create_batch
from tracking.page_data import tracking_page

body = {"client_batch_id": "b1", "orders": [{"pickup": {"name": "Shop", "phone": "+85512345678",
        "lat": 11.5564, "long": 104.9282}, "dropoff": [
        {"client_order_id": c, "dropoff": {"name": "R", "phone": "+85512345679",
         "lat": 11.5696, "long": 104.921}} for c in ("A", "B")]}]}
# Inside opening hours whenever the test runs: 10:00 in Phnom Penh (the fixtures' clock).
import time_machine
from datetime import datetime, UTC
with time_machine.travel(datetime(2026, 11, 23, 3, 0, tzinfo=UTC), tick=False):
    out = create_batch(business=tenant.business, environment="sandbox",
                       idempotency_key=uuid.uuid4(), batch=parse_batch(body), base_url="http://x")
urls = {o["client_order_id"]: o["tracking_url"] for o in json.loads(out.body)["data"]["orders"]}
ids = {d.client_order_id: str(d.pk) for d in Drop.objects.all()}

def hex_id(text):
    return text if connection.vendor == "postgresql" else uuid.UUID(text).hex

# Back to stored tokens: every drop gets the token its link shows.
call_command("migrate", "orders", "0012", verbosity=0)
with connection.cursor() as cursor:
    cursor.execute("SELECT id, tracking_token FROM orders_drop")
    stored_back = {str(uuid.UUID(str(i))): t for i, t in cursor.fetchall()}
    # A drop of before 0013 with a token of its own, as secrets.token_urlsafe(16) made them.
    cursor.execute("UPDATE orders_drop SET tracking_token = %s WHERE id = %s",
                   ["Stored-token-of-drop-A", hex_id(ids["A"])])
call_command("migrate", verbosity=0)
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM orders_legacytrackingtoken")
    legacy = cursor.fetchone()[0]

def opens(token):
    page = tracking_page(token)
    return None if page is None else page.status

print(json.dumps({
    "shown": {c: urls[c].rsplit("/", 1)[1] for c in urls},
    "derived": {c: tracking_token(ids[c]) for c in ids},
    "stored_back": {c: stored_back[ids[c]] for c in ids},
    "legacy_rows": legacy,
    "opens": {
        "stored A": opens("Stored-token-of-drop-A"),
        "derived A": opens(tracking_token(ids["A"])),
        "derived B": opens(tracking_token(ids["B"])),
        "unknown": opens("Stored-token-of-drop-Z"),
    },
}))
"""
)


def _assert_no_link_broke(result: dict) -> None:
    assert result["shown"] == result["derived"]  # the answer's links are the derived tokens
    # Reversed, each drop stored the token its links showed, then A's own was set; forward
    # again, both drops' stored tokens are kept and every link opens its page.
    assert result["stored_back"] == result["derived"]
    assert result["legacy_rows"] == 2
    assert result["opens"] == {
        "stored A": "PENDING",
        "derived A": "PENDING",
        "derived B": "PENDING",
        "unknown": None,
    }


def test_migration_0013_both_ways_keeps_every_link_on_postgresql(postgres_cluster):
    name = f"tokens_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_cluster.url("postgres"), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        _assert_no_link_broke(run_django_script(MIGRATION_SCRIPT, postgres_cluster.url(name)))
    finally:
        with psycopg.connect(postgres_cluster.url("postgres"), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_migration_0013_both_ways_keeps_every_link_on_the_sqlite_default(tmp_path):
    _assert_no_link_broke(
        run_django_script(MIGRATION_SCRIPT, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    )
