"""Routes of /api/v1: one DRF router over the apps' viewsets."""

from django.conf import settings
from django.http import HttpResponse
from django.urls import path, re_path, reverse
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.routers import SimpleRouter

from billing.api import AccountViewSet
from core.api import ApiError, envelope
from core.handlers import unknown_path
from core.openapi import DocsView, SchemaView
from courier_app.api import CourierSessionViewSet, CourierViewSet
from events.api import EventViewSet, WebhookEndpointViewSet
from fleet.api import VehicleTypeViewSet
from geo.api import ServiceAreaViewSet
from orders.api import BatchViewSet, OrderViewSet
from tracking.api import OrderEditViewSet, OrderListViewSet, SandboxViewSet, TrackingViewSet

router = SimpleRouter()
router.trailing_slash = "/?"  # both /orders/bulk and /orders/bulk/ answer
router.register("orders", OrderViewSet, basename="orders")
router.register("orders", TrackingViewSet, basename="tracking")
router.register("orders", OrderListViewSet, basename="order-list")
# Last of the orders: its /orders/<drop_id> must not shadow /orders/bulk and the others.
router.register("orders", OrderEditViewSet, basename="order-edit")
router.register("sandbox/orders", SandboxViewSet, basename="sandbox")
router.register("batches", BatchViewSet, basename="batches")
router.register("account", AccountViewSet, basename="account")
router.register("service-areas", ServiceAreaViewSet, basename="service-areas")
router.register("vehicle-types", VehicleTypeViewSet, basename="vehicle-types")
router.register("events", EventViewSet, basename="events")
router.register("webhook-endpoints", WebhookEndpointViewSet, basename="webhook-endpoints")
router.register("courier", CourierSessionViewSet, basename="courier-session")
router.register("courier", CourierViewSet, basename="courier")


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
            "guide_url": request.build_absolute_uri(reverse("api-guide")),
        }
    )


# The integrators' guides of docs/, served as they are in the repository (Markdown, which
# reads as plain text): a deployed service's integrators have no clone. Their links to one
# another are relative (webhooks.md), so they resolve to these same routes.
GUIDES = {
    "api",
    "webhooks",
    "sandbox",
    "csv",
    "contract",
    "changelog",
    "notifications",
    "agents",
}


@extend_schema(exclude=True)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
def api_guide(request, name: str = "api"):
    """GET /api/v1/guide/ (docs/api.md) and /api/v1/guide/<name>.md: public, like the docs."""
    if name not in GUIDES:
        raise ApiError(404, "NOT_FOUND", "No such guide.")
    text = (settings.BASE_DIR / "docs" / f"{name}.md").read_bytes()
    return HttpResponse(text, content_type="text/plain; charset=utf-8")


urlpatterns = [
    path("", api_index, name="api-index"),
    *router.urls,
    # Public: the OpenAPI schema and its docs page need no key.
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(), name="api-docs"),
    path("guide/", api_guide, name="api-guide"),
    path("guide", api_guide),  # paths answer with or without the slash, never redirected
    path("guide/<slug:name>.md", api_guide, name="api-guide-page"),
    re_path(r"^(?P<rest>.*)$", unknown_path),
]
