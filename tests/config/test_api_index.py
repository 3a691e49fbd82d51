"""GET /api/v1/, the address `make run` prints: a JSON index of the docs and the schema."""

from __future__ import annotations

import pytest

from tests.helpers import assert_error


@pytest.mark.parametrize("path", ["/api/v1/", "/api/v1"])
def test_the_api_root_points_at_the_docs_and_the_schema_without_a_key(db, api, path):
    response = api.client.get(path, HTTP_ACCEPT="text/html")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["X-Request-Id"]
    body = response.json()
    assert (body["statusCode"], body["success"]) == (200, True)
    data = body["data"]
    assert data["docs_url"] == "http://testserver/api/v1/docs/"
    assert data["schema_url"] == "http://testserver/api/v1/schema/"
    # Both links answer, without a key either.
    assert api.client.get(data["docs_url"]).status_code == 200
    schema = api.client.get(data["schema_url"], HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert schema.json()["openapi"].startswith("3.")


def test_the_api_root_ignores_a_bad_key(db, api):
    response = api.client.get("/api/v1/", HTTP_AUTHORIZATION="Bearer svc_test_nope")

    assert response.status_code == 200
    assert response.json()["data"]["docs_url"].endswith("/api/v1/docs/")


def test_the_api_root_answers_other_methods_with_the_405_envelope(db, api):
    response = api.client.post("/api/v1/", b"{}", content_type="application/json")

    assert_error(response, 405, "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api/v1/nope/", "/api/v1//", "/api/v1/docs/x"])
def test_unknown_paths_under_the_api_root_stay_a_404_envelope(db, api, path):
    assert_error(api.client.get(path), 404, "NOT_FOUND")
