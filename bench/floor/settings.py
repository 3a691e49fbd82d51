"""The service's settings, with the floor's URLconf (bench/small_calls.py)."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor.urls"
