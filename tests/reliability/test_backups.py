"""Backups and point-in-time recovery with pgBackRest (docs/backups.md), the short form of
`make backup-test`: a throwaway cluster archives its WAL into a local repository, a full
backup is taken, a row written after it is deleted after the moment T, and the cluster
restored to T in a new data directory has the row back. pgBackRest comes from Debian,
installed if missing as `make test-deps` and `make backup-test` install it. About 10 s."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from bench.backup import PACKAGES, Repository, moment
from bench.drill import install_missing
from tests.pgcluster import PostgresCluster


@pytest.fixture(scope="module")
def pgbackrest():
    try:
        install_missing(PACKAGES)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"pgbackrest is not installed and apt-get could not install it: {exc}")


@pytest.fixture
def archived(pgbackrest):
    """A cluster archiving into its own repository, and a connection to it."""
    cluster, repository = PostgresCluster().start(), Repository()
    try:
        repository.archive(cluster)
        with psycopg.connect(cluster.url(), autocommit=True) as db:
            yield cluster, repository, db
    finally:
        cluster.stop()
        repository.remove()


def test_wal_is_archived_as_it_is_written(archived):
    cluster, repository, db = archived
    db.execute("CREATE TABLE note (id int PRIMARY KEY)")
    segment = db.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0]
    repository.wait_archived(db)
    archived_wal = list(repository.path.glob(f"archive/*/*/*/{segment}-*"))
    assert len(archived_wal) == 1, f"{segment} not in the repository"
    failed = db.execute("SELECT failed_count FROM pg_stat_archiver").fetchone()[0]
    assert failed == 0


def test_a_restore_to_t_brings_back_a_row_deleted_after_t(archived, tmp_path: Path):
    cluster, repository, db = archived
    media = tmp_path / "media"
    (media / "proof").mkdir(parents=True)
    (media / "proof" / "photo.png").write_bytes(b"\x89PNG a delivery photo")
    db.execute("CREATE TABLE drop_kept (id int PRIMARY KEY, note text)")
    db.execute("INSERT INTO drop_kept VALUES (1, 'in the backup')")
    backup = repository.backup("full", media_root=media)
    db.execute("INSERT INTO drop_kept VALUES (2, 'after the backup, before T')")
    # pgBackRest picks the newest backup that ended before T, and keeps its end to the second.
    time.sleep(1.1)
    target = moment(time.time())
    time.sleep(0.01)
    db.execute("INSERT INTO drop_kept VALUES (3, 'after T')")
    db.execute("DELETE FROM drop_kept")  # the mistake
    repository.wait_archived(db)
    cluster.stop_server()

    restored, _ = repository.restore(target)
    try:
        with psycopg.connect(restored.url(), autocommit=True) as again:
            rows = again.execute("SELECT id, note FROM drop_kept ORDER BY id").fetchall()
            writable = not again.execute("SELECT pg_is_in_recovery()").fetchone()[0]
    finally:
        restored.stop()
    assert rows == [(1, "in the backup"), (2, "after the backup, before T")]
    assert writable  # promoted: the app can be pointed at it
    back = tmp_path / "media-restored"
    assert repository.restore_media(back) == backup.label
    assert (back / "proof" / "photo.png").read_bytes() == b"\x89PNG a delivery photo"
