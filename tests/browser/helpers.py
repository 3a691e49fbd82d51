"""Steps the browser tests share: opening pages of a given width, logging in as a business or
an operator, checking that a page fits its window, calling the API."""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import orjson
import pytest
from playwright.sync_api import Browser, Page, expect

PASSWORD = "correct horse battery"
# Straight to the live server, whatever proxy the environment names.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@contextmanager
def page_opener(
    browser: Browser,
    base_url: str,
    *,
    email: str | None = None,
    timeout_ms: int = 15_000,
    init_script: str | None = None,
) -> Iterator[Callable[..., Page]]:
    """`open_page(width)`: a page `width` px wide (1280 unless said) in a browser context of
    its own (its own cookies), logged in as `email` unless the call says `email=None`.
    Every context opened is closed when the block ends."""
    contexts = []
    default_email = email

    def open_page(width: int = 1280, *, email: str | None = default_email) -> Page:
        context = browser.new_context(base_url=base_url, viewport={"width": width, "height": 800})
        context.set_default_timeout(timeout_ms)
        if init_script:
            context.add_init_script(init_script)
        contexts.append(context)
        page = context.new_page()
        if email:
            log_in(page, email)
        return page

    try:
        yield open_page
    finally:
        for context in contexts:
            context.close()


# The innermost elements that stick out past the window's right edge, to name in a failure.
WIDER_THAN = """(width) => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > width + 0.5)
  .filter((e) => ![...e.children].some((c) => c.getBoundingClientRect().right > width + 0.5))
  .slice(0, 8)
  .map((e) => [e.tagName.toLowerCase(), ...e.classList].join(".")
    + ` ${Math.round(e.getBoundingClientRect().right)}px`)"""


def assert_fits(page: Page, width: int) -> None:
    """Nothing makes the page scroll sideways: wide tables stack or scroll inside their card."""
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    if scroll_width > width:
        culprits = page.evaluate(WIDER_THAN, width)
        pytest.fail(f"{page.url}: {scroll_width} px wide in a {width} px window: {culprits}")


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
