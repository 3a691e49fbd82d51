"""Identifiers made in bulk: a batch needs thousands at once, as the text they are sent as.

One call to the operating system's random source per batch instead of one per id, and no
uuid.UUID object per id: the ids go to COPY and into the JSON answer as text, so that is
what is made (bench/profile_bulk.py measured 10,000 uuid4() calls and their str() at ~8 ms
for a 1000-drop batch).
"""

from __future__ import annotations

import os
import time
import uuid

# The variant nibble of RFC 9562 (binary 10xx) for each random hex digit.
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def uuid7_texts(count: int, unix_ms: int | None = None) -> list[str]:
    """`count` UUIDv7 (RFC 9562) in canonical text: a 48-bit millisecond time, 74 random bits.

    Time-ordered ids keep primary-key inserts at the right edge of the index instead of on
    random pages; within one millisecond their order is random, which nothing relies on.
    """
    if count <= 0:
        return []
    stamp = f"{unix_ms if unix_ms is not None else time.time_ns() // 1_000_000:012x}"
    head = f"{stamp[:8]}-{stamp[8:]}-7"
    noise = os.urandom(10 * count).hex()
    variant = _VARIANT
    return [
        f"{head}{r[:3]}-{variant[r[3]]}{r[4:7]}-{r[7:19]}"
        for r in (noise[i : i + 20] for i in range(0, 20 * count, 20))
    ]


def uuid7() -> uuid.UUID:
    """One UUIDv7, for a model's default: batches, orders and drops made one at a time."""
    return uuid.UUID(uuid7_texts(1)[0])
