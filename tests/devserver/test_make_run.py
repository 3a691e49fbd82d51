"""`make run` stops everything it started, however it is stopped; what it prints stays
readable, and what a newcomer tries first works on it.

Each case runs the real `make run` in a copy of the repository (its own SQLite, .env and
HOME; the virtualenv is the repository's), waits until the printed address answers, stops
make the way a process manager or a terminal would, and then looks for anything left: no
process of make's tree may be alive and the port must be free to bind. Before bin/serve.py,
SIGTERM to make left gunicorn serving the port, and the next `make run` failed with
"Connection in use".
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.webhook_receiver import WebhookReceiver

# A real `make run` in a copy of the work tree: left out of the fast loop (tests/README.md).
pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
START_SECONDS = 180  # a first run migrates a new SQLite: ~15 s on a quiet machine
STOP_SECONDS = 20
# What a copy leaves out: what `make run` writes (a copy starts as a clone would), and caches.
LEFT_OUT = shutil.ignore_patterns(
    ".git", ".venv", "db.sqlite3*", ".env", "staticfiles", "media", ".demo.txt", ".demo-key",
    "__pycache__", ".ruff_cache", ".hypothesis", "test-artifacts", "screenshots", "*.egg-info",
)  # fmt: skip


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The work tree, copied with its files' times (make compares them), beside the
    repository's virtualenv."""
    copy = tmp_path_factory.mktemp("make-run") / "repo"
    shutil.copytree(REPOSITORY, copy, ignore=LEFT_OUT, symlinks=True)
    (copy / ".venv").symlink_to(REPOSITORY / ".venv")
    return copy


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Whether a new server can listen on it as gunicorn does (SO_REUSEADDR: a connection of
    the old one waiting out TIME_WAIT is no obstacle, a socket still bound is)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
        return True


def start_make_run(clone: Path, port: int, log: Path) -> subprocess.Popen:
    """`make run` as a newcomer starts it, in a process group of its own (a terminal's job).
    The virtualenv's stamp is taken as up to date (-o): the test must never reinstall the
    shared virtualenv from a copy."""
    stamp = hashlib.sha1((clone / "pyproject.toml").read_bytes()).hexdigest()[:12]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(clone.parent),
        "LANG": "C.UTF-8",
    }
    with log.open("wb") as output:
        return subprocess.Popen(
            ["make", "-o", f".venv/.installed-{stamp}", "run", f"PORT={port}"],
            cwd=clone,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            process_group=0,
        )


def printed_address(make: subprocess.Popen, log: Path) -> tuple[str, int]:
    """The dashboard address make run prints, once the worker is up too and it answers."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert make.poll() is None, log.read_text(errors="replace")
        text = log.read_text(errors="replace")
        address = re.search(r"^Dashboard: +http://([\d.]+):(\d+)/", text, re.M)
        if address and re.search(r"^Worker: .* pid \d+", text, re.M):
            with contextlib.suppress(OSError):
                answering = http.client.HTTPConnection(address[1], int(address[2]), timeout=5)
                answering.request("GET", "/healthz")
                if answering.getresponse().status == 200:
                    return address[1], int(address[2])
        time.sleep(0.2)
    pytest.fail(f"make run did not answer in {START_SECONDS} s:\n{log.read_text()}")


def process_tree(root: int) -> set[tuple[int, str]]:
    """Every live descendant of `root` and root itself, as (pid, start time): the start time
    tells a process from a later one that got its pid."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := read_stat(int(entry.name))):
            parents[int(entry.name)] = int(stat[1])
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return {(pid, stat[19]) for pid in tree if (stat := read_stat(pid))}


def read_stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command (state is [0], ppid [1]); None once the
    process is gone or only a zombie waiting to be reaped."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return None if fields[0] in "ZX" else fields


def alive(processes: set[tuple[int, str]]) -> set[tuple[int, str]]:
    return {
        (pid, started) for pid, started in processes if (s := read_stat(pid)) and s[19] == started
    }


def command_lines(processes: set[tuple[int, str]]) -> list[str]:
    lines = []
    for pid, _ in processes:
        with contextlib.suppress(OSError):
            lines.append(
                f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            )
    return lines


STOPS = {
    # A process manager (systemd, supervisord, docker stop) stopping make; make passes
    # SIGTERM on to the recipe's process, which used to be a shell that left gunicorn behind.
    "sigterm-to-make": lambda make: make.send_signal(signal.SIGTERM),
    # Ctrl-C in the terminal: SIGINT to the foreground job's whole process group (a hangup,
    # SIGHUP to the group, takes the same way through bin/serve.py).
    "ctrl-c-to-the-group": lambda make: os.killpg(make.pid, signal.SIGINT),
    # make killed outright tells nobody: bin/serve.py learns of it from the kernel.
    "sigkill-to-make": lambda make: make.send_signal(signal.SIGKILL),
}


