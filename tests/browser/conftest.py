"""Browser tests: Playwright (sync API) drives Debian chromium against the live_server fixture.

Every test saves full-page screenshots of the pages it visits into SCREENSHOTS, and the run
ends by naming that folder, so a reviewer can look at what a person sees.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
# still plain synchronous code, so Django's "called from async context" guard must stand down.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from tests.browser.helpers import PASSWORD, page_opener  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
SCREENSHOTS = Path(settings.BASE_DIR) / "test-artifacts" / "screenshots"
_taken: list[Path] = []


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Every test here drives a real chromium: marked slow, so `pytest -m "not slow"` (the
    fast loop, tests/README.md) leaves them out. A conftest's hook sees every item of the
    run, not only this folder's."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter):
    """In a one-process run (`pytest FILE`); tests/conftest.py says it for `make test`."""
    if _taken and not os.environ.get("PYTEST_XDIST_WORKER"):
        terminalreporter.write_sep("-", "browser screenshots")
        terminalreporter.write_line(f"{len(_taken)} screenshots in {SCREENSHOTS}")


@pytest.fixture(scope="session")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run `make browser-deps` (apt-get install chromium).")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture(autouse=True)
def _browser_test_setup():
    cache.clear()  # the login throttle counts in the cache
    expect.set_options(timeout=10_000)
    yield
    cache.clear()


@pytest.fixture
def new_page(browser, live_server):
    """Open a page in its own browser context (own cookies): one per person in the test."""
    with page_opener(browser, live_server.url, timeout_ms=10_000) as open_page:
        yield open_page


@pytest.fixture
def page(new_page) -> Page:
    return new_page()


@pytest.fixture(scope="session")
def screenshot_folder() -> Path:
    # The folder shows this run only: last run's pictures would mislead. Under `make test`'s
    # two processes, the run that starts them clears it, once (tests/conftest.py).
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def screenshot(request, screenshot_folder):
    """screenshot(page, "keys-new-key"): a full-page PNG named after the test and the step."""
    test = request.node.name.removeprefix("test_")
    counter = iter(range(1, 100))

    def take(page: Page, name: str) -> Path:
        path = SCREENSHOTS / f"{test}-{next(counter):02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        _taken.append(path)
        return path

    return take


@pytest.fixture
def operator(transactional_db):
    return get_user_model().objects.create_superuser("operator", "operator@example.com", PASSWORD)
