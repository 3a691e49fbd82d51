"""The serving process hides its loaded heap from the garbage collector (core/memory.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, sys
import config.wsgi
print(gc.get_freeze_count(), "orders.api" in sys.modules, "dashboard.views" in sys.modules)
"""


def test_the_wsgi_module_loads_every_view_then_freezes_the_heap():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    frozen, api_loaded, dashboard_loaded = int(out[0]), out[1], out[2]
    assert frozen > 50_000  # Django, DRF and our modules: ~130,000 objects
    assert (api_loaded, dashboard_loaded) == ("True", "True")
