"""Fixtures of the notification tests: a real SMTP server (aiosmtpd on loopback), the
loopback HTTP receiver of tests/webhook_receiver.py as the SMS provider, and a shop with
its notifications switched on through the service the dashboard uses."""

from __future__ import annotations

import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message as EmailMessage

import pytest
from aiosmtpd.controller import Controller
from django.utils import timezone

from notifications import texts
from notifications.models import Channel, Kind
from notifications.services import TemplateIn, save_templates
from tests.webhook_receiver import Received, start_receiver, webhook_receiver

__all__ = ["start_receiver", "webhook_receiver"]

SMS_SID = "AC0123456789"
SMS_TOKEN = "sms-auth-token"
SMS_FROM = "+15005550006"


@dataclass
class Inbox:
    """What the SMTP server accepted: one email message per DATA, with its envelope."""

    mails: list[tuple[str, list[str], EmailMessage]] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    port: int = 0

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        with self.arrived:
            wire = envelope.original_content or envelope.content
            mail = message_from_bytes(wire.replace(b"\r\n", b"\n"))  # SMTP's line ends
            self.mails.append((envelope.mail_from, list(envelope.rcpt_tos), mail))
            self.arrived.notify_all()
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, timeout: float = 15.0) -> list:
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.mails) >= count, timeout):
                raise AssertionError(f"the SMTP server got {len(self.mails)}, expected {count}")
            return list(self.mails)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on loopback, and Django's SMTP backend pointed at it."""
    inbox = Inbox(port=free_port())
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", inbox.port
    try:
        yield inbox
    finally:
        controller.stop()


@pytest.fixture
def sms_provider(webhook_receiver, settings):
    """The loopback receiver as a Twilio-compatible API, and the settings naming it."""
    settings.SMS_API_URL = webhook_receiver.url("")
    settings.SMS_ACCOUNT_SID, settings.SMS_AUTH_TOKEN = SMS_SID, SMS_TOKEN
    settings.SMS_FROM = SMS_FROM
    return webhook_receiver


def sms_env(receiver) -> dict[str, str]:
    """The same settings for a db_worker process."""
    return {
        "SMS_API_URL": receiver.url(""),
        "SMS_ACCOUNT_SID": SMS_SID,
        "SMS_AUTH_TOKEN": SMS_TOKEN,
        "SMS_FROM": SMS_FROM,
    }


def form_of(received: Received) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(received.body))


def switch_on(tenant, environment: str, *kinds: str, channels=(Channel.SMS,)) -> None:
    """Opt the business into these kinds on these channels, with the default texts."""
    save_templates(
        business=tenant.business,
        environment=environment,
        templates=[
            TemplateIn(
                channel=channel,
                kind=kind,
                enabled=True,
                subject=texts.default_text(channel, kind).subject,
                body=texts.default_text(channel, kind).body,
            )
            for channel in channels
            for kind in kinds or Kind.values
        ],
        now=timezone.now(),
    )
