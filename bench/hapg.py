"""A pg_auto_failover formation on loopback: a monitor and PostgreSQL nodes.

Used by bench/ha.py (make ha-test; its short form runs in the suite,
tests/reliability/test_ha_short.py). Each node is its own `pg_autoctl` process group (the
keeper and the postmaster it runs), so killing the group is a host dying; PostgreSQL
refuses root, so as root everything runs as `postgres` (runuser), in a temporary folder
that holds the data, the sockets and pg_autoctl's state (XDG_* point there, nothing lands
in a home folder). docs/scaling.md describes the set-up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.bulk import BenchError
from tests.pgcluster import _bindir, _free_port

HOST = "127.0.0.1"
SOCKETS = "/var/run/postgresql"
# pg_auto_failover from Debian, each package by a file it installs (bench/drill.py's
# install_missing fetches those missing).
PACKAGES = {
    "pg-auto-failover-cli": "/usr/bin/pg_autoctl",
    "postgresql-15-auto-failover": "/usr/lib/postgresql/15/lib/pgautofailover.so",
}
# The monitor's health checks, tightened from their defaults (20 s before a node counts
# as unhealthy) so a failover on loopback takes seconds: docs/decisions.md.
MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "3000",
    # Before promoting a standby the monitor waits this long for the lost primary to demote
    # itself (default 30 s). It must exceed the keepers' network_partition_timeout (below),
    # after which a primary that can reach neither monitor nor standby stops taking writes:
    # then no two primaries ever take writes at once.
    "pgautofailover.primary_demote_timeout": "5000",
}
NETWORK_PARTITION_TIMEOUT = "3"  # seconds; the keepers' default is 20


class FormationError(BenchError):
    pass


@dataclass
class Node:
    name: str
    port: int
    pgdata: Path
    options: list[str]
    process: subprocess.Popen | None = None

    def postmaster_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.pgdata / "postmaster.pid").read_text().split()[0])
        return None


class Formation:
    """The monitor and the nodes; `stop()` leaves nothing running and removes the folder."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ha-pg-"))
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, user="postgres", group="postgres")
        self.env = {
            "PATH": f"{_bindir()}:/usr/bin:/bin",
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.root / "share"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            # Debian's PostgreSQL puts its sockets here whatever PGHOST says; pg_autoctl
            # reaches its local server through them. Ports are picked free, so no clash.
            "PGHOST": SOCKETS,
            "LANG": "C.UTF-8",
        }
        self.monitor = Node("monitor", _free_port(), self.root / "monitor", [])
        self.nodes: list[Node] = []

    # ------------------------------------------------------------------ processes

    def _command(self, *args: str) -> list[str]:
        command = ["env", *(f"{k}={v}" for k, v in self.env.items()), "pg_autoctl", *args]
        return ["runuser", "-u", "postgres", "--", *command] if self.as_root else command

    def _spawn(self, node: Node, *args: str) -> None:
        with (self.root / f"{node.name}.log").open("ab") as log:
            node.process = subprocess.Popen(
                self._command(*args), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def ctl(self, *args: str) -> str:
        # Its own session: `config set` signals the keeper to reload, and a keeper not yet
        # up must not turn that into a signal to our process group.
        done = subprocess.run(
            self._command(*args), capture_output=True, text=True, check=False,
            start_new_session=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise FormationError(f"pg_autoctl {' '.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout

    def start_monitor(self) -> None:
        m = self.monitor
        self._spawn(
            m, "create", "monitor", "--pgdata", str(m.pgdata), "--pgport", str(m.port),
            "--hostname", HOST, "--auth", "trust", "--no-ssl", "--run",
        )  # fmt: skip
        self._wait(lambda: self._monitor_ready(), 60, "the monitor")
        with psycopg.connect(self.monitor_dsn("postgres"), autocommit=True) as db:
            for name, value in MONITOR_SETTINGS.items():
                db.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            db.execute("SELECT pg_reload_conf()")

    def _monitor_ready(self) -> bool:
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(self.monitor_dsn(), connect_timeout=2) as db,
        ):
            db.execute("SELECT 1 FROM pgautofailover.formation")
            return True
        return False

    def monitor_dsn(self, user: str = "autoctl_node") -> str:
        # The monitor's own socket: pg_autoctl trusts local connections for its users.
        return f"host={SOCKETS} port={self.monitor.port} user={user} dbname=pg_auto_failover"

    def add_node(self, *, sync: bool = True) -> Node:
        """A node joining the formation: the first is the primary; `sync=False` makes an
        asynchronous replica that is never promoted (no quorum, candidate priority 0)."""
        name = f"node{len(self.nodes) + 1}"
        options = [] if sync else ["--candidate-priority", "0", "--replication-quorum", "false"]
        node = Node(name, _free_port(), self.root / name, options)
        self.nodes.append(node)
        self.start_node(node, create=True)
        return node

    def tune(self, node: Node) -> None:
        """The keeper's partition timeout (docs/decisions.md), once the node runs: set in its
        configuration file, and the keeper told to reload it."""
        for attempt in range(5):
            try:
                self.ctl(
                    "config", "set", "--pgdata", str(node.pgdata),
                    "timeout.network_partition_timeout", NETWORK_PARTITION_TIMEOUT,
                )  # fmt: skip
                return
            except FormationError:
                if attempt == 4:
                    raise
                time.sleep(1)

    def start_node(self, node: Node, create: bool = False) -> None:
        if create:
            monitor = f"postgres://autoctl_node@{HOST}:{self.monitor.port}/pg_auto_failover"
            self._spawn(
                node, "create", "postgres", "--pgdata", str(node.pgdata), "--pgport",
                str(node.port), "--hostname", HOST, "--listen", HOST, "--name", node.name,
                "--monitor", f"{monitor}?sslmode=disable", "--auth", "trust", "--no-ssl",
                *node.options, "--run",
            )  # fmt: skip
        else:
            self._spawn(node, "run", "--pgdata", str(node.pgdata))

    def kill(self, node: Node) -> None:
        """kill -9 the node's keeper and its postmaster at once, as its host dying."""
        pid = node.postmaster_pid()
        if node.process is not None and node.process.poll() is None:
            os.killpg(node.process.pid, signal.SIGKILL)
            node.process.wait()
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        for node in [*self.nodes, self.monitor]:
            if node.process is not None and node.process.poll() is None:
                os.killpg(node.process.pid, signal.SIGTERM)
        for node in [*self.nodes, self.monitor]:
            if node.process is None:
                continue
            try:
                node.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.process.pid, signal.SIGKILL)
                node.process.wait()
        # A postmaster that outlived its keeper (the keeper was killed) goes too.
        for node in [*self.nodes, self.monitor]:
            pid = node.postmaster_pid()
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ state

    def states(self) -> dict[str, tuple[str, str]]:
        """Each node's (reported state, goal state) as the monitor sees them."""
        with psycopg.connect(self.monitor_dsn(), connect_timeout=2) as db:
            rows = db.execute(
                "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node"
            ).fetchall()
        return {name: (reported, goal) for name, reported, goal in rows}

    def primary(self) -> Node | None:
        states = self.states()
        for node in self.nodes:
            reported, goal = states.get(node.name, ("", ""))
            if reported == goal and reported in ("single", "wait_primary", "primary"):
                return node
        return None

    def wait_settled(self, timeout: float = 120) -> None:
        """Until a node is `primary` (not `wait_primary`): its synchronous standby is in step.
        Killed before that, a primary is not failed over: promoting the standby could lose
        what the primary committed alone, and pg_auto_failover waits for it instead."""

        def settled() -> bool:
            return any(r == g == "primary" for r, g in self.states().values())

        self._wait(settled, timeout, "a primary with its synchronous standby in step")

    def wait_state(self, node: Node, wanted: tuple[str, ...], timeout: float = 120) -> None:
        def reached() -> bool:
            reported, goal = self.states().get(node.name, ("", ""))
            return reported == goal and reported in wanted

        self._wait(reached, timeout, f"{node.name} in {wanted}")

    def _wait(self, done, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(psycopg.Error):
                if done():
                    return
            time.sleep(0.3)
        raise FormationError(f"timed out waiting for {what}; logs in {self.root}")

    def hosts(self) -> tuple[str, str]:
        """HOST and PORT lists for a libpq multi-host connection string."""
        return ",".join(HOST for _ in self.nodes), ",".join(str(n.port) for n in self.nodes)

    def url(self, dbname: str, **params: str) -> str:
        """A multi-host URL that always reaches the current primary (docs/scaling.md)."""
        ports = ",".join(f"{HOST}:{n.port}" for n in self.nodes)
        query = "&".join(
            f"{k}={v}" for k, v in {"target_session_attrs": "read-write", **params}.items()
        )
        return f"postgres://postgres@{ports}/{dbname}?{query}"

    def node_dsn(self, node: Node, dbname: str = "postgres") -> str:
        return f"host={HOST} port={node.port} user=postgres dbname={dbname} connect_timeout=2"
