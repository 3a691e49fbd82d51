"""make run's processes, gunicorn and one task worker, started and stopped together.

`make run` execs this script as its last recipe line, so it is make's child. Whatever stops
`make run` stops everything it started: SIGTERM to make (make passes it on to this process),
SIGINT or SIGHUP to the terminal's job (Ctrl-C, a closed terminal: the whole process group
gets it), make killed outright (SIGKILL: the kernel tells us, PR_SET_PDEATHSIG), or either
child exiting (gunicorn failing to bind its port, say). Each child then gets SIGTERM
(gunicorn stops its workers, the task worker finishes its task), and after GRACE_SECONDS
SIGKILL, to its whole process group so that no gunicorn worker outlives its master. The
children ask the kernel for SIGTERM when this process dies, so even a SIGKILL here leaves
nothing serving. (SIGINT or SIGHUP to make's pid alone stops nothing: GNU make then waits
for its recipe, taking it that the signal reached the whole group, as a terminal's does.)

Usage (make run does this): BASE_URL=... python bin/serve.py --bind 127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE_SECONDS = 10.0
POLL_SECONDS = 0.2
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
REPOSITORY = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the virtualenv's bin/: gunicorn sits beside python


def say(line: str) -> None:
    """Print, unless the terminal has gone (a hangup): stopping the children comes first."""
    with contextlib.suppress(OSError):
        print(line, flush=True)


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGTERM when `parent` dies; exit now if it has died already."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # it died before the request was in place
        os._exit(1)


def start(command: list[str]) -> subprocess.Popen:
    """A child in its own process group (a terminal's Ctrl-C reaches this process only, and
    one killpg reaches the child's own children), that dies with this process."""
    supervisor = os.getpid()
    return subprocess.Popen(
        command,
        cwd=REPOSITORY,
        process_group=0,
        preexec_fn=lambda: die_with_parent(supervisor),
    )


class Signals:
    """The stopping signals received so far; the main loop looks between two polls."""

    def __init__(self) -> None:
        self.received: list[int] = []
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda signum, frame: self.received.append(signum))


def stop_all(children: list[subprocess.Popen]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"serve: pid {child.pid} still running after {GRACE_SECONDS:.0f} s, killed")
        # Whatever the child left in its group (a gunicorn worker whose master was killed).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def supervise(children: dict[str, subprocess.Popen], signals: Signals) -> int:
    """Wait for a stopping signal or a child's exit; return the status make run ends with."""
    while not signals.received:
        for name, child in children.items():
            if (code := child.poll()) is not None:
                say(f"serve: {name} exited ({code}); stopping the rest")
                return code or 1
        time.sleep(POLL_SECONDS)
    return 128 + signals.received[0]


def log_options() -> list[str]:
    """gunicorn's own lines at LOG_LEVEL (make run: WARNING), and its line per request only
    when LOG_LEVEL says INFO or DEBUG."""
    level = os.environ.get("LOG_LEVEL", "INFO").lower()
    access_log = ["--access-logfile", "-"] if level in ("debug", "info") else []
    return ["--log-level", level, *access_log]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bind", required=True, help="HOST:PORT for gunicorn")
    parser.add_argument("--workers", default="2", help="gunicorn workers (default: 2)")
    args = parser.parse_args()

    signals = Signals()
    die_with_parent(os.getppid())  # make killed outright tells nobody
    children: dict[str, subprocess.Popen] = {}
    try:
        children["db_worker"] = start([sys.executable, "manage.py", "db_worker", "--no-reload"])
        say(
            f"Worker:      manage.py db_worker, pid {children['db_worker'].pid}"
            " (tasks, webhooks, periodic jobs)"
        )
        gunicorn = [str(BIN / "gunicorn"), "-c", "gunicorn.conf.py", "config.wsgi"]
        gunicorn += ["--bind", args.bind, "--workers", args.workers, *log_options()]
        children["gunicorn"] = start(gunicorn)
        return supervise(children, signals)
    finally:
        stop_all(list(children.values()))


if __name__ == "__main__":
    sys.exit(main())
