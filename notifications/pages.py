"""The recipient's unsubscribe page, the link under every email and in its List-Unsubscribe
header (docs/notifications.md, "Stopping messages").

GET only asks (mail scanners open links: RFC 8058 keeps the change to a POST); POST
unsubscribes, from the page's button or from the mail client's one-click (a form
`List-Unsubscribe=One-Click`, no cookie, hence no CSRF token).
"""

from __future__ import annotations

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from notifications.optout import unsubscribe_by_link

ANSWERS = {
    "unsubscribed": "You are unsubscribed: you will get no more of these emails.",
    "already": "You were already unsubscribed: you will get no more of these emails.",
    "used": "This link was already used. If you still get emails, reply to one of them.",
}


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe_page(request, token: str):
    if request.method != "POST":
        return render(request, "notifications/unsubscribe.html", {"asking": True})
    outcome = unsubscribe_by_link(token=token, at=timezone.now())
    if outcome == "invalid":
        context = {"answer": "This link is not valid (it may be incomplete, or too old)."}
        return render(request, "notifications/unsubscribe.html", context, status=404)
    return render(request, "notifications/unsubscribe.html", {"answer": ANSWERS[outcome]})
