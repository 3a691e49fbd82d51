"""Dashboard routes (server-rendered pages for business users), one view module per area."""

from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard import webhooks
from dashboard.uploads import orders_upload, orders_upload_template
from dashboard.views import (
    access,
    booking,
    common,
    keys,
    money,
    notifications,
    onboarding,
    orders,
    places,
    sandbox,
    suppressions,
)

app_name = "dashboard"

urlpatterns = [
    path("", onboarding.home, name="home"),
    # Signing up and in: the only pages open without a login.
    path("signup/", access.signup, name="signup"),
    path("login/", access.LoginView.as_view(), name="login"),
    path("logout/", access.LogoutView.as_view(), name="logout"),
    path("password-reset/", access.PasswordResetView.as_view(), name="password_reset"),
    path(
        "password-reset/sent/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password-reset/<uidb64>/<token>/",
        access.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "password-reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    # Onboarding.
    path("access/", onboarding.request_access, name="request_access"),
    path("live/", onboarding.request_live, name="request_live"),
    path("keys/", keys.keys, name="keys"),
    path("keys/<int:pk>/revoke/", keys.revoke_key, name="revoke_key"),
    # Webhook endpoints (dashboard/webhooks.py).
    path("webhooks/", webhooks.webhooks, name="webhooks"),
    path("webhooks/<uuid:pk>/", webhooks.webhook_endpoint, name="webhook"),
    path("webhooks/<uuid:pk>/enabled/", webhooks.webhook_enabled, name="webhook_enabled"),
    path("webhooks/<uuid:pk>/rotate/", webhooks.webhook_rotate, name="webhook_rotate"),
    path("webhooks/<uuid:pk>/test/", webhooks.webhook_test, name="webhook_test"),
    path("webhooks/<uuid:pk>/delete/", webhooks.webhook_delete, name="webhook_delete"),
    path(
        "webhooks/<uuid:pk>/deliveries/<int:delivery_pk>/",
        webhooks.webhook_delivery,
        name="webhook_delivery",
    ),
    path(
        "webhooks/<uuid:pk>/deliveries/<int:delivery_pk>/resend/",
        webhooks.webhook_resend,
        name="webhook_resend",
    ),
    # Recipient notifications (dashboard/views/notifications.py).
    path("notifications/", notifications.notifications, name="notifications"),
    path("notifications/languages/", notifications.languages, name="languages"),
    path("notifications/log/", notifications.notification_log, name="notification_log"),
    path("notifications/suppressions/", suppressions.suppressions, name="suppressions"),
    path(
        "notifications/suppressions/<int:pk>/lift/",
        suppressions.suppression_lift,
        name="suppression_lift",
    ),
    # Money.
    path("wallet/", money.wallet, name="wallet"),
    path("wallet/sandbox-top-up/", money.sandbox_wallet_top_up, name="sandbox_top_up"),
    path("wallet/cod/credit-wallet/", money.cod_credit_wallet, name="cod_credit_wallet"),
    path("wallet/sandbox-cod-payout/", money.sandbox_cod_payout, name="sandbox_cod_payout"),
    # Orders.
    path("orders/", orders.orders, name="orders"),
    path("orders/export/", orders.orders_export, name="orders_export"),
    path("orders/labels.pdf", orders.orders_labels, name="orders_labels"),
    path("orders/<uuid:pk>/", orders.order_detail, name="order"),
    path("orders/<uuid:pk>/cancel/", orders.order_cancel, name="order_cancel"),
    path("orders/<uuid:pk>/edit/", orders.order_edit, name="order_edit"),
    path("orders/<uuid:pk>/label.pdf", orders.order_label, name="order_label"),
    # New delivery: booking by hand (dashboard/views/booking.py), from saved pickup places.
    path("orders/new/", booking.new_delivery, name="new_delivery"),
    path("orders/new/quote/", booking.delivery_quote, name="delivery_quote"),
    path("orders/new/geocode/", booking.delivery_geocode, name="delivery_geocode"),
    path("orders/new/recipients/", booking.delivery_recipients, name="delivery_recipients"),
    path("orders/new/<uuid:pk>/", booking.delivery_booked, name="delivery_booked"),
    path("pickup-places/", places.pickup_places, name="pickup_places"),
    path("pickup-places/new/", places.pickup_place_form, name="pickup_place_new"),
    path("pickup-places/<uuid:pk>/", places.pickup_place_form, name="pickup_place"),
    path("pickup-places/<uuid:pk>/delete/", places.pickup_place_delete, name="pickup_place_delete"),
    # The words of the dashboard's scripts, in the language the page names (§26).
    path("jsi18n/<str:language>/", common.script_words, name="jsi18n"),
    # Orders from a spreadsheet (dashboard/uploads.py).
    path("orders/upload/", orders_upload, name="orders_upload"),
    path("orders/upload/template.csv", orders_upload_template, name="orders_upload_template"),
    path("batches/", orders.batches, name="batches"),
    path("batches/<uuid:pk>/", orders.batch_page, name="batch"),
    path("batches/<uuid:pk>/labels.pdf", orders.batch_labels_pdf, name="batch_labels"),
    # The sandbox console.
    path("sandbox/", sandbox.sandbox, name="sandbox"),
    path("sandbox/sample-batch/", sandbox.sandbox_send_sample, name="sandbox_send_sample"),
    path("sandbox/advance/", sandbox.sandbox_advance, name="sandbox_advance"),
    path("sandbox/scenario/", sandbox.sandbox_start_scenario, name="sandbox_start_scenario"),
]
