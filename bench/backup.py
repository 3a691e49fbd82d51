"""Backups and point-in-time recovery, drilled: `make backup-test` (docs/backups.md).

    .venv/bin/python bench/backup.py             # about two minutes on this machine

On loopback, pgBackRest from Debian (installed if missing, with HAProxy): a throwaway
PostgreSQL 15 archiving its WAL (archive_mode=on, archive_command = pgBackRest's
archive-push) into a pgBackRest repository on a local path, its configuration in a temporary
folder; the app (one gunicorn instance behind HAProxy) and two `db_worker`s on it, seeded and
served by bench/drill.py as the cluster drills are, MEDIA_ROOT in the work folder.

1. The mixed load of `make cluster-test` (bench/locustfile.py) runs, scaled down. A sandbox
   drop is delivered by the test driver first (its proof photo and signature stored).
2. While it runs: a full backup, then a differential one; each writes a media snapshot (a tar
   of MEDIA_ROOT) into the repository, named by the backup's label. The load goes on.
3. The moment T is noted; the load goes on past it, then stops (the app and workers too).
   What the origin held at T is read by commit timestamp (track_commit_timestamp).
4. The mistake: every ledger entry deleted, the drops' moves' table dropped; the WAL
   archived; the origin stopped.
5. `pgbackrest restore --type=time --target=T --target-action=promote` into a new data
   directory, started on its own port; the newest media snapshot into a new MEDIA_ROOT.

Invariants, on the restored cluster: every batch answered 200 before T is there with its
drops and ledger entries; the append-only tables hold exactly the rows committed by T on the
origin, none committed after; wallets equal their ledgers; the COD and cash ledgers balance
(bench/drill.py's checks); the proof files the restored drops name are back, byte for byte.
Figures: each backup's duration and size, the restore's duration, the WAL archive lag
p50/p99 under the load (ArchiveLag says how it is measured). Exit 0 when every invariant
holds; nothing is left running, on success, failure or Ctrl-C.

The repository and the media snapshot (Repository) are shared with the suite's short check,
tests/reliability/test_backups.py. PostgreSQL runs as `postgres` when we are root
(tests/pgcluster.py), and its archive_command runs pgBackRest as that user: so does every
pgBackRest command here, and the repository, its logs and locks belong to it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project importable
    sys.path.insert(0, str(ROOT))

from bench.bulk import DB_NAME, HOST, BenchError, start_database  # noqa: E402
from bench.drill import (  # noqa: E402
    APP_SETTINGS,
    HAPROXY,
    Drill,
    Phase,
    check_custody,
    check_wallets,
    figures,
    install_missing,
    run_locust,
)
from tests.pgcluster import PostgresCluster  # noqa: E402

PGBACKREST = "/usr/bin/pgbackrest"
PACKAGES = {"pgbackrest": PGBACKREST}
STANZA = "delivery"
WAL_SEGMENT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Backup:
    label: str
    kind: str  # full or diff
    seconds: float
    size: int  # bytes of the database at the backup (pgBackRest's "database size")
    copied: int  # of which this backup copied (all of them for a full backup)
    stored: int  # bytes it added to the repository, compressed
    media_bytes: int  # bytes of the media snapshot stored beside it


def moment(at: float) -> str:
    """A moment as pgBackRest's --target and PostgreSQL's recovery_target_time read it."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S.%f+00")


def segment_end_lsn(segment: str) -> int:
    """The WAL position just after a segment (its file name: timeline, log, segment)."""
    log, seg = int(segment[8:16], 16), int(segment[16:24], 16)
    return (log << 32) + (seg + 1) * WAL_SEGMENT_BYTES


