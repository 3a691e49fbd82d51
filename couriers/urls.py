"""The courier app's pages under /courier/ (docs/couriers.md); its JSON API is under
/api/v1/courier/ (config/api_urls.py)."""

from django.urls import path
from django.views.i18n import JavaScriptCatalog

from couriers import cash_page, earnings, history_page, pages

app_name = "couriers"

urlpatterns = [
    path("", pages.home_view, name="home"),
    path("sign-in", pages.sign_in_view, name="sign_in"),
    path("sign-out", pages.sign_out_view, name="sign_out"),
    path("status", pages.status_view, name="status"),
    path("history", history_page.history_view, name="history"),
    path("earnings", earnings.earnings_view, name="earnings"),
    path("cash", cash_page.cash_view, name="cash"),
    # courier.js's words in the page's language (gettext, interpolate): docs/contract.md §26.
    path("jsi18n/", JavaScriptCatalog.as_view(domain="djangojs"), name="jsi18n"),
    path("drops/<uuid:drop_id>/move", pages.move_view, name="move"),
    path("offers/<uuid:offer_id>/accept", pages.accept_offer_view, name="accept_offer"),
    path("offers/<uuid:offer_id>/decline", pages.decline_offer_view, name="decline_offer"),
]
