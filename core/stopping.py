"""Whether this process was asked to stop: a task worker's graceful stop (SIGTERM, Ctrl-C).

The worker (core/management/commands/db_worker.py) finishes the task it is running before it
exits; a long task looks here between two steps, so that a stop waits for the step under way,
not for the whole task; the worker's webhook sender (events/delivery.py) starts no more
attempts and records those in flight.
"""

from __future__ import annotations

import threading

requested = threading.Event()