class Repository:
    """One stanza in a local repository (repo1-path), its configuration in the same folder;
    the media snapshots under media/ beside the backups, one per backup label."""

    def __init__(self, retention_full: int = 2) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="delivery-pgbackrest-"))
        self.as_root = os.geteuid() == 0
        self.config = self.folder / "pgbackrest.conf"
        self.path = self.folder / "repo"
        self.media = self.path / "media"
        self.retention_full = retention_full
        for folder in (self.path, self.media, self.folder / "log", self.folder / "lock"):
            folder.mkdir(parents=True)
        self.cluster: PostgresCluster | None = None

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _write_config(self, cluster: PostgresCluster) -> None:
        self.config.write_text(
            f"""[global]
repo1-path={self.path}
repo1-retention-full={self.retention_full}
log-path={self.folder / "log"}
lock-path={self.folder / "lock"}
log-level-console=warn
log-level-file=info
compress-type=lz4
start-fast=y

[{STANZA}]
pg1-path={cluster.datadir}
pg1-port={cluster.port}
pg1-socket-path={cluster.root}
pg1-user={cluster.user}
"""
        )
        if self.as_root:
            for path in [self.folder, *self.folder.rglob("*")]:
                shutil.chown(path, "postgres", "postgres")

    def run(self, *args: str) -> str:
        """One pgBackRest command as PostgreSQL's user; its standard output."""
        command = [PGBACKREST, f"--config={self.config}", f"--stanza={STANZA}", *args]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"pgbackrest {' '.join(args)} exited {done.returncode}: {done.stderr}{done.stdout}"
            )
        return done.stdout

    @property
    def archive_command(self) -> str:
        return f"{PGBACKREST} --config={self.config} --stanza={STANZA} archive-push %p"

    def archive(self, cluster: PostgresCluster) -> None:
        """Archive the cluster's WAL into this repository (a restart turns archive_mode on),
        with commit timestamps kept (what a drill compares a restore with), and the stanza."""
        self.cluster = cluster
        self._write_config(cluster)
        with psycopg.connect(cluster.url(), autocommit=True) as db:
            for name, value in (
                ("archive_mode", "on"),
                ("archive_command", self.archive_command),
                ("track_commit_timestamp", "on"),
            ):
                db.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        cluster.restart_server()
        self.run("stanza-create")
        self.run("check")  # a WAL segment switched, pushed and found in the repository

    def backup(self, kind: str, media_root: Path | None = None) -> Backup:
        """A full or differential backup of the running cluster, then the media snapshot
        named by its label (a tar of MEDIA_ROOT in media/<label>.tar)."""
        started = time.monotonic()
        self.run(f"--type={kind}", "backup")
        seconds = time.monotonic() - started
        newest = self.info()["backup"][-1]
        label = newest["label"]
        media_bytes = self.snapshot_media(media_root, label) if media_root else 0
        return Backup(
            label=label,
            kind=kind,
            seconds=seconds,
            size=newest["info"]["size"],
            copied=newest["info"]["delta"],
            stored=newest["info"]["repository"]["delta"],
            media_bytes=media_bytes,
        )

    def info(self) -> dict:
        return json.loads(self.run("--output=json", "info"))[0]

    def snapshot_media(self, media_root: Path, label: str) -> int:
        target = self.media / f"{label}.tar"
        with tarfile.open(target, "w") as tar:
            tar.add(media_root, arcname=".")
        return target.stat().st_size

    def restore_media(self, media_root: Path) -> str | None:
        """The newest media snapshot extracted into `media_root`: proof files are written once
        under names never reused, so the newest holds every file any earlier moment named."""
        snapshots = sorted(self.media.glob("*.tar"))
        if not snapshots:
            return None
        media_root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(snapshots[-1]) as tar:
            tar.extractall(media_root, filter="data")
        return snapshots[-1].stem

    def wait_archived(self, db: psycopg.Connection, timeout: float = 60) -> float:
        """Switch to a new WAL segment and wait until the one just closed is in the
        repository (what a drill does before it stops the cluster); the seconds it took."""
        started = time.monotonic()
        closed = db.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()[0]
        while time.monotonic() - started < timeout:
            last = db.execute("SELECT last_archived_wal FROM pg_stat_archiver").fetchone()[0]
            if last and last[8:] >= closed[8:]:
                return time.monotonic() - started
            time.sleep(0.05)
        raise RuntimeError(f"WAL segment {closed} not archived in {timeout:.0f} s")

    def restore(self, target: str, *, archive_mode: str = "off") -> tuple[PostgresCluster, float]:
        """A new cluster (its own data directory and port) restored to `target` and promoted:
        the one command of docs/backups.md, then started; the seconds until it takes writes."""
        into = PostgresCluster()
        if self.as_root:
            shutil.chown(into.root, "postgres", "postgres")
        started = time.monotonic()
        try:
            self.run(
                f"--pg1-path={into.datadir}",
                "--type=time",
                f"--target={target}",
                "--target-action=promote",
                f"--archive-mode={archive_mode}",
                "restore",
            )
            into.start_server()
            with psycopg.connect(into.url(), autocommit=True) as db:
                while db.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
                    if time.monotonic() - started > 300:
                        raise RuntimeError(f"recovery did not end; see {into.root}/server.log")
                    time.sleep(0.05)
        except BaseException:
            into.stop()  # nothing left running, no folder left behind
            raise
        return into, time.monotonic() - started

    def recovery_stop(self, cluster: PostgresCluster) -> str:
        """The line of the restored server's log that says where recovery stopped."""
        log = (cluster.root / "server.log").read_text(errors="replace")
        found = re.findall(r"recovery stopping .*", log)
        return found[-1] if found else "(no recovery stop logged)"


