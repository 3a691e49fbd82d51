"""Recipients who asked a business to stop (docs/notifications.md, "Stopping messages").

An SMS reply of STOP (or a usual synonym) puts the phone on the suppression list of the
business whose text it answers: the one that last texted that phone, since every business's
texts come from one number (SMS_FROM). START (or UNSTOP, YES) lifts the suppression that
the phone's latest STOP put. An email's one-click unsubscribe puts the address on the list
of the business that sent that email. Nothing is sent to a suppressed address by that
business (notifications.sending marks its messages SUPPRESSED) until the suppression is
lifted, by START or by a dashboard user who notes the recipient's consent.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core import signing
from django.db import transaction

from notifications.models import Channel, Message, MessageStatus, OptOut, Suppression

# The unsubscribe link's own salt: a value signed for another purpose is no link.
UNSUBSCRIBE_SALT = "notifications.unsubscribe"
UNSUBSCRIBE_PATH = "/unsubscribe/"
STOP_WORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"})
START_WORDS = frozenset({"START", "UNSTOP", "YES"})
START_NOTE = "The recipient replied START."


def keyword(body: str) -> str:
    """The reply's word as carriers match it: the whole message, trimmed, any case."""
    return body.strip().rstrip(".!").strip().upper()


def reply_by_sms(*, phone: str, body: str, at: datetime) -> str:
    """Act on an SMS reply from `phone`: "stopped", "started" or "ignored" (not a keyword,
    or nothing to stop or start)."""
    word = keyword(body)
    if word in STOP_WORDS:
        business_id = (
            Message.objects.filter(channel=Channel.SMS, to=phone, status=MessageStatus.SENT)
            .order_by("-sent_at", "-id")
            .values_list("business_id", flat=True)
            .first()
        )
        if business_id is None:
            return "ignored"  # no business of ours texted this phone
        suppress(
            business_id=business_id,
            channel=Channel.SMS,
            address=phone,
            source=OptOut.SMS_STOP,
            at=at,
        )
        return "stopped"
    if word in START_WORDS:
        stopped = (
            Suppression.objects.filter(
                channel=Channel.SMS, address=phone, source=OptOut.SMS_STOP, lifted_at=None
            )
            .order_by("-created_at", "-id")
            .first()
        )
        if stopped is None:
            return "ignored"
        lift(suppression=stopped, note=START_NOTE, by="", at=at)
        return "started"
    return "ignored"


def suppress(*, business_id, channel: str, address: str, source: str, at: datetime) -> None:
    """Put the address on the business's list; already there, nothing changes."""
    Suppression.objects.bulk_create(
        [
            Suppression(
                business_id=business_id,
                channel=channel,
                address=normal_address(channel, address),
                source=source,
                created_at=at,
            )
        ],
        ignore_conflicts=True,  # the partial unique index: one active row per address
    )


def lift(*, suppression: Suppression, note: str, by: str, at: datetime) -> bool:
    """Lift a suppression with the recipient's consent noted; False if already lifted."""
    with transaction.atomic():
        lifted = Suppression.objects.filter(pk=suppression.pk, lifted_at=None).update(
            lifted_at=at, lifted_note=note[:500], lifted_by=by[:254]
        )
    return bool(lifted)


def normal_address(channel: str, address: str) -> str:
    return address.strip().lower() if channel == Channel.EMAIL else address.strip()


def suppressed_among(messages: list[Message]) -> set[tuple[object, str, str]]:
    """(business id, channel, address) of these messages' recipients who asked to stop."""
    if not messages:
        return set()
    rows = Suppression.objects.filter(
        lifted_at=None,
        address__in={normal_address(m.channel, m.to) for m in messages},
        business_id__in={m.business_id for m in messages},
    ).values_list("business_id", "channel", "address")
    return set(rows)


def is_suppressed(message: Message, suppressed: set[tuple[object, str, str]]) -> bool:
    return (message.business_id, message.channel, normal_address(message.channel, message.to)) in (
        suppressed
    )


def unsubscribe_url(message: Message) -> str:
    """The email's one-click unsubscribe link: its message and address, signed."""
    token = signing.dumps({"m": message.pk, "a": message.to}, salt=UNSUBSCRIBE_SALT)
    return f"{settings.BASE_URL or settings.PUBLIC_URL_FALLBACK}{UNSUBSCRIBE_PATH}{token}"


def _linked_message(token: str) -> Message | None:
    """The email a link was made for, if the link is ours and names that email's address."""
    try:
        signed = signing.loads(token, salt=UNSUBSCRIBE_SALT)
        message_id, address = int(signed["m"]), str(signed["a"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return None
    message = Message.objects.filter(pk=message_id, channel=Channel.EMAIL).first()
    if message is None or normal_address(Channel.EMAIL, message.to) != normal_address(
        Channel.EMAIL, address
    ):
        return None
    return message


def unsubscribe_by_link(*, token: str, at: datetime) -> str:
    """An email's unsubscribe link used: "unsubscribed", "used" (it worked once already),
    "already" (the address is on the business's list) or "invalid"."""
    message = _linked_message(token)
    if message is None:
        return "invalid"
    with transaction.atomic():
        Message.objects.select_for_update().filter(pk=message.pk).first()  # one use at a time
        if Suppression.objects.filter(from_message_id=message.pk).exists():
            return "used"
        address = normal_address(Channel.EMAIL, message.to)
        active = Suppression.objects.filter(
            business_id=message.business_id, channel=Channel.EMAIL, address=address, lifted_at=None
        )
        if active.exists():
            return "already"
        Suppression.objects.create(
            business_id=message.business_id,
            channel=Channel.EMAIL,
            address=address,
            source=OptOut.EMAIL_UNSUBSCRIBE,
            created_at=at,
            from_message_id=message.pk,
        )
    return "unsubscribed"
