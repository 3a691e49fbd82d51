"""The guides the API serves (config/guides.py) are web pages with the docs page's look, their
Markdown stays at <name>.md, no link of theirs is a 404, and their links and examples name
the address they are served at (make run PORT=…), not make run's default.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest
from django.conf import settings
from django.test import Client

from config.guides import GUIDES

DOCS = Path(settings.BASE_DIR) / "docs"


class Page(HTMLParser):
    """The links, pictures, stylesheets and element ids of an HTML page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if "id" in attributes:
            self.ids.add(attributes["id"])
        if tag in ("a", "link") and attributes.get("href") is not None:
            self.links.append(attributes["href"])
        if tag == "img":
            self.links.append(attributes.get("src") or "")


def page(client: Client, url: str) -> Page:
    response = client.get(url)
    assert response.status_code == 200, url
    assert response["Content-Type"] == "text/html; charset=utf-8", url
    return Page(response.content.decode())


@pytest.fixture
def local(settings):
    """As `make run` serves: no BASE_URL, the request's own host and port."""
    settings.BASE_URL = ""
    return Client(HTTP_HOST="127.0.0.1:8851")


def test_the_guide_is_a_page_with_the_docs_look_served_by_us(db, local):
    response = local.get("/api/v1/guide/")
    html = response.content.decode()
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert "<table>" in html and "<pre><code" in html and '<h2 id="idempotency">' in html
    assert "<title>API guide · Delivery Orders API</title>" in html
    stylesheets = [link for link in Page(html).links if link.endswith(".css")]
    assert any(link.endswith("swagger-ui-dist/swagger-ui.css") for link in stylesheets)
    for stylesheet in stylesheets:  # ours, from our static files: no CDN
        assert stylesheet.startswith(settings.STATIC_URL)
        assert local.get(stylesheet).status_code == 200
    assert "```" not in html  # Markdown rendered, not shown


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_every_guide_keeps_its_markdown_at_its_md_address(db, local, name):
    markdown = local.get(f"/api/v1/guide/{name}.md")
    assert markdown["Content-Type"] == "text/plain; charset=utf-8"
    assert markdown.content == (DOCS / f"{name}.md").read_bytes()


def test_no_link_of_a_served_guide_is_a_404(db, local):
    """Every link and picture of every served guide, followed: each answers, and each
    #fragment names an element of the page it points at."""
    pages = {f"/api/v1/guide/{name}" for name in GUIDES} | {"/api/v1/guide/"}
    seen: dict[str, Page | int] = {}
    broken = []
    for url in sorted(pages):
        for link in page(local, url).links:
            target, fragment = urldefrag(link)
            parts = urlsplit(target)
            if parts.scheme and parts.netloc != "127.0.0.1:8851":
                continue  # another site's (standardwebhooks.com, modelcontextprotocol.io)
            path = parts.path or url
            if path not in seen:
                response = local.get(path)
                is_page = response.get("Content-Type", "").startswith("text/html")
                seen[path] = Page(response.content.decode()) if is_page else response.status_code
                if not is_page and response.status_code != 200:
                    broken.append(f"{url}: {link} is {response.status_code}")
            if fragment and (not isinstance(seen[path], Page) or fragment not in seen[path].ids):
                broken.append(f"{url}: {link} names no element there")
    assert broken == []
    assert "/api/v1/guide/decisions" in seen  # the guide's "our decisions" link, once a 404


def test_a_link_to_a_document_we_do_not_serve_keeps_its_words_only(db, local):
    html = local.get("/api/v1/guide/").content.decode()
    assert "deployment.md" in (DOCS / "api.md").read_text()
    assert "deployment.md" in html and "deployment" not in " ".join(Page(html).links)
    assert local.get("/api/v1/guide/deployment").status_code == 404  # an operator's
    assert local.get("/api/v1/guide/deployment.md").status_code == 404


def test_links_and_examples_follow_the_address_the_page_is_served_at(db, local, settings):
    html = local.get("/api/v1/guide/").content.decode()
    assert "http://127.0.0.1:8851/api/v1/schema/" in Page(html).links
    assert "BASE=http://127.0.0.1:8851/api/v1" in html
    assert not [link for link in Page(html).links if "127.0.0.1:8000" in link]

    settings.BASE_URL = "https://api.example.com"  # a deployment's public name wins
    html = local.get("/api/v1/guide/").content.decode()
    assert "https://api.example.com/api/v1/docs/" in Page(html).links
    assert "BASE=https://api.example.com/api/v1" in html


def test_pictures_and_sample_files_are_served_and_nothing_else_of_docs(db, local):
    picture = local.get("/api/v1/guide/screenshots/tracking-picked-up-360.png")
    assert picture.status_code == 200 and picture["Content-Type"] == "image/png"
    sample = local.get("/api/v1/guide/sample-batch.json")
    assert b"".join(sample.streaming_content) == (DOCS / "sample-batch.json").read_bytes()
    for path in ("screenshots/missing.png", "..%2Fpyproject.toml", "architecture.png"):
        assert local.get(f"/api/v1/guide/{path}").status_code == 404