# --------------------------------------------------------------------------- the drill


class Origin(Drill):
    """The drill's app (one instance behind HAProxy), its two workers and simulated couriers
    on one PostgreSQL archiving its WAL into a pgBackRest repository; MEDIA_ROOT in the work
    folder."""

    def __init__(self, cleanup: contextlib.ExitStack, couriers: int) -> None:
        self.short = True  # the live batches' pace of the short runs
        install_missing({**PACKAGES, "haproxy": HAPROXY})
        self.workdir, self.pg, base_env = start_database(cleanup)
        self.repository = Repository()
        cleanup.callback(self.repository.remove)
        self.repository.archive(self.pg)
        self.db = cleanup.enter_context(psycopg.connect(self.pg.url(DB_NAME), autocommit=True))
        self.media = self.workdir / "media"
        self.env = {
            **base_env,
            **APP_SETTINGS,
            "MEDIA_ROOT": str(self.media),
            "SANDBOX_STEP_SECONDS": "1",  # the proof's drop delivered in seconds
            # Live orders offered soon enough that cash is collected before T.
            "PLAN_SECONDS": "5",
        }
        print("migrating and seeding ...", flush=True)
        self.serve(cleanup, instances=1, couriers=couriers)
        # Simulated couriers take the live batches' drops and collect their cash on delivery.
        self.fleet = self.start_couriers(cleanup)
        print(
            f"up: PostgreSQL :{self.pg.port} archiving into {self.repository.path}, app "
            f":{self.apps[0].port}, HAProxy :{self.balancer.port}, {len(self.workers)} workers",
            flush=True,
        )

    def stop_serving(self) -> None:
        """The workers, the app and the balancer stopped: nothing writes any more."""
        self.fleet.stop()
        for part in [*self.workers, *self.apps, self.balancer]:
            part.stop()

    def deliver_one_in_the_sandbox(self, timeout: float = 60) -> str:
        """A sandbox drop the test driver walks to DELIVERED by itself (the `deliver`
        scenario, a step a second here), which stores its proof photo and signature under
        MEDIA_ROOT; its drop id, once delivered."""
        place = {"phone": "+85512345678", "lat": 11.5564, "long": 104.9282}
        drop = {
            "client_order_id": "backup-proof-1",
            "sandbox_scenario": "deliver",
            "dropoff_verification": {"signature": True},
            "dropoff": {"name": "Dara", **place},
        }
        body = {
            "client_batch_id": "backup-proof",
            "orders": [{"pickup": {"name": "Proof Shop", **place}, "dropoff": [drop]}],
        }
        key = self.tenants[0]["key"]
        status, answer = self.call("POST", "/api/v1/orders/bulk", key, body, idempotency=True)
        if status != 200 or answer["data"]["orders"][0]["status"] != "accepted":
            raise BenchError(f"the proof's batch was refused: {status} {answer}")
        drop_id = answer["data"]["orders"][0]["drop_id"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            photo = self.db.execute(
                "SELECT pod_photo FROM orders_drop WHERE id = %s", [drop_id]
            ).fetchone()[0]
            if photo:
                return drop_id
            time.sleep(0.2)
        raise BenchError(f"the sandbox drop {drop_id} was not delivered in {timeout:.0f} s")


class ArchiveLag:
    """How long each WAL segment waits to be archived, under the load: every 50 ms, the
    segments pg_wal/archive_status lists. PostgreSQL writes <segment>.ready when it closes
    a segment and renames it <segment>.done once archive_command (pgBackRest's archive-push)
    returned; a segment's lag is from the first sight of one to the first sight of the
    other (a segment archived within one poll counts as 50 ms). Also the WAL written and not
    yet archived (pg_current_wal_lsn past the end of pg_stat_archiver's last_archived_wal):
    what a loss of the database's disk at that moment would lose."""

    POLL = 0.05

    def __init__(self, origin: Origin) -> None:
        self.status = origin.pg.datadir / "pg_wal" / "archive_status"
        self.url = origin.pg.url()
        self.ready: dict[str, float] = {}
        self.lags: list[float] = []
        self.unarchived: list[int] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for entry in os.listdir(self.status):  # archived before the load: not counted
            if entry.endswith(".done"):
                self.ready[entry.partition(".")[0]] = -1.0
        with psycopg.connect(self.url, autocommit=True) as db:
            while not self.stopping.wait(self.POLL):
                self._sample(db)

    def _sample(self, db: psycopg.Connection) -> None:
        now = time.monotonic()
        for entry in os.listdir(self.status):
            segment, _, state = entry.partition(".")
            if state == "ready":
                self.ready.setdefault(segment, now)
            elif state == "done" and self.ready.get(segment, 0.0) >= 0:
                self.lags.append(max(now - self.ready.get(segment, now), self.POLL))
                self.ready[segment] = -1.0  # counted
        current, last = db.execute(
            """SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), last_archived_wal
               FROM pg_stat_archiver"""
        ).fetchone()
        if last:
            self.unarchived.append(max(0, int(current) - segment_end_lsn(last)))

    def summary(self) -> str:
        if len(self.lags) < 2 or len(self.unarchived) < 2:
            return f"WAL archive lag: {len(self.lags)} segments archived, too few to tell"
        lags = statistics.quantiles(self.lags, n=100)
        behind = statistics.quantiles(self.unarchived, n=100)
        return (
            f"WAL archive lag (segment closed -> in the repository, {len(self.lags)} segments): "
            f"p50 {lags[49] * 1000:.0f} ms, p99 {lags[98] * 1000:.0f} ms, max "
            f"{max(self.lags) * 1000:.0f} ms; WAL written and not yet archived: p50 "
            f"{behind[49] / 2**20:.1f} MiB, p99 {behind[98] / 2**20:.1f} MiB"
        )


@dataclass
class Timeline:
    """What happened when, and what the origin held at T (read before the mistake)."""

    phase: Phase
    backups: list[Backup] = field(default_factory=list)
    target: float = 0.0
    proof_drop: str = ""
    # table -> (ids committed at or before T, ids committed after), by commit timestamp
    at_target: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)
    mistake: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # the load's, read on the origin


