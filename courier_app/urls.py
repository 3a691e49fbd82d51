"""The courier app's pages under /courier/ (docs/couriers.md); its JSON API is under
/api/v1/courier/ (config/api_urls.py)."""

from django.urls import path

from courier_app import pages

app_name = "courier_app"

urlpatterns = [
    path("", pages.home_view, name="home"),
    path("sign-in", pages.sign_in_view, name="sign_in"),
    path("sign-out", pages.sign_out_view, name="sign_out"),
    path("status", pages.status_view, name="status"),
    path("drops/<uuid:drop_id>/move", pages.move_view, name="move"),
    path("offers/<uuid:offer_id>/accept", pages.accept_offer_view, name="accept_offer"),
    path("offers/<uuid:offer_id>/decline", pages.decline_offer_view, name="decline_offer"),
]
