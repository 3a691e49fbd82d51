"""Steps the browser tests share: logging in as a business or an operator, calling the API."""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid

import orjson
from playwright.sync_api import Page, expect

PASSWORD = "correct horse battery"
# Straight to the live server, whatever proxy the environment names.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def nav(page: Page, name: str) -> None:
    """Follow a link of the dashboard's main navigation."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name).click()


def log_in(page: Page, email: str, password: str = PASSWORD) -> None:
    page.goto("/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()


def admin_log_in(page: Page, username: str = "operator", password: str = PASSWORD) -> None:
    page.goto("/admin/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()


def call_api(base_url: str, method: str, path: str, key: str, body=None, headers=None):
    """One real HTTP call to the API: (status, parsed JSON body)."""
    data = orjson.dumps(body) if body is not None else None
    request = urllib.request.Request(f"{base_url}/api/v1{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with _opener.open(request, timeout=10) as response:
            return response.status, orjson.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, orjson.loads(error.read())


def bulk(base_url: str, key: str, body: dict):
    return call_api(
        base_url, "POST", "/orders/bulk", key, body, {"Idempotency-Key": str(uuid.uuid4())}
    )
