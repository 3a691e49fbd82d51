"""Where couriers are, for tracking (docs/contract.md §20)."""

from __future__ import annotations

from orders.models import DropStatus

# A courier is on the way to a drop while it is assigned or picked up: only then does the
# drop's tracking entry show where the courier is.
ON_THE_WAY = frozenset({DropStatus.ASSIGNED, DropStatus.PICKED_UP})