# Append-only tables (a row is never updated, so its xmin is the transaction that wrote it):
# a restore to T holds exactly their rows committed at or before T. orders_batch is updated
# only in the transaction that inserts it.
EXACT_AT_T = ("orders_batch", "billing_ledgerentry", "orders_deliveryevent")
# The mistake made after T: every ledger entry deleted, the drops' moves dropped.
MISTAKE = (
    "DELETE FROM billing_ledgerentry",
    "DROP TABLE orders_deliveryevent CASCADE",
)


def run_load(origin: Origin, seconds: int, users: int) -> Timeline:
    """The load; a full then a differential backup while it runs, then the moment T; the
    load goes on past T. The media snapshot is taken with each backup."""
    timeline = Timeline(Phase("load", seconds, 1))
    failed: list[BaseException] = []

    def load() -> None:
        try:
            run_locust(timeline.phase, origin, f"http://{HOST}:{origin.balancer.port}", users)
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread)
            failed.append(exc)

    thread = threading.Thread(target=load, daemon=True)
    started = time.time()
    thread.start()
    timeline.proof_drop = origin.deliver_one_in_the_sandbox()
    time.sleep(max(0.0, started + seconds * 0.2 - time.time()))
    for kind in ("full", "diff"):
        timeline.backups.append(origin.repository.backup(kind, media_root=origin.media))
        print(f"  {kind} backup {timeline.backups[-1].label} at {time.time() - started:.0f} s")
        time.sleep(2)
    # pgBackRest keeps a backup's end to the second: T a second and more after it.
    time.sleep(max(0.0, started + seconds * 0.65 - time.time()))
    timeline.target = time.time()
    print(f"  T = {moment(timeline.target)} at {timeline.target - started:.0f} s", flush=True)
    if not thread.is_alive():
        raise BenchError("the load ended before T: give it more --seconds")
    thread.join()
    if failed:
        raise failed[0]
    return timeline


