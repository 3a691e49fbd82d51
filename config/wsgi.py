"""WSGI entry point for gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

from core.memory import settle_heap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
settle_heap()  # after loading: full collections skip the loaded heap (core/memory.py)
