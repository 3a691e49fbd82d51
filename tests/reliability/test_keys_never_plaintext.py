"""API keys are never stored in plaintext (docs/contract.md §2): only a SHA-256 digest and a hint.

Keys are made every way the product makes them (provisioning, the service, the dashboard
form) and used once, then the whole database is searched for them: every column of every
table, the encoded stores (signed sessions, pickled cache entries) decoded first, and a
pg_dump of the database as a second, independent net. The search looks for every
10-character run of each key's 40-character secret, so a truncated or embedded copy is
found too; the hint shows only 4 + 4 characters and never matches.
"""

from __future__ import annotations

import base64
import logging
import pickle
import re
import subprocess
from collections import defaultdict

import orjson
import pytest
from django.contrib.sessions.models import Session
from django.core.cache import caches
from django.core.cache.backends.db import BaseDatabaseCache
from django.db import connection
from django.test import Client

from accounts import services
from accounts.keys import KEY_PATTERN, digest_of
from accounts.models import ApiKey, Environment, Membership
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # committed, so pg_dump sees it

WINDOW = 10
ISSUED_KEY = re.compile(r"svc_(?:test|live)_[A-Za-z0-9]{40}")


def secret_runs(keys: list[str]) -> list[str]:
    """Every WINDOW-character run of each key's secret part."""
    runs = []
    for key in keys:
        secret = key[len("svc_test_") :]
        runs += [secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)]
    return runs


def columns_matching(pattern: str) -> set[str]:
    """`table.column` of every column in the public schema holding a value that matches the
    regular expression `pattern`; any type as text, bytea with its bytes as they are."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
            "JOIN information_schema.tables t USING (table_schema, table_name) "
            "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
            "ORDER BY c.table_name, c.ordinal_position"
        )
        tables = defaultdict(list)
        for table, column, data_type in cursor.fetchall():
            tables[table].append((column, data_type))
        assert "accounts_apikey" in tables and len(tables) > 10, tables
        found = set()
        for table, columns in tables.items():
            qn = connection.ops.quote_name
            tests = [
                f"coalesce(bool_or(encode({qn(c)}, 'escape') ~ %s), false)"
                if data_type == "bytea"
                else f"coalesce(bool_or({qn(c)}::text ~ %s), false)"
                for c, data_type in columns
            ]
            cursor.execute(f"SELECT {', '.join(tests)} FROM {qn(table)}", [pattern] * len(tests))
            hits = cursor.fetchone()
            found |= {f"{table}.{c}" for (c, _), hit in zip(columns, hits, strict=True) if hit}
    return found


def database_dump(cluster) -> str:
    """pg_dump --data-only of the test database, with the cluster's own binary."""
    db = connection.settings_dict
    done = subprocess.run(
        [str(cluster.bindir / "pg_dump"), "--data-only", "-h", db["HOST"], "-p", str(db["PORT"])]
        + ["-U", db["USER"], db["NAME"]],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def decoded_sessions() -> list[str]:
    return [orjson.dumps(s.get_decoded()).decode() for s in Session.objects.all()]


def decoded_cache_entries() -> list[str]:
    """The database cache keeps base64-encoded pickles; decoded, as repr() text."""
    cache = caches["default"]
    if not isinstance(cache, BaseDatabaseCache):
        return []
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT cache_key, value FROM {connection.ops.quote_name(cache._table)}")
        return [f"{k} {pickle.loads(base64.b64decode(v))!r}" for k, v in cursor.fetchall()]


def made_on_the_dashboard(web: Client, environment: str) -> str:
    page = web.get("/keys/").content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    created = web.post("/keys/", {"form_token": token, "environment": environment})
    assert created.status_code == 201, created.content
    assert "no-store" in created["Cache-Control"]  # the only copy: no cache may keep it
    [key] = ISSUED_KEY.findall(created.content.decode())
    return key


def test_keys_are_stored_as_digests_only_wherever_they_were_made(
    alice, api, postgres_cluster, caplog
):
    caplog.set_level(logging.DEBUG)
    user = UserFactory()
    Membership.objects.create(user=user, business=alice.business, is_owner=True)
    web = Client()
    web.force_login(user)

    keys = [alice.sandbox_key, alice.live_key]  # provisioned
    keys += [
        services.create_api_key(business=alice.business, environment=env, created_by=user).plaintext
        for env in (Environment.SANDBOX, Environment.LIVE)
    ]
    keys += [made_on_the_dashboard(web, env) for env in (Environment.SANDBOX, Environment.LIVE)]
    assert len(set(keys)) == 6 and all(KEY_PATTERN.match(key) for key in keys)
    for key in keys:  # used once: authentication writes last_used_at
        assert api.get("/account", key).status_code == 200

    runs = secret_runs(keys)
    anything_of_a_key = "|".join(runs)
    # The search itself works: it finds what is stored, the digests, where they are.
    digests = [digest_of(key) for key in keys]
    assert set(ApiKey.objects.values_list("digest", flat=True)) == set(digests)
    assert "accounts_apikey.digest" in columns_matching("|".join(digests))

    assert columns_matching(anything_of_a_key) == set()
    dump = database_dump(postgres_cluster)
    assert all(digest in dump for digest in digests)
    leaked = [run for run in runs if run in dump or run.encode().hex() in dump]
    assert not leaked, "a key's secret is in the database dump"
    sessions = decoded_sessions()
    assert any('"_auth_user_id"' in session for session in sessions)  # decoded, not opaque
    for stored in sessions + decoded_cache_entries() + [caplog.text]:
        assert not re.search(anything_of_a_key, stored), stored[:500]

    # Shown once: the keys page later lists the hints, never a key.
    page = web.get("/keys/").content.decode()
    for key in ApiKey.objects.filter(business=alice.business):
        assert key.hint in page
    assert not re.search(anything_of_a_key, page)
