"""The short failover run: `bench/ha.py --short`. A pg_auto_failover formation (a monitor, a
primary, its synchronous standby and an asynchronous replica), two app instances behind
HAProxy and two workers on the libpq multi-host URL, 25 s of the integrators' load while the
primary is killed -9 once: the standby is promoted, the apps and workers write on with no
restart, the lost node rejoins as a standby, and every invariant holds (it exits 1
otherwise). pg_auto_failover comes from Debian, installed by the run if missing, as `make
ha-test` installs it. `make ha-test` is the long run (the read router weighed, two
failovers), outside the suite for its length."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings


@pytest.mark.slow
def test_the_short_failover_run_keeps_every_invariant():
    done = subprocess.run(
        [sys.executable, str(Path(settings.BASE_DIR) / "bench" / "ha.py"), "--short"],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    print(done.stdout[-6000:])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "FAIL " not in done.stdout
    # bench/drill.py's seven invariants and the failover's own two.
    assert done.stdout.count("PASS ") == 9
    for failover_invariant in (
        "every batch answered 200 is stored, with its ledger entry",
        "1 failover(s), the lost nodes back as standbys",
    ):
        assert f"PASS  {failover_invariant}:" in done.stdout
    # The synchronous standby took over; the asynchronous replica is never promoted.
    assert "failover: node1 killed, node2 promoted; first write after " in done.stdout
