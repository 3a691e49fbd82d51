"""Shared counters (core/counters.py): a fixed window from the first hit, exact across threads
and processes, in the database (one upsert per hit) and in Redis (CACHE_URL=redis://…)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from io import StringIO

import pytest
import time_machine
from django.conf import settings
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import counters
from core.counters import Window
from core.models import RateCounter
from tests.fixtures import OPEN_HOURS
from tests.helpers import run_concurrently

NOW = OPEN_HOURS.timestamp()


@pytest.fixture
def frozen():
    with time_machine.travel(OPEN_HOURS, tick=False) as traveller:
        yield traveller


# --- the same behaviour in both stores --------------------------------------------------------


def test_the_first_hit_opens_a_window_of_the_period(db, counter_store, frozen):
    assert counters.count("k", 60) == Window(hits=1, ends_at=NOW + 60)


def test_hits_count_in_the_window_without_extending_it(db, counter_store, frozen):
    counters.count("k", 60)
    frozen.shift(59)
    assert counters.count("k", 60) == Window(hits=2, ends_at=NOW + 60)
    frozen.shift(1)
    # The window has ended: this hit opens the next one, counted from 1.
    assert counters.count("k", 60) == Window(hits=1, ends_at=NOW + 120)


def test_each_counter_counts_apart(db, counter_store, frozen):
    counters.count("a", 60)
    counters.count("a", 60)
    assert counters.count("b", 60).hits == 1
    assert counters.count("a", 60).hits == 3


def test_live_hits_reads_open_windows_and_counts_nothing(db, counter_store, frozen):
    counters.count("a", 60)
    counters.count("a", 60)
    counters.count("b", 10)
    frozen.shift(10)  # b's window has ended; c never counted
    assert counters.live_hits(["a", "b", "c"]) == {"a": 2}
    assert counters.live_hits(["a", "b", "c"]) == {"a": 2}


def test_forget_closes_the_window(db, counter_store, frozen):
    for _ in range(3):
        counters.count("k", 60)
    counters.forget("k")
    counters.forget("never-counted")
    assert counters.live_hits(["k"]) == {}
    # The same millisecond, so the same end: still a fresh count.
    assert counters.count("k", 60) == Window(hits=1, ends_at=NOW + 60)


def test_hold_marks_a_key_from_now_and_a_later_hold_extends_it(db, counter_store, frozen):
    assert not counters.held("w")
    counters.hold("w", 5)
    frozen.shift(4)
    assert counters.held("w")
    counters.hold("w", 5)  # held again at 4 s: until 9 s, not 5 s
    frozen.shift(4)
    assert counters.held("w")
    assert not counters.held("other")
    frozen.shift(1)
    assert not counters.held("w")


def test_a_hold_is_one_statement_and_a_check_one_read(db, frozen):
    with CaptureQueriesContext(connection) as captured:
        counters.hold("w", 5)
        counters.held("w")
    assert [q["sql"].split()[0] for q in captured] == ["INSERT", "SELECT"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_hits_all_land_and_each_sees_its_own_count(counter_store):
    threads, each = 20, 25

    def work(_api, _i: int) -> list[int]:
        return [counters.count("hits", 300).hits for _ in range(each)]

    seen = sorted(hits for batch in run_concurrently(threads, work) for hits in batch)

    assert seen == list(range(1, threads * each + 1))


# Each process warms up (settings, a connection), then all count from the same moment.
COUNT_IN_A_PROCESS = r"""
import json, sys, time
import django
django.setup()
from core import counters
counters.live_hits(["warm-up"])
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
print(json.dumps([counters.count("shared", 300).hits for _ in range(int(sys.argv[2]))]))
"""


@pytest.mark.django_db(transaction=True)
def test_processes_share_the_counts(counter_store):
    database = connection.settings_dict
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "true",
        "DATABASE_URL": (
            f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/"
            f"{database['NAME']}"
        ),
    }
    if counter_store == "redis":
        environment["CACHE_URL"] = settings.CACHES["default"]["LOCATION"]
    start_at, each = str(time.time() + 4), "150"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", COUNT_IN_A_PROCESS, start_at, each],
            cwd=settings.BASE_DIR,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    seen = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err[-2000:]
        seen += json.loads(out)

    assert sorted(seen) == list(range(1, 3 * 150 + 1))
    assert counters.live_hits(["shared"]) == {"shared": 450}


# --- the database: one statement per hit, PostgreSQL and SQLite ------------------------------


def test_every_hit_is_one_statement(db, frozen):
    counters.count("k", 60)
    with CaptureQueriesContext(connection) as captured:
        counters.count("k", 60)  # in the open window
        frozen.shift(60)
        counters.count("k", 60)  # the window ended: a new one
        counters.count("new", 60)  # a new counter

    assert len(captured) == 3
    assert all(q["sql"].startswith("INSERT INTO") for q in captured)
    assert RateCounter.objects.get(key="k").hits == 1


def test_purge_deletes_only_ended_windows(db, frozen):
    counters.count("short", 1)
    counters.count("long", 60)
    frozen.shift(1)
    out = StringIO()

    call_command("purge_rate_counters", stdout=out)

    assert list(RateCounter.objects.values_list("key", flat=True)) == ["long"]
    assert "Purged 1 rate counter(s)" in out.getvalue()


SQLITE = r"""
import importlib
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", "core", verbosity=0)
from core import counters
hits = [counters.count("k", 60, now=1000.0) for _ in range(3)]
hits.append(counters.count("k", 60, now=1060.0))
live = counters.live_hits(["k", "x"], now=1060.5)
counters.forget("k")
hits.append(counters.count("k", 60, now=1061.0))
print(json.dumps({"hits": [[w.hits, w.ends_at] for w in hits], "live": live}))
"""


def test_the_upsert_counts_on_the_sqlite_default_too(tmp_path):
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    done = subprocess.run(
        [sys.executable, "-c", SQLITE],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["hits"] == [[1, 1060], [2, 1060], [3, 1060], [1, 1120], [1, 1121]]
    assert result["live"] == {"k": 1}


# --- Redis: only the cache's public API, and what it survives ---------------------------------


def test_redis_counts_in_the_cache_not_the_database(redis_counters, db, frozen):
    with CaptureQueriesContext(connection) as captured:
        counters.count("k", 60)
    assert len(captured) == 0
    assert RateCounter.objects.count() == 0
    assert cache.get("counter:k:0") == round((NOW + 60) * 1000)


def test_redis_walks_forward_from_a_stale_window_number(redis_counters, frozen):
    for _ in range(3):  # windows 0, 1 and 2, each ended
        counters.count("k", 60)
        frozen.shift(60)
    assert counters.count("k", 60) == Window(hits=1, ends_at=NOW + 240)  # window 3
    # The opener of window 0, delayed, writes its number last.
    cache.set("counter:k:n", 0)

    assert counters.count("k", 60) == Window(hits=2, ends_at=NOW + 240)
    assert counters.live_hits(["k"]) == {"k": 2}


def test_redis_emptied_restarts_the_windows(redis_counters, frozen):
    counters.count("k", 60)
    counters.count("k", 60)
    cache.clear()
    assert counters.count("k", 60) == Window(hits=1, ends_at=NOW + 60)


def persistence_of_counters() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relpersistence FROM pg_class WHERE relname = 'core_rate_counter'")
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_the_counters_table_is_unlogged_and_the_migration_goes_both_ways():
    """No WAL for a hit: its commit waits for no flush and no standby (core migration 0003).
    The migration can be reversed, and done again."""
    migration = importlib.import_module("core.migrations.0003_rate_counter_unlogged")
    assert persistence_of_counters() == "u"
    with connection.schema_editor() as editor:
        migration.set_persistence("LOGGED")(None, editor)
    assert persistence_of_counters() == "p"
    with connection.schema_editor() as editor:
        migration.set_persistence("UNLOGGED")(None, editor)
    assert persistence_of_counters() == "u"
    assert counters.count("unlogged", 60, NOW).hits == 1
    assert counters.count("unlogged", 60, NOW).hits == 2
