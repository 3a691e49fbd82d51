"""The framework floor of bench/small_calls.py: the service's own settings and URLs plus one
bare view, served by the same gunicorn. Never part of the service: only the bench sets
DJANGO_SETTINGS_MODULE=bench.floor.settings."""
