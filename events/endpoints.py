"""Webhook endpoints, as their business manages them (API and dashboard call these alone).

Create, change, delete, rotate the signing secret, send a test event, resend a delivery
(docs/contract.md §11). The callers check the input (the URL included, with `check_endpoint_url`,
before any transaction: it may resolve a host name); these functions own the writes.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounts.models import Business
from events.models import (
    Delivery,
    DeliveryStatus,
    Event,
    EventType,
    WebhookEndpoint,
)
from events.services import lock_feeds, new_event_id, on_new_deliveries
from events.ssrf import UnsafeUrl, check_url

# Per business and environment (docs/contract.md §11).
MAX_ENDPOINTS = 10
# After a rotation the old secret keeps signing this long, so receivers can switch over.
PREVIOUS_SECRET_VALID_FOR = timedelta(hours=24)
ALL_TYPES = "*"
SECRET_PREFIX = "whsec_"
MAX_URL_LENGTH = WebhookEndpoint._meta.get_field("url").max_length
MAX_DESCRIPTION_LENGTH = WebhookEndpoint._meta.get_field("description").max_length


class EndpointRefused(Exception):
    """A change the endpoint's state does not allow; `code` is the API's error code."""

    code = "ENDPOINT_REFUSED"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EndpointLimitReached(EndpointRefused):
    code = "ENDPOINT_LIMIT_REACHED"


class EndpointDisabled(EndpointRefused):
    code = "ENDPOINT_DISABLED"


@dataclass(frozen=True)
class IssuedSecret:
    """An endpoint with its signing secret in clear: shown once, at creation or rotation."""

    endpoint: WebhookEndpoint
    secret: str


def new_secret() -> str:
    """`whsec_` + base64 of 24 random bytes: what `standardwebhooks.Webhook(secret)` reads."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def check_endpoint_url(url: str) -> None:
    """Raise UnsafeUrl unless `url` is one we may call (events.ssrf; may resolve the host)."""
    if len(url) > MAX_URL_LENGTH or any(ch <= " " or ch == "\x7f" for ch in url):
        raise UnsafeUrl("Must be a valid http(s) URL.")
    check_url(url)


def event_types_of(chosen: list[str]) -> list[str]:
    """A subscription as stored: ["*"], or the chosen types once each, in their order.

    The caller has checked that each is "*" or an EventType value, and that "*" is alone.
    """
    return [ALL_TYPES] if ALL_TYPES in chosen else list(dict.fromkeys(chosen))


def create_endpoint(
    *,
    business: Business,
    environment: str,
    url: str,
    event_types: list[str],
    description: str = "",
    enabled: bool = True,
) -> IssuedSecret:
    with transaction.atomic():
        # Serialises creations per business, so two at once cannot both take the 10th
        # place. NO KEY: the rows that point at the business (batches, events) keep
        # being written meanwhile.
        Business.objects.select_for_update(no_key=True).filter(pk=business.pk).first()
        existing = WebhookEndpoint.objects.filter(business=business, environment=environment)
        if existing.count() >= MAX_ENDPOINTS:
            raise EndpointLimitReached(
                f"At most {MAX_ENDPOINTS} webhook endpoints per environment: delete one first."
            )
        secret = new_secret()
        endpoint = WebhookEndpoint.objects.create(
            business=business,
            environment=environment,
            url=url,
            event_types=event_types_of(event_types),
            description=description,
            enabled=enabled,
            secret=secret,
        )
    return IssuedSecret(endpoint=endpoint, secret=secret)


def _locked(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """The endpoint's row, locked for the transaction; DoesNotExist if it was deleted."""
    return WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)


