"""Routes of /api/v1: one DRF router over the apps' viewsets."""

from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from billing.api import AccountViewSet
from core.handlers import unknown_path
from core.openapi import DocsView, SchemaView
from events.api import EventViewSet, WebhookEndpointViewSet
from geo.api import ServiceAreaViewSet
from orders.api import BatchViewSet, OrderViewSet
from tracking.api import OrderListViewSet, SandboxViewSet, TrackingViewSet

router = SimpleRouter()
router.trailing_slash = "/?"  # both /orders/bulk and /orders/bulk/ answer
router.register("orders", OrderViewSet, basename="orders")
router.register("orders", TrackingViewSet, basename="tracking")
router.register("orders", OrderListViewSet, basename="order-list")
router.register("sandbox/orders", SandboxViewSet, basename="sandbox")
router.register("batches", BatchViewSet, basename="batches")
router.register("account", AccountViewSet, basename="account")
router.register("service-areas", ServiceAreaViewSet, basename="service-areas")
router.register("events", EventViewSet, basename="events")
router.register("webhook-endpoints", WebhookEndpointViewSet, basename="webhook-endpoints")


urlpatterns = [
    *router.urls,
    # Public: the OpenAPI schema and its docs page need no key.
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(), name="api-docs"),
    re_path(r"^(?P<rest>.*)$", unknown_path),
]
