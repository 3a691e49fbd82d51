"""Recipient notifications (docs/notifications.md): what a business opted into, where the
reading of its events stands, and every message made from them (the delivery log).

A message is made once per drop, kind and channel (a unique constraint), from the event that
first called for it; its row is the truth of what was sent, like a webhook delivery's.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from accounts.models import Environment


class Kind(models.TextChoices):
    """What a recipient hears about; each is read from an event (notifications.collect)."""

    DISPATCHED = "dispatched", _("On its way")  # PICKED_UP: the parcel left with the courier
    NEARBY = "nearby", _("Courier nearby")  # order.courier_position within NOTIFY_NEARBY_METERS
    DELIVERED = "delivered", _("Delivered")
    FAILED = "failed", _("Delivery failed")


class Channel(models.TextChoices):
    EMAIL = "email", _("Email")
    SMS = "sms", _("SMS")


class NotificationTemplate(models.Model):
    """One (channel, kind) of a business's environment in one language: opted in or not, and
    its text in that language.

    No row is the default: off, with the default text (notifications/texts.py). A (channel,
    kind) is on when any of its languages' rows is (notifications.services keeps them
    alike); a language with no row of its own is sent the default text in that language.
    """

    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    language = models.CharField(
        max_length=5, choices=settings.LANGUAGES, default="en", db_default="en"
    )
    enabled = models.BooleanField(default=False)
    subject = models.CharField(max_length=200, blank=True)  # email only
    body = models.TextField(max_length=2000)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["business", "environment", "channel", "kind", "language"],
                name="notification_template_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.business_id} {self.environment} {self.channel} {self.kind} {self.language}"


class NotificationFeed(models.Model):
    """Where the reading of one business's environment's events stands: the last `seq` read.

    Within one feed events commit in `seq` order (events.services.lock_feeds), so everything
    at or below the cursor has been read and nothing above it is lost. `active` while any
    template of the feed is on: only active feeds are read.
    """

    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    last_seq = models.BigIntegerField(default=0)
    active = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["business", "environment"], name="notification_feed_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.business_id} {self.environment} after {self.last_seq}"


class MessageStatus(models.TextChoices):
    PENDING = "PENDING", _("Pending")  # due at next_attempt_at
    SENDING = "SENDING", _("Sending")  # claimed by a worker until claimed_until
    SENT = "SENT", _("Sent")  # the provider took it
    SANDBOX = "SANDBOX", _("Sandbox")  # a sandbox message: logged, never sent
    # The recipient had NOTIFY_PER_RECIPIENT_PER_HOUR already
    THROTTLED = "THROTTLED", _("Throttled")
    # Refused, out of attempts, or its worker died mid-send (at most once)
    FAILED = "FAILED", pgettext_lazy("a message", "Failed")
    # The recipient asked the business to stop (a Suppression).
    SUPPRESSED = "SUPPRESSED", _("Suppressed")


class Message(models.Model):
    """One message to one recipient: the delivery log's row."""

    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    # The event's seq, not a foreign key: the log outlives the events' retention.
    event_seq = models.BigIntegerField()
    drop_id = models.UUIDField()
    client_order_id = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    to = models.CharField(max_length=254)
    subject = models.CharField(max_length=200, blank=True)
    body = models.TextField()
    status = models.CharField(
        max_length=10, choices=MessageStatus.choices, default=MessageStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # When a worker took it (what the throttle counts) and how long the claim holds.
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Never twice for one event and channel, nor for one drop's kind and channel.
            models.UniqueConstraint(
                fields=["event_seq", "drop_id", "channel"], name="notification_once_per_event"
            ),
            models.UniqueConstraint(
                fields=["drop_id", "kind", "channel"], name="notification_once_per_drop"
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="PENDING"),
                name="notification_due",
            ),
            models.Index(
                fields=["claimed_until"], condition=Q(status="SENDING"), name="notification_sending"
            ),
            # The throttle counts a recipient's messages of the last hour.
            models.Index(fields=["to", "channel", "claimed_at"], name="notification_recipient"),
            models.Index(fields=["business", "environment", "-id"], name="notification_log"),
            models.Index(fields=["created_at"], name="notification_age"),  # the purge
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.channel} to {self.to} ({self.status})"


class OptOut(models.TextChoices):
    """How a recipient asked a business to stop."""

    SMS_STOP = "sms_stop", _("Replied STOP")
    EMAIL_UNSUBSCRIBE = "email_unsubscribe", _("Unsubscribed from an email")


class Suppression(models.Model):
    """A recipient who asked one business to stop: nothing more goes to the address on the
    channel from that business (any environment) while the row is not lifted.

    Lifted rows stay, with how the recipient consented again: the history of their consent.
    Addresses are stored as messages are (E.164 phones; emails lower-cased).
    """

    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    address = models.CharField(max_length=254)
    source = models.CharField(max_length=20, choices=OptOut.choices)
    created_at = models.DateTimeField()
    lifted_at = models.DateTimeField(null=True, blank=True)
    # The recipient's consent to hear again: "START by SMS", or what the dashboard user noted.
    lifted_note = models.CharField(max_length=500, blank=True)
    lifted_by = models.CharField(max_length=254, blank=True)  # the dashboard user, if any
    # The email whose unsubscribe link made it (Message.pk, not a key: the log is purged):
    # a link works once.
    from_message_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["business", "channel", "address"],
                condition=Q(lifted_at__isnull=True),
                name="suppression_once",
            ),
            models.UniqueConstraint(fields=["from_message_id"], name="suppression_link_once"),
        ]
        indexes = [models.Index(fields=["channel", "address"], name="suppression_address")]

    def __str__(self) -> str:
        return f"{self.business_id} {self.channel} {self.address}"

    @property
    def active(self) -> bool:
        return self.lifted_at is None