@transaction.atomic
def update_endpoint(
    *,
    endpoint: WebhookEndpoint,
    url: str | None = None,
    event_types: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
) -> WebhookEndpoint:
    """Change what is given (None: unchanged).

    Switching it off fails its pending deliveries, as our own switch-off does (nothing is
    sent to a disabled endpoint; each can be resent from the log). Switching it on
    forgets why it was off.
    """
    endpoint = _locked(endpoint)
    if url is not None:
        endpoint.url = url
    if event_types is not None:
        endpoint.event_types = event_types_of(event_types)
    if description is not None:
        endpoint.description = description
    if enabled is not None:
        if enabled and not endpoint.enabled:
            # A fresh start for the automatic switch-off, which counts failures from now
            # on. A pause left by a timeout still holds (switching off and on again must
            # not lift it: docs/webhooks.md, "How we send"); it ends by itself.
            endpoint.disabled_reason = ""
            endpoint.failing_since = None
        elif not enabled and endpoint.enabled:
            # The endpoint's row is locked first, as events.delivery.record does.
            Delivery.objects.filter(endpoint=endpoint, status=DeliveryStatus.PENDING).update(
                status=DeliveryStatus.FAILED, next_attempt_at=None, updated_at=timezone.now()
            )
        endpoint.enabled = enabled
    endpoint.save(
        update_fields=[
            "url",
            "event_types",
            "description",
            "enabled",
            "disabled_reason",
            "failing_since",
        ]
    )
    return endpoint


@transaction.atomic
def delete_endpoint(*, endpoint: WebhookEndpoint) -> None:
    """The endpoint, its deliveries and their log; its events stay (GET /events)."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()


@transaction.atomic
def rotate_secret(*, endpoint: WebhookEndpoint, at: datetime) -> IssuedSecret:
    """A new secret; the current one keeps signing for PREVIOUS_SECRET_VALID_FOR.

    Only one previous secret is kept: rotating again within the window ends the older
    one's grace at once.
    """
    endpoint = _locked(endpoint)
    secret = new_secret()
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_expires_at = at + PREVIOUS_SECRET_VALID_FOR
    endpoint.secret = secret
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at"])
    return IssuedSecret(endpoint=endpoint, secret=secret)


@transaction.atomic
def send_test_event(*, endpoint: WebhookEndpoint, at: datetime) -> Event:
    """A `webhook.test` event delivered to this endpoint only, whatever it subscribes to.

    Written as any event is (an outbox row and its delivery, sent by the workers), but
    not through record_events, which would deliver it to every endpoint that wants it.
    Its delivery queues behind the endpoint's pause, if it has one (`_due_after_pause`).
    """
    endpoint = _locked(endpoint)
    if not endpoint.enabled:
        raise EndpointDisabled("The endpoint is disabled: enable it to send a test event.")
    lock_feeds({(endpoint.business_id, endpoint.environment)})
    event = Event.objects.create(
        public_id=new_event_id(at),
        business_id=endpoint.business_id,
        environment=endpoint.environment,
        type=EventType.WEBHOOK_TEST,
        data={
            "endpoint_id": str(endpoint.pk),
            "message": "A test event: your endpoint receives and verifies webhooks.",
        },
        created_at=at,
    )
    Delivery.objects.create(
        event=event,
        endpoint=endpoint,
        next_attempt_at=_due_after_pause(endpoint, at),
        created_at=at,
        updated_at=at,
    )
    on_new_deliveries(endpoint)
    return event


def _due_after_pause(endpoint: WebhookEndpoint, at: datetime) -> datetime:
    """When a test or a resend asked for at `at` is due: then, or when the endpoint's pause
    ends if it is paused after a timeout (events.delivery).

    Asking never lifts the pause: otherwise each ask would cost a hanging receiver's full
    timeout, once per click, and its business could keep workers busy at will
    (docs/decisions.md, "A pause ends only by itself or by a probe's success"). The task
    asked for now finds the pause and returns; the one the sender asked for at the pause's
    end sends it, in creation order with the rest.
    """
    if endpoint.paused_until is not None and endpoint.paused_until > at:
        return endpoint.paused_until
    return at


@transaction.atomic
def resend_delivery(*, delivery: Delivery, at: datetime) -> Delivery:
    """Make the delivery due now (or when the endpoint's pause ends), whatever its status,
    and ask a worker to send it.

    Its attempt count is kept: a resend is one more attempt, and if it fails the retry
    schedule goes on from where it stood.
    """
    endpoint = _locked(delivery.endpoint)
    if not endpoint.enabled:
        raise EndpointDisabled("The endpoint is disabled: enable it to resend deliveries.")
    delivery = Delivery.objects.select_for_update().get(pk=delivery.pk)
    delivery.status = DeliveryStatus.PENDING
    delivery.next_attempt_at = _due_after_pause(endpoint, at)
    delivery.updated_at = at
    delivery.save(update_fields=["status", "next_attempt_at", "updated_at"])
    on_new_deliveries(endpoint)
    return delivery
