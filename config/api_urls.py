"""Routes of /api/v1: one DRF router over the apps' viewsets."""

from django.urls import path, re_path, reverse
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.routers import SimpleRouter

from billing.api import AccountViewSet
from core.api import envelope
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


@extend_schema(exclude=True)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
def api_index(request):
    """GET /api/v1/, the address `make run` prints: where the docs and the schema are.

    Public, like the docs it points to; any other method is a 405 in the envelope.
    """
    return envelope(
        {
            "name": "Delivery Orders API",
            "version": "v1",
            "docs_url": request.build_absolute_uri(reverse("api-docs")),
            "schema_url": request.build_absolute_uri(reverse("api-schema")),
            "guide": "docs/api.md in the repository",
        }
    )


urlpatterns = [
    path("", api_index, name="api-index"),
    *router.urls,
    # Public: the OpenAPI schema and its docs page need no key.
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(), name="api-docs"),
    re_path(r"^(?P<rest>.*)$", unknown_path),
]
