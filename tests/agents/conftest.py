"""What the in-process MCP tests need from their process."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_foreign_event_loop() -> Iterator[None]:
    """A WSGI request's thread has no running event loop; a test process may.

    The browser tests (tests/browser/conftest.py) keep Playwright's sync API open for the
    session, and it leaves its event loop marked as running in the main thread. The MCP
    view drives the SDK with asgiref's async_to_sync, which refuses to start a loop in a
    thread that seems to run one, as it should in a server. The loop is set aside for the
    test and given back after it.
    """
    foreign = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(foreign)