@pytest.mark.parametrize("stop", list(STOPS))
def test_stopping_make_run_leaves_nothing_running(clone, tmp_path, stop):
    port = free_port()
    log = tmp_path / "make-run.log"
    make = start_make_run(clone, port, log)
    started: set[tuple[int, str]] = set()
    try:
        assert printed_address(make, log) == (HOST, port)
        started = process_tree(make.pid)
        # make, the serving script, the task worker, gunicorn's master and its two workers.
        assert len(started) >= 6, command_lines(started)

        STOPS[stop](make)
        make.wait(timeout=STOP_SECONDS)
        deadline = time.monotonic() + STOP_SECONDS
        while alive(started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(started), command_lines(alive(started))
        assert port_is_free(port)
    finally:
        for pid, _ in alive(started | process_tree(make.pid)):  # nothing left by a failure either
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        make.wait()


def running_in(directory: Path) -> list[str]:
    """The live processes whose working directory is `directory` (all that make run starts)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            here = entry.name.isdigit() and os.readlink(entry / "cwd") == str(directory)
            if here and read_stat(int(entry.name)):
                found.append(entry.name)
    return command_lines({(int(pid), "") for pid in found})


def test_make_run_on_a_taken_port_says_so_and_leaves_nothing(clone, tmp_path):
    """gunicorn cannot bind: make run fails with gunicorn's reason, and the task worker it
    started beside gunicorn is stopped too (a child's exit stops the rest)."""
    log = tmp_path / "make-run.log"
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind((HOST, 0))
        taken.listen()
        make = start_make_run(clone, taken.getsockname()[1], log)
        try:
            assert make.wait(timeout=START_SECONDS) != 0
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait()
    output = log.read_text(errors="replace")
    assert "Connection in use" in output
    assert "serve: gunicorn exited" in output
    deadline = time.monotonic() + STOP_SECONDS
    while running_in(clone.resolve()) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = running_in(clone.resolve())
    for line in left:  # nothing left by a failure either
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert left == []


def call(port: int, method: str, path: str, body: dict | None = None, key: str = ""):
    """One request to the running service: (status, headers, body as text)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    connection.request(method, path, None if body is None else json.dumps(body), headers)
    answer = connection.getresponse()
    return answer.status, dict(answer.getheaders()), answer.read().decode()


def log_lines_at_info_or_json(output: str) -> list[str]:
    """Lines a quiet run must not print: JSON log lines, and any line at INFO level."""
    return [
        line
        for line in output.splitlines()
        if line.lstrip().startswith("{") or re.search(r"\bINFO\b", line)
    ]


QUIET_SECONDS = 12  # past one round of the worker's periodic jobs (every 10 s)


def test_make_run_stays_quiet_and_serves_what_a_newcomer_tries(clone, tmp_path):
    """On another port than 8000: the guide's links name that port; a webhook endpoint on
    this machine is accepted and called (DEBUG on SQLite); and after its banner make run
    prints no JSON log line and nothing at INFO, though the worker has been running and
    requests have been served."""
    port = free_port()
    log = tmp_path / "make-run.log"
    make = start_make_run(clone, port, log)
    receiver = WebhookReceiver()
    started_processes: set[tuple[int, str]] = set()
    try:
        assert printed_address(make, log) == (HOST, port)
        started_processes = process_tree(make.pid)
        started = time.monotonic()
        banner = log.read_text(errors="replace")
        assert (clone / ".demo.txt").read_text() in banner  # the logins, kept as printed
        key = re.search(r"^Sandbox key: (svc_test_\S+)$", banner, re.M)[1]

        status, headers, guide = call(port, "GET", "/api/v1/guide/")
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        assert f'href="http://{HOST}:{port}/api/v1/schema/"' in guide
        assert f"BASE=http://{HOST}:{port}/api/v1" in guide  # the examples too
        assert not re.findall(r'(?:href|src)="[^"]*:8000', guide)

        status, _, created = call(
            port, "POST", "/api/v1/webhook-endpoints", {"url": receiver.url()}, key
        )
        assert status == 201, created
        endpoint = json.loads(created)["data"]
        receiver.trust(endpoint["secret"])
        status, _, _ = call(
            port, "POST", f"/api/v1/webhook-endpoints/{endpoint['id']}/test", {}, key
        )
        assert status in (200, 201, 202)
        [delivered] = receiver.wait_for(1, timeout=60)
        assert delivered.verified and delivered.json["type"] == "webhook.test"

        time.sleep(max(0.0, QUIET_SECONDS - (time.monotonic() - started)))
        after_banner = log.read_text(errors="replace")[len(banner) :]
        assert log_lines_at_info_or_json(after_banner) == [], after_banner
    finally:
        receiver.stop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            make.wait(timeout=STOP_SECONDS)
        for pid, _ in alive(started_processes | process_tree(make.pid)):  # nothing left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        make.wait()
