"""The serving process's heap, settled once it is loaded (docs/decisions.md, "The serving
process freezes its loaded heap and collects less often").

CPython's cyclic garbage collector now and then walks every object the process holds (a
full, oldest-generation collection): Django, DRF and our modules are ~130,000 of them,
none of them ever garbage. In a gunicorn worker serving 1000-drop batches such a walk came
every ~15 batches and took ~100 ms, a pause of a whole batch's length for one caller in
fifteen (bench/gc_pauses.py). Once every view is loaded, `gc.freeze()` moves the loaded
heap to the permanent generation, which collections skip: the same collections then take
a fraction of that.

The youngest generation is collected every 20,000 net allocations of tracked objects
instead of CPython's 700 (and each older one after 20 of the younger, not 10): a batch
allocates hundreds of thousands, so at 700 the collector ran hundreds of times a call, and
the small calls served after a batch paid for its collections. Measured through gunicorn
(bench/small_calls.py, four runs of each in turn): `GET /account` 1.93–2.06× the floor →
1.80–1.82×, tracking 20 ids 2.63–2.73× → 2.44–2.49×. What waits longer to be collected is
only cyclic garbage, a few MB at most.
"""

from __future__ import annotations

import gc

# (youngest, middle, oldest): CPython's default is (700, 10, 10).
SERVING_THRESHOLDS = (20_000, 20, 20)


def settle_heap() -> None:
    """Import every view (as the first request would), hide the loaded heap from the
    collector, and collect less often. Called once per serving process, after the WSGI
    application is built."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports the URL conf and every view module
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)
