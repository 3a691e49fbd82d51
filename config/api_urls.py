"""Routes of /api/v1: one DRF router over the apps' viewsets."""

from django.urls import path, re_path, reverse
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.routers import SimpleRouter

from billing.api import AccountViewSet
from config.guides import ATTACHMENT_PATH, guide_file, guide_markdown, guide_page
from core.api import envelope
from core.handlers import unknown_path
from core.openapi import DocsView, SchemaView
from couriers.api import CourierSessionViewSet, CourierViewSet
from events.api import EventViewSet, WebhookEndpointViewSet
from fleet.api import VehicleTypeViewSet
from geo.api import ServiceAreaViewSet
from notifications.api import sms_inbound
from orders.api import BatchViewSet
from tracking.api import ORDERS_ROUTES, SandboxViewSet

router = SimpleRouter()
router.trailing_slash = "/?"  # both /orders/bulk and /orders/bulk/ answer
# Every /orders route is tracking's (tracking/api.py), in the order they must be tried.
for viewset, basename in ORDERS_ROUTES:
    router.register("orders", viewset, basename=basename)
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


urlpatterns = [
    path("", api_index, name="api-index"),
    *router.urls,
    # Public: the OpenAPI schema and its docs page need no key.
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(), name="api-docs"),
    # The SMS provider's inbound webhook: replies to our texts, STOP and START (docs/api.md).
    re_path(r"^sms/inbound/?$", sms_inbound, name="sms-inbound"),
    # The integrators' guides of docs/ (config/guides.py): pages, their Markdown, their files.
    path("guide/", guide_page, name="api-guide"),
    path("guide", guide_page),  # paths answer with or without the slash, never redirected
    path("guide/<slug:name>.md", guide_markdown, name="api-guide-markdown"),
    re_path(rf"^guide/(?P<path>{ATTACHMENT_PATH})$", guide_file, name="api-guide-file"),
    path("guide/<slug:name>", guide_page, name="api-guide-page"),
    path("guide/<slug:name>/", guide_page),
    re_path(r"^(?P<rest>.*)$", unknown_path),
]
