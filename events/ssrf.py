"""Which webhook URLs we may call (docs/contract.md §11): https, and never an internal address.

With WEBHOOK_ALLOW_PRIVATE_URLS (local demos and tests; on by default under `make run`, DEBUG
with the embedded SQLite database) plain http and private addresses are allowed. The rule is
checked when an endpoint is saved and again at each delivery, where the address connected to
is the address checked (events/transport.py).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import SplitResult, urlsplit

from django.conf import settings


class UnsafeUrl(ValueError):
    """The URL may not be called; the message says why, for a `url` detail."""


# Said when an endpoint is saved, after any refusal that WEBHOOK_ALLOW_PRIVATE_URLS lifts: a
# newcomer's first webhook is on their own machine (docs/webhooks.md, "Try it locally").
LOCAL_DEVELOPMENT = (
    "For local development only, the server's operator can allow plain http and private "
    "addresses with WEBHOOK_ALLOW_PRIVATE_URLS=true (in .env), then restart it."
)


def private_urls_allowed() -> bool:
    """Whether plain http and internal addresses are allowed: the one reading of the setting
    (config/settings.py), for the checks below and for the pages that say so."""
    return settings.WEBHOOK_ALLOW_PRIVATE_URLS


def check_url(url: str) -> None:
    """Refuse a malformed URL, another scheme, or (in production) an internal host."""
    _parse(url)  # malformed or not http(s): refused whatever the setting says
    if private_urls_allowed():
        return  # no look-up: any host will do
    try:
        checked_addresses(url)
    except UnsafeUrl as exc:
        raise UnsafeUrl(f"{exc} {LOCAL_DEVELOPMENT}") from exc


def checked_addresses(url: str) -> tuple[SplitResult, list[str]]:
    """Resolve the URL's host once and check every address; a caller connects to these.

    At delivery (events/transport.py) a name that resolved to a public address when the
    endpoint was saved must not reach an internal one now (DNS rebinding), so nothing
    re-resolves between this check and the connection.
    """
    parts = _parse(url)
    allow_private = private_urls_allowed()
    if parts.scheme != "https" and not allow_private:
        raise UnsafeUrl("Must be an https URL.")
    addresses = resolve(parts.hostname, parts.port or default_port(parts.scheme))
    if not allow_private:
        for address in addresses:
            refuse_internal(address)
    return parts, addresses


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _parse(url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a bad port
    except ValueError as exc:
        raise UnsafeUrl("Must be a valid http(s) URL.") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeUrl("Must be a valid http(s) URL.")
    return parts


def resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeUrl("The host name does not resolve.") from exc
    return sorted({info[4][0] for info in infos})


def refuse_internal(address: str) -> None:
    """Loopback, private, link-local, multicast, reserved or unspecified: never called.

    An IPv6 address that carries an IPv4 one (docs/api.md, webhook endpoints) is judged by
    that IPv4 address too: 2002:7f00:1:: is 127.0.0.1 reached through 6to4.
    """
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped  # the host's own IPv4 stack: only the IPv4 address counts
    for candidate in (ip, *embedded_ipv4(ip)):
        if _internal(candidate):
            raise UnsafeUrl("Must not point at a loopback, private or link-local address.")


# NAT64's well-known prefix (RFC 6052): the IPv4 address is the last 32 bits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def embedded_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 transition form reaches: IPv4-mapped (::ffff:0:0/96),
    6to4 (2002::/16), Teredo (2001::/32: its server and its client) and NAT64 (64:ff9b::/96)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    if ip.ipv4_mapped:
        return [ip.ipv4_mapped]
    if ip.sixtofour:
        return [ip.sixtofour]
    if ip.teredo:
        return list(ip.teredo)
    if ip in _NAT64:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)]
    return []


def _internal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )
