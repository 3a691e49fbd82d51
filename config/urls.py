"""URL map: the API under /api/v1, the operator console under /admin, the dashboard at /."""

from django.contrib import admin
from django.http import HttpResponse, HttpResponseNotFound, HttpResponseServerError
from django.urls import include, path, re_path

from config.api import error_response
from config.api_urls import unknown_path
from config.middleware import is_api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    # Any other /api/ path: a JSON 404 even when DEBUG would show its HTML 404 page.
    re_path(r"^api/", unknown_path),
    path("healthz", lambda request: HttpResponse("ok", content_type="text/plain")),
    path("", include("accounts.urls")),
]


def handler404(request, exception=None):
    if is_api(request):
        return error_response(request, 404, "NOT_FOUND", "No such resource.")
    return HttpResponseNotFound("<h1>Not found</h1>")


def handler500(request):
    if is_api(request):
        return error_response(request, 500, "INTERNAL_ERROR", "Something went wrong on our side.")
    return HttpResponseServerError("<h1>Server error</h1>")