def make_the_mistake(origin: Origin, timeline: Timeline) -> None:
    """Nothing writes any more; what the origin held at T is read (commit timestamps), then
    the mistake, then its WAL archived and the origin stopped."""
    origin.stop_serving()
    timeline.figures = figures(timeline.phase, origin)
    at = moment(timeline.target)
    for table in EXACT_AT_T:
        rows = origin.db.execute(
            f"""SELECT id::text, coalesce(pg_xact_commit_timestamp(xmin), '-infinity') <= %s
                FROM {table}""",
            [at],
        ).fetchall()
        timeline.at_target[table] = (
            {row[0] for row in rows if row[1]},
            {row[0] for row in rows if not row[1]},
        )
    for statement in MISTAKE:
        done = origin.db.execute(statement)
        timeline.mistake.append(
            statement + (f": {done.rowcount} rows" if done.rowcount > 0 else "")
        )
    origin.repository.wait_archived(origin.db)
    origin.db.close()
    origin.pg.stop_server()


# --------------------------------------------------------------------------- checks


def check_restored(
    db: psycopg.Connection, timeline: Timeline, media: Path, media_back: Path
) -> list[tuple[str, bool, str]]:
    """The invariants, on the cluster restored to T."""
    results: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        results.append((name, ok, detail))

    check_answered_before_t(db, timeline, check)
    check_exactly_t(db, timeline, check)
    check_wallets(db, check)
    check_custody(db, check)
    check_proofs(db, timeline.proof_drop, media, media_back, check)
    return results


def check_answered_before_t(db: psycopg.Connection, timeline: Timeline, check) -> None:
    records = timeline.phase.records
    before = [b for b, at in records["answered_at"].items() if at < timeline.target]
    after = len(records["answered_at"]) - len(before)
    stored = db.execute(
        """SELECT b.id::text, b.accepted,
                  (SELECT count(*) FROM billing_ledgerentry l WHERE l.batch_id = b.id)
           FROM orders_batch b WHERE b.id = ANY(%s::uuid[])""",
        [before],
    ).fetchall()
    unbilled = [row[0] for row in stored if row[1] > 0 and row[2] == 0]
    drops = [d for b in before for d in records["accepted"].get(b, [])]
    found = db.execute(
        "SELECT count(*) FROM orders_drop WHERE id = ANY(%s::uuid[])", [drops]
    ).fetchone()[0]
    check(
        "every batch answered 200 before T is there, with its drops and ledger entries",
        len(stored) == len(before) and found == len(drops) and not unbilled and before,
        f"{len(before)} batches answered 200 before T ({after} after), {len(stored)} restored; "
        f"{len(drops)} accepted drops in their answers, {found} restored; {len(unbilled)} with "
        "accepted drops and no ledger entry",
    )


def check_exactly_t(db: psycopg.Connection, timeline: Timeline, check) -> None:
    """Each append-only table holds exactly the origin's rows committed at or before T:
    nothing later (and the mistake's table back, with its rows)."""
    lines, ok = [], True
    for table in EXACT_AT_T:
        kept, later = timeline.at_target[table]
        restored = {row[0] for row in db.execute(f"SELECT id::text FROM {table}")}
        ok = ok and restored == kept and bool(later)
        lines.append(
            f"{table}: {len(restored)} rows, {len(kept)} committed by T on the origin, "
            f"{len(restored - kept)} not, {len(restored & later)} of the {len(later)} committed "
            "after T"
        )
    check("nothing committed after T is there, nothing before is missing", ok, "; ".join(lines))


