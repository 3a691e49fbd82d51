"""The service's URLs, and /bench/floor: the framework floor of a small call.

The view authenticates nothing and runs one indexed SELECT of one row on the request's
connection, behind the same middleware as every call: what any Django call of ours costs
before it does its own work.
"""

from django.db import connection
from django.http import HttpResponse
from django.urls import include, path

ONE_ROW = "SELECT id, name FROM accounts_business ORDER BY id LIMIT 1"


def floor(request):
    with connection.cursor() as cursor:
        cursor.execute(ONE_ROW)
        cursor.fetchone()
    return HttpResponse(b'{"ok":true}', content_type="application/json")


urlpatterns = [path("bench/floor", floor), path("", include("config.urls"))]
