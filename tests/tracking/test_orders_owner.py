"""One owner of /orders (docs/decisions.md): every /api/v1/orders route is declared in
tracking/api.py, the app above orders that can call both apps' services."""

from __future__ import annotations

from django.urls import resolve

from config.api_urls import router
from tracking import api


def test_every_orders_route_is_tracking_apis():
    routes = [url for url in router.urls if url.pattern.regex.pattern.startswith("^orders")]
    # bulk, quote, cancel, tracking, the listing, a drop's label, a drop's edit
    assert len(routes) == 7
    assert {url.callback.cls.__module__ for url in routes} == {"tracking.api"}
    assert {url.callback.cls for url in routes} == {viewset for viewset, _ in api.ORDERS_ROUTES}


def test_the_urls_resolve_as_before():
    drop_id = "0190b5c2-7d1e-7a3b-9c4d-5e6f7a8b9c0d"
    names = {
        "/api/v1/orders/bulk": "orders-bulk",
        "/api/v1/orders/quote": "orders-quote",
        "/api/v1/orders/tracking": "tracking-tracking",
        "/api/v1/orders/cancel": "tracking-cancel",
        "/api/v1/orders": "order-list-list",
        f"/api/v1/orders/{drop_id}": "order-edit-detail",
        f"/api/v1/orders/{drop_id}/label.pdf": "order-label-label",
    }
    for path, name in names.items():
        match = resolve(path)
        assert (match.url_name, match.func.cls.__module__) == (name, "tracking.api"), path
