"""The short cluster run: `bench/cluster.py --short`, 15 s of locust load through
HAProxy, two app instances, PgBouncer in transaction mode, Redis and two workers, no faults;
every invariant it prints must hold (it exits 1 otherwise). Six simulated couriers
(bench/couriers_sim.py) take the dispatcher's offers of the integrators' live batches and
deliver them: no order assigned twice, no offer of an order another courier holds, every
waiting live order served. `make cluster-test` is the long run with faults, outside the
suite for its length."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings


@pytest.mark.slow
def test_the_short_cluster_run_keeps_every_invariant():
    done = subprocess.run(
        [sys.executable, str(Path(settings.BASE_DIR) / "bench" / "cluster.py"), "--short"],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    print(done.stdout[-6000:])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.count("PASS ") == 12
    for dispatch_invariant in (
        "no order assigned twice",
        "no offer of an order another courier holds",
        "every waiting live order assigned, offered or flagged",
        "couriers delivered, with no 5xx but the documented 503",
        "cash custody adds up: businesses' COD collected = couriers' = in hand + handed over",
    ):
        assert f"PASS  {dispatch_invariant}:" in done.stdout
    assert "FAIL " not in done.stdout
    # No part failed, so nothing was unavailable: not even the documented 503.
    assert " 0 answers 503 " in done.stdout
