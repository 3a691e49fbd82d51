"""WSGI entry point for gunicorn."""

import importlib
import os

from django.core.wsgi import get_wsgi_application

from core.memory import settle_heap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# The MCP server: other processes load it at its first call (agents/views.py); a serving
# process loads it here, before it forks, so that no caller waits for it.
importlib.import_module("agents.server")
settle_heap()  # after loading: full collections skip the loaded heap (core/memory.py)
