"""The integrators' guides of docs/, served by the API itself: a deployed service's integrators
have no clone. Each is a web page with the API docs page's look (/api/v1/guide/ is docs/api.md,
/api/v1/guide/<name> the others) and the Markdown it is written in (/api/v1/guide/<name>.md);
the pictures and sample files they show or offer are served beside them.

The guides link to one another relatively (webhooks.md), as they read in the repository. On a
page each link is rewritten to the page that serves it; a link to a document we do not serve
(an operator's, such as deployment.md) keeps its words and loses its link, so no link of a
served page is a 404. Links and examples written for `make run`'s default address
(http://127.0.0.1:8000) name the address the page is served at instead (BASE_URL, else the
request's own host and port).
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from markdown_it import MarkdownIt
from markdown_it.token import Token
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny

from core.api import ApiError
from orders.api import base_url_of

DOCS = Path(settings.BASE_DIR) / "docs"
# What an integrator reads: the API and its companions, and the documents they lean on (our
# decisions where the contract is silent, the business's dashboard, how orders are offered to
# couriers). Operators' documents (deployment, the console, scaling) stay in the repository.
GUIDES = frozenset(
    {
        "api",
        "webhooks",
        "sandbox",
        "csv",
        "contract",
        "changelog",
        "notifications",
        "agents",
        "decisions",
        "dashboard",
        "dispatch",
        "recipients",
    }
)
# The files a guide shows or offers (screenshots, sample batches), by type; nothing else of
# docs/ is served.
ATTACHMENT_TYPES = {".png": "image/png", ".json": "application/json", ".csv": "text/csv"}
ATTACHMENT_PATH = r"(?:[a-z0-9-]+/)?[a-z0-9-]+\.(?:png|json|csv)"
# The address the guides' links and examples are written for: `make run`'s default.
WRITTEN_ORIGIN = "http://127.0.0.1:8000"
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
_IMG_SRC = re.compile(r'(<img\b[^>]*\bsrc=")([^"]*)(")', re.I)


def guide_url(name: str) -> str:
    return reverse("api-guide") if name == "api" else reverse("api-guide-page", args=[name])


def attachment(relative: str) -> Path | None:
    """The file of docs/ at `relative`, if it is one a guide may show or offer."""
    if not re.fullmatch(ATTACHMENT_PATH, relative):
        return None
    path = DOCS / relative
    return path if path.is_file() else None


def served_href(href: str, *, origin: str) -> str | None:
    """Where a link of a guide points on the served page; None: not a page we serve."""
    if href.startswith(WRITTEN_ORIGIN):
        return origin + href[len(WRITTEN_ORIGIN) :]
    if not href or href.startswith(("#", "/")) or _SCHEME.match(href):
        return href
    target, _, fragment = href.partition("#")
    relative = posixpath.normpath(target)
    suffix = f"#{fragment}" if fragment else ""
    if relative.endswith(".md") and relative[:-3] in GUIDES:
        return guide_url(relative[:-3]) + suffix
    if attachment(relative):
        return reverse("api-guide-file", args=[relative])
    return None


def heading_id(text: str, taken: dict[str, int]) -> str:
    """GitHub's anchor for a heading (lower case, punctuation dropped, spaces as hyphens), so
    that the guides' #fragments, written for the repository, work on the served pages too."""
    slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    seen = taken.get(slug, 0)
    taken[slug] = seen + 1
    return f"{slug}-{seen}" if seen else slug


def _plain_text(inline: Token) -> str:
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


def _serve_links(tokens: list[Token], origin: str) -> list[Token]:
    """The inline tokens with each link and picture pointed where it is served; a link to a
    document we do not serve keeps its words only (links do not nest)."""
    kept, unlinked = [], False
    for token in tokens:
        if token.type == "link_open":
            token.attrs["href"] = served_href(str(token.attrs["href"]), origin=origin) or ""
            unlinked = not token.attrs["href"]
            if unlinked:
                continue
        elif token.type == "link_close" and unlinked:
            unlinked = False
            continue
        elif token.type == "image":
            token.attrs["src"] = served_href(str(token.attrs["src"]), origin=origin) or ""
        elif token.type == "html_inline":
            token.content = _serve_html(token.content, origin)
        kept.append(token)
    return kept


def _serve_html(html: str, origin: str) -> str:
    return _IMG_SRC.sub(lambda m: m[1] + (served_href(m[2], origin=origin) or "") + m[3], html)


def render(markdown: str, *, origin: str) -> str:
    """The guide as HTML: tables, code blocks, heading anchors; links pointed where served."""
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    tokens = parser.parse(markdown)
    taken: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            token.attrs["id"] = heading_id(_plain_text(tokens[index + 1]), taken)
        elif token.type in ("fence", "code_block"):
            token.content = token.content.replace(WRITTEN_ORIGIN, origin)
        elif token.type == "html_block":
            token.content = _serve_html(token.content, origin)
        elif token.type == "inline" and token.children:
            token.children = _serve_links(token.children, origin)
    return parser.renderer.render(tokens, parser.options, {})


@lru_cache(maxsize=64)
def _page(name: str, origin: str, modified: float) -> str:
    # Keyed by the file's time too: an edited guide is rendered again, without a restart.
    markdown = (DOCS / f"{name}.md").read_text()
    title = next((line[2:] for line in markdown.splitlines() if line.startswith("# ")), name)
    return render_to_string(
        "api/guide.html",
        {
            "title": title,
            "body": render(markdown, origin=origin),
            "markdown_url": reverse("api-guide-markdown", args=[name]),
            "guide_url": reverse("api-guide"),
            "docs_url": reverse("api-docs"),
            "schema_url": reverse("api-schema"),
        },
    )


def _guide_path(name: str) -> Path:
    if name not in GUIDES:
        raise ApiError(404, "NOT_FOUND", "No such guide.")
    return DOCS / f"{name}.md"


def public(view):
    """A GET of the API that needs no key, like the docs; left out of the schema."""
    return extend_schema(exclude=True)(
        api_view(["GET"])(authentication_classes([])(permission_classes([AllowAny])(view)))
    )


@public
def guide_page(request, name: str = "api"):
    """GET /api/v1/guide/ (docs/api.md) and /api/v1/guide/<name>: the guide as a web page."""
    path = _guide_path(name)
    html = _page(name, base_url_of(request), path.stat().st_mtime)
    return HttpResponse(html, content_type="text/html; charset=utf-8")


@public
def guide_markdown(request, name: str):
    """GET /api/v1/guide/<name>.md: the guide as it is in the repository (reads as text)."""
    return HttpResponse(_guide_path(name).read_bytes(), content_type="text/plain; charset=utf-8")


@public
def guide_file(request, path: str):
    """GET /api/v1/guide/<file>: a picture or sample file a guide shows or offers."""
    found = attachment(path)
    if found is None:
        raise ApiError(404, "NOT_FOUND", "No such file.")
    return FileResponse(found.open("rb"), content_type=ATTACHMENT_TYPES[found.suffix])
