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
print(gc.get_freeze_count(), "orders.api" in sys.modules, "dashboard.views" in sys.modules,
      "agents.server" in sys.modules)
"""

THRESHOLDS = """
import gc
before = gc.get_threshold()
import config.wsgi
print(*before, *gc.get_threshold())
"""

# A process that reads the URL conf without serving (a manage.py command's system checks, a
# task worker): every view module, but not the MCP SDK (agents/views.py).
URLS_ONLY = """
import sys, django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
print("agents.views" in sys.modules, "agents.server" in sys.modules, "mcp" in sys.modules)
"""


def probe(code: str) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.split()


def test_the_wsgi_module_loads_every_view_then_freezes_the_heap():
    out = probe(PROBE)
    frozen, loaded = int(out[0]), out[1:]
    assert frozen > 50_000  # Django, DRF and our modules: ~130,000 objects
    assert loaded == ["True", "True", "True"]  # the API, the dashboard, the MCP server


def test_reading_the_urls_leaves_the_mcp_sdk_to_the_first_mcp_call():
    assert probe(URLS_ONLY) == ["True", "False", "False"]


def test_the_serving_process_collects_its_young_objects_less_often():
    """CPython's 700 allocations per young collection ran the collector hundreds of times a
    batch, and the small calls after a batch paid for it (core/memory.py)."""
    from core.memory import SERVING_THRESHOLDS

    before, after = (
        tuple(map(int, half)) for half in (probe(THRESHOLDS)[:3], probe(THRESHOLDS)[3:])
    )
    assert before == (700, 10, 10)
    assert after == SERVING_THRESHOLDS == (20_000, 20, 20)
