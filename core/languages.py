"""Which language a page speaks (docs/contract.md §26): the user's switch, kept in a cookie,
else the browser's Accept-Language, else the page's own default (the business's setting).

The API, the MCP server, the operator console and the health checks speak English whatever
the headers: their codes, fields and messages are a contract, not prose.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.translation.trans_real import parse_accept_lang_header

ENGLISH = "en"
KHMER = "km"
# The switch on every page is a link with ?lang=<code>: it works without JavaScript and
# under the recipient page's Content-Security-Policy (no form may post from it).
SWITCH_PARAM = "lang"
ENGLISH_ONLY = re.compile(r"/(api|mcp|admin|healthz|readyz|static)(/|\Z)")


def codes() -> tuple[str, ...]:
    return tuple(code for code, _ in settings.LANGUAGES)


def supported(code: str | None) -> str | None:
    """The language of ours `code` names ("km-KH" is km), or None."""
    if not code:
        return None
    code = code.lower()
    for ours in codes():
        if code == ours or code.startswith(ours + "-"):
            return ours
    return None


def switched_language(request: HttpRequest) -> str | None:
    """The user's own choice: the switch's cookie."""
    return supported(request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME))


def browser_language(request: HttpRequest) -> str | None:
    """The first of the browser's Accept-Language that we speak ("*" is no choice)."""
    for code, _ in parse_accept_lang_header(request.headers.get("Accept-Language", "")):
        if found := supported(code):
            return found
    return None


def page_language(request: HttpRequest, *, default: str) -> str:
    """The switch, else the browser, else `default`."""
    return switched_language(request) or browser_language(request) or default


def use_language(request: HttpRequest, language: str) -> None:
    """Speak `language` for the rest of this request (a view that knows its own default)."""
    translation.activate(language)
    request.LANGUAGE_CODE = language


class LanguageMiddleware:
    """Activates the page's language before the view runs (English where the page has no
    better default: a view that has one, the business's, calls use_language); a link with
    ?lang=km stores the choice in the cookie and comes back to the page without it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if ENGLISH_ONLY.match(request.path_info):
            use_language(request, ENGLISH)
            return self.get_response(request)
        switch = supported(request.GET.get(SWITCH_PARAM))
        if switch and request.method in ("GET", "HEAD"):
            return _remember(request, switch)
        use_language(request, page_language(request, default=settings.LANGUAGE_CODE))
        response = self.get_response(request)
        response.headers.setdefault("Content-Language", translation.get_language())
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        translation.deactivate()
        return response


def _remember(request: HttpRequest, language: str) -> HttpResponse:
    query = request.GET.copy()
    query.pop(SWITCH_PARAM)
    rest = query.urlencode()
    # One leading slash: "//host/..." would send the browser to another site.
    path = "/" + request.path.lstrip("/")
    response = HttpResponseRedirect(path + (f"?{rest}" if rest else ""))
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        samesite="Lax",
        secure=request.is_secure(),
        httponly=True,
    )
    return response
