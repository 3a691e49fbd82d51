"""The serving process's heap, settled once it is loaded (docs/decisions.md, issue 34).

CPython's cyclic garbage collector now and then walks every object the process holds (a
full, oldest-generation collection): Django, DRF and our modules are ~130,000 of them,
none of them ever garbage. In a gunicorn worker serving 1000-drop batches such a walk came
every ~15 batches and took ~100 ms, a pause of a whole batch's length for one caller in
fifteen (bench/gc_pauses.py). Once every view is loaded, `gc.freeze()` moves the loaded
heap to the permanent generation, which collections skip: the same collections then take
a fraction of that. Nothing else changes: the thresholds are CPython's.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Import every view (as the first request would), then hide the loaded heap from the
    collector. Called once per serving process, after the WSGI application is built."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports the URL conf and every view module
    gc.collect()
    gc.freeze()
