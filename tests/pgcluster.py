"""A throwaway PostgreSQL cluster from the installed binaries, for tests and benchmarks.

PostgreSQL refuses to run as root, so when we are root the server runs as the
`postgres` system user (runuser); the data directory lives in a temporary folder
that is removed on stop. fsync is off: the data is thrown away anyway.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _bindir() -> Path:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    raise RuntimeError("PostgreSQL server binaries (pg_ctl) not found")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresCluster:
    def __init__(self, max_connections: int = 200) -> None:
        self.bindir = _bindir()
        self.port = _free_port()
        self.host = "127.0.0.1"
        self.user = "postgres"
        self.max_connections = max_connections
        self.root = Path(tempfile.mkdtemp(prefix="delivery-pg-"))
        self.datadir = self.root / "data"
        self.as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> PostgresCluster:
        if self.as_root:
            shutil.chown(self.root, user="postgres", group="postgres")
        self._run(
            "initdb",
            "-D",
            str(self.datadir),
            "-U",
            self.user,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        )
        self.start_server()
        return self

    def start_standby_of(self, primary: PostgresCluster) -> PostgresCluster:
        """A hot standby of `primary`: its base backup (pg_basebackup -R), then streaming."""
        if self.as_root:
            shutil.chown(self.root, user="postgres", group="postgres")
        self._run(
            "pg_basebackup",
            "-h",
            primary.host,
            "-p",
            str(primary.port),
            "-U",
            primary.user,
            "-D",
            str(self.datadir),
            "-R",  # standby.signal and primary_conninfo: it streams from the primary
            "-X",
            "stream",
            "--no-sync",
            # At once: the default waits for a spread checkpoint, up to two minutes of idling.
            "--checkpoint=fast",
        )
        self.start_server()
        return self

    def _pg_ctl(self, action: str, *args: str) -> None:
        options = (
            f"-p {self.port} -c listen_addresses={self.host} -k {self.root} "
            f"-c max_connections={self.max_connections} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=256MB "
            # SSD-like costs, as recommended for production in docs/deployment.md.
            "-c random_page_cost=1.1"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.datadir),
            "-o",
            options,
            # Always a log file: without one the server would hold our stderr pipe open.
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            *args,
            action,
        )

    # An outage on purpose, data kept: stop_server() and start_server(), or restart_server().
    # "fast" is what a service manager does: sessions are terminated, not waited for.

    def start_server(self) -> None:
        self._pg_ctl("start")
        self._wait_ready()

    def stop_server(self) -> None:
        self._pg_ctl("stop", "-m", "fast")

    def restart_server(self) -> None:
        self._pg_ctl("restart", "-m", "fast")
        self._wait_ready()

    def crash_server(self) -> None:
        """The postmaster gone as if killed: no shutdown checkpoint, sessions cut."""
        self._run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop")

    def promote(self) -> None:
        """A standby becomes a primary (what a failover manager does on its decision)."""
        self._run("pg_ctl", "-D", str(self.datadir), "-w", "-t", "60", "promote")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex((self.host, self.port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"PostgreSQL did not start; see {self.root / 'server.log'}")

    def stop(self) -> None:
        try:
            if self.datadir.exists():
                self._run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://{self.user}@{self.host}:{self.port}/{dbname}"

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
