"""Whether this process was asked to stop: a task worker's graceful stop (SIGTERM, Ctrl-C).

The worker (core/management/commands/db_worker.py) finishes the task it is running before it
exits; a long task (a business's webhook turn, events/delivery.py) looks here between two
steps, so that a stop waits for the step under way, not for the whole task.
"""

from __future__ import annotations

import threading

requested = threading.Event()
