"""What orders tells the layers above it, without importing them."""

from __future__ import annotations

from django.dispatch import Signal

# A batch created drops with a sandbox scenario; sent inside the batch's transaction with
# `due_at`, when their first step is due. tracking.apps connects the scenario runner to it.
scenarios_started = Signal()