def check_proofs(
    db: psycopg.Connection, proof_drop: str, media: Path, media_back: Path, check
) -> None:
    """Every proof file a restored drop names is back in the restored MEDIA_ROOT, byte for
    byte, the photo of the drop delivered before the backups among them."""
    names = {
        name
        for row in db.execute(
            """SELECT pod_photo, pod_signature FROM orders_drop
               WHERE pod_photo <> '' OR pod_signature <> ''"""
        )
        for name in row
        if name
    }
    missing = sorted(n for n in names if not (media_back / n).is_file())
    differ = sorted(
        n
        for n in names
        if n not in missing and (media_back / n).read_bytes() != (media / n).read_bytes()
    )
    photo = db.execute("SELECT pod_photo FROM orders_drop WHERE id = %s", [proof_drop]).fetchone()
    check(
        "proof-of-delivery photos and signatures come back with the database",
        bool(photo and photo[0]) and not missing and not differ,
        f"{len(names)} proof files named by the restored drops, {len(missing)} missing, "
        f"{len(differ)} different; the photo delivered before the backups: "
        f"{photo[0] if photo and photo[0] else 'NOT RESTORED'}",
    )


# --------------------------------------------------------------------------- the run


def restore(origin: Origin, timeline: Timeline, cleanup: contextlib.ExitStack) -> dict:
    """The origin's repository restored to T into a new cluster, and the media into a new
    MEDIA_ROOT; what the figures need."""
    print("restoring to T into a new cluster ...", flush=True)
    restored, seconds = origin.repository.restore(moment(timeline.target))
    cleanup.callback(restored.stop)
    started = time.monotonic()
    media_back = origin.workdir / "media-restored"
    snapshot = origin.repository.restore_media(media_back)
    return {
        "cluster": restored,
        "seconds": seconds,
        "media_seconds": time.monotonic() - started,
        "media_back": media_back,
        "snapshot": snapshot,
        "stopped": origin.repository.recovery_stop(restored),
    }


def report(timeline: Timeline, restored: dict, lag: ArchiveLag, started: float) -> None:
    print("\n=== figures ===")
    print("\n".join(timeline.figures))
    for backup in timeline.backups:
        print(
            f"{backup.kind} backup {backup.label} during the load: {backup.seconds:.1f} s; "
            f"database {backup.size / 2**20:.1f} MiB, copied {backup.copied / 2**20:.1f} MiB, "
            f"stored {backup.stored / 2**20:.2f} MiB compressed; media snapshot "
            f"{backup.media_bytes / 2**10:.0f} KiB"
        )
    print(lag.summary())
    print(
        f"restore to T: {restored['seconds']:.1f} s (pgbackrest restore, start, replay to T, "
        f"promote) + {restored['media_seconds']:.2f} s for the media snapshot "
        f"{restored['snapshot']}; {restored['stopped']}"
    )
    print(
        f"RTO measured: {restored['seconds'] + restored['media_seconds']:.1f} s to a writable "
        "cluster at T; RPO: 0 for a mistake (any moment in the retention window), the WAL "
        "archive lag above for a lost database disk"
    )
    print("=== mistake after T ===")
    print("\n".join(timeline.mistake))
    print(f"(whole run {time.monotonic() - started:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=45, help="the load")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--couriers", type=int, default=4, help="simulated")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    with contextlib.ExitStack() as cleanup:
        origin = Origin(cleanup, args.couriers)
        lag = ArchiveLag(origin)
        lag.thread.start()
        cleanup.callback(lag.stopping.set)
        timeline = run_load(origin, args.seconds, args.users)
        lag.stopping.set()
        lag.thread.join(timeout=5)
        make_the_mistake(origin, timeline)
        restored = restore(origin, timeline, cleanup)
        with psycopg.connect(restored["cluster"].url(DB_NAME), autocommit=True) as db:
            results = check_restored(db, timeline, origin.media, restored["media_back"])
        report(timeline, restored, lag, started)
        print("=== invariants ===")
        for name, ok, detail in results:
            print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
        return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, RuntimeError) as exc:
        print(f"\nBACKUP DRILL FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
