"""The channels a message goes out on, behind one small interface: `send(messages)` gives
one `Outcome` per message, in order, and never raises for a message's own failure.

Email goes through Django's email backend (SMTP in production: EMAIL_HOST, EMAIL_PORT, …);
SMS through a Twilio-compatible HTTP API (SMS_API_URL, SMS_ACCOUNT_SID, SMS_AUTH_TOKEN,
SMS_FROM). An outcome says whether the message was taken, and whether a failure surely left
it unsent (`retry`: refused before it was accepted, worth another try) or may have sent it
(a timeout mid-answer: not tried again, since messages go out at most once).
"""

from __future__ import annotations

import base64
import contextlib
import json
import smtplib
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from notifications.models import Channel

ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class Outgoing:
    to: str
    subject: str
    body: str
    # An email's one-click unsubscribe link (RFC 8058), sent in its headers and under its text.
    unsubscribe_url: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    sent: bool
    retry: bool = False  # surely not sent: another attempt may be made
    error: str = ""


SENT = Outcome(sent=True)


class Sender(Protocol):
    def send(self, messages: Sequence[Outgoing]) -> list[Outcome]: ...


class EmailSender:
    """Django's email backend, one connection for the lot."""

    def send(self, messages: Sequence[Outgoing]) -> list[Outcome]:
        connection = get_connection(fail_silently=False, timeout=settings.NOTIFY_TIMEOUT_SECONDS)
        try:
            connection.open()
        except (OSError, smtplib.SMTPException) as exc:
            return [_failed(f"Could not reach the mail server: {exc}", retry=True)] * len(messages)
        try:
            return [self._one(connection, message) for message in messages]
        finally:
            # What was sent is sent: a failed QUIT changes nothing.
            with contextlib.suppress(OSError, smtplib.SMTPException):
                connection.close()

    def _one(self, connection, message: Outgoing) -> Outcome:
        email = EmailMessage(
            subject=message.subject,
            body=message.body,
            from_email=settings.NOTIFY_FROM_EMAIL,
            to=[message.to],
            connection=connection,
        )
        if message.unsubscribe_url:
            # One click in the mail client unsubscribes (RFC 8058: a POST to the link).
            email.extra_headers["List-Unsubscribe"] = f"<{message.unsubscribe_url}>"
            email.extra_headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
            email.body += f"\n\n--\nTo get no more of these emails: {message.unsubscribe_url}"
        try:
            email.send()
        except smtplib.SMTPRecipientsRefused as exc:
            return _failed(f"The mail server refused the address: {exc.recipients}")
        except smtplib.SMTPResponseException as exc:
            # 4xx is "try again later": the message was not taken.
            return _failed(f"SMTP {exc.smtp_code}: {exc.smtp_error!r}", retry=exc.smtp_code < 500)
        except TimeoutError as exc:
            return _failed(f"The mail server did not answer in time: {exc}")
        except (OSError, smtplib.SMTPException) as exc:
            return _failed(f"Mail error: {exc}")
        return SENT


class SmsSender:
    """A Twilio-compatible API: POST a form to {SMS_API_URL}/2010-04-01/Accounts/{SID}/
    Messages.json with basic auth; 2xx is taken, 429 and 5xx are worth a retry."""

    def send(self, messages: Sequence[Outgoing]) -> list[Outcome]:
        if not settings.SMS_API_URL or not settings.SMS_ACCOUNT_SID:
            return [_failed("SMS is not configured (SMS_API_URL, SMS_ACCOUNT_SID).")] * len(
                messages
            )
        return [self._one(message) for message in messages]

    def _one(self, message: Outgoing) -> Outcome:
        sid = settings.SMS_ACCOUNT_SID
        account = urllib.parse.quote(sid, safe="")
        url = f"{settings.SMS_API_URL}/2010-04-01/Accounts/{account}/Messages.json"
        form = {"To": message.to, "From": settings.SMS_FROM, "Body": message.body}
        credentials = base64.b64encode(f"{sid}:{settings.SMS_AUTH_TOKEN}".encode()).decode()
        request = urllib.request.Request(
            url,
            data=urllib.parse.urlencode(form).encode(),
            headers={"Authorization": f"Basic {credentials}", "Accept": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=settings.NOTIFY_TIMEOUT_SECONDS):
                return SENT
        except urllib.error.HTTPError as exc:
            retry = exc.code == 429 or exc.code >= 500
            return _failed(f"SMS provider {exc.code}: {_provider_message(exc)}", retry=retry)
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError | socket.timeout):
                return _failed("The SMS provider did not answer in time.")
            return _failed(f"Could not reach the SMS provider: {exc.reason}", retry=True)
        except TimeoutError:
            return _failed("The SMS provider did not answer in time.")
        except OSError as exc:
            return _failed(f"SMS error: {exc}")


def _provider_message(error: urllib.error.HTTPError) -> str:
    """Twilio's JSON error `message`, else the start of the body."""
    body = error.read(2000).decode(errors="replace")
    try:
        return str(json.loads(body).get("message") or body)
    except (ValueError, AttributeError):
        return body or error.reason


def _failed(error: str, *, retry: bool = False) -> Outcome:
    return Outcome(sent=False, retry=retry, error=error[:ERROR_CHARS])


SENDERS: dict[str, type[Sender]] = {Channel.EMAIL: EmailSender, Channel.SMS: SmsSender}


def sender_for(channel: str) -> Sender:
    return SENDERS[channel]()
