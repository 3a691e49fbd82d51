"""What every dashboard page uses: acting for the user's business, paging, the
environments a business may use, the one-use form tokens of the pages that show a
secret once (API keys, webhook endpoints), and the words of the dashboard's scripts."""

from __future__ import annotations

import secrets
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.views.decorators.http import require_safe
from django.views.i18n import JavaScriptCatalog

from accounts.models import Business, Environment
from core.languages import browser_language, supported, switched_language, use_language
from core.replica import reads_may_lag

PAGE_SIZE = 25


def business_view(view):
    """Login required, and the page acts for the user's own business (request.business).

    A page only shown (GET, HEAD) reads from the replica when there is one and the session
    has not written lately (core/replica.py); the business itself is read on the primary.
    """
    shown = reads_may_lag(view)

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        # Read fresh on every request: an operator may have moved the stage meanwhile.
        business = Business.objects.filter(memberships__user=request.user).first()
        if business is None:
            return render(request, "dashboard/no_business.html", status=403)
        request.business = business
        if not switched_language(request) and not browser_language(request):
            use_language(request, business.dashboard_language)  # docs/contract.md §26
        if request.method in ("GET", "HEAD"):
            return shown(request, *args, **kwargs)
        return view(request, *args, **kwargs)

    return wrapper


def page_of(request, rows, *, size: int = PAGE_SIZE, param: str = "page"):
    """The page of `rows` that the query parameter `param` asks for (the first if none)."""
    return Paginator(rows, size).get_page(request.GET.get(param))


def key_environments(business: Business) -> list[str]:
    """The environments the business may make keys and webhook endpoints for."""
    allowed = []
    if business.can_use_sandbox:
        allowed.append(Environment.SANDBOX)
    if business.is_live:
        allowed.append(Environment.LIVE)
    return allowed


_KEY_FORM_TOKENS = "key_form_tokens"


def new_key_form_token(request) -> str:
    """A one-use token for a form whose answer shows a secret once (a key, an endpoint's
    signing secret), so a browser refresh of the answer makes no second one."""
    token = secrets.token_urlsafe(16)
    # A few outstanding tokens: one per open tab is enough.
    request.session[_KEY_FORM_TOKENS] = [*request.session.get(_KEY_FORM_TOKENS, [])[-4:], token]
    return token


def spend_key_form_token(request) -> bool:
    """Whether the posted form token was outstanding; if it was, it is spent (it works once)."""
    tokens = request.session.get(_KEY_FORM_TOKENS, [])
    token = request.POST.get("form_token", "")
    if token not in tokens:
        return False
    tokens.remove(token)
    request.session[_KEY_FORM_TOKENS] = tokens
    return True


# The djangojs catalogue (locale/<code>/LC_MESSAGES/djangojs.po), the courier app's set-up.
_SCRIPT_WORDS = JavaScriptCatalog.as_view(domain="djangojs")


@require_safe
def script_words(request: HttpRequest, language: str) -> HttpResponse:
    """gettext and interpolate for the dashboard's scripts, in the language the page names
    (templates/dashboard/_script_words.html): the page's own, whatever decided it (the
    switch, the browser or the business's setting). Open: it holds only the words."""
    if supported(language) != language:
        raise Http404
    with translation.override(language):
        return _SCRIPT_WORDS(request)
