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
