"""Routes of /api/v1: one DRF router over the apps' viewsets."""

from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt
from rest_framework.routers import SimpleRouter

from accounts.api import AccountViewSet
from config.api import error_response
from config.openapi import DocsView, SchemaView
from geo.api import ServiceAreaViewSet
from orders.api import BatchViewSet, OrderViewSet
from tracking.api import SandboxViewSet, TrackingViewSet

router = SimpleRouter()
router.trailing_slash = "/?"  # both /orders/bulk and /orders/bulk/ answer
router.register("orders", OrderViewSet, basename="orders")
router.register("orders", TrackingViewSet, basename="tracking")
router.register("sandbox/orders", SandboxViewSet, basename="sandbox")
router.register("batches", BatchViewSet, basename="batches")
router.register("account", AccountViewSet, basename="account")
router.register("service-areas", ServiceAreaViewSet, basename="service-areas")


@csrf_exempt  # any method, cookies or not: an unknown path is a 404, never a CSRF page
def unknown_path(request, rest=""):
    """Any other path under /api/v1 is a JSON 404 for every method, in DEBUG too."""
    return error_response(request, 404, "NOT_FOUND", "No such resource.")


urlpatterns = [
    *router.urls,
    # Public: the OpenAPI schema and its docs page need no key.
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(), name="api-docs"),
    re_path(r"^(?P<rest>.*)$", unknown_path),
]
