"""Failed-login throttling per client address and per username from it, in shared counters."""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress

from django.conf import settings

from core import counters

# Per username from one address: a guesser at one account is stopped long before a password
# of any strength falls, and a user's own typos elsewhere don't lock them out here.
MAX_FAILED_LOGINS = 10
# Per address, whatever the usernames: each failure costs a full password hash (~270 ms of CPU,
# also for a username that does not exist), so fresh usernames from one address must not buy
# unlimited hashing. 30 leaves room for an office of people behind one NAT mistyping.
MAX_FAILED_LOGINS_PER_ADDRESS = 30
WINDOW_SECONDS = 15 * 60

# Which limit a refused sign-in met.
ADDRESS = "address"
USERNAME = "username"
UNAVAILABLE = "unavailable"  # the counters cannot be read: nobody signs in for the moment


def _hashed(kind: str, raw: str) -> str:
    # Hashed so an odd username can never make an invalid (or colliding) counter key.
    return f"login-failures:{kind}:" + hashlib.sha256(raw.encode()).hexdigest()


def _username_key(username: str, address: str) -> str:
    return _hashed("user", f"{username.strip().lower()}|{address}")


def _address_key(address: str) -> str:
    return _hashed("address", address_bucket(address))


def address_bucket(address: str) -> str:
    """What one client is: an IPv4 address, or an IPv6 /64 (one subscriber's whole network).

    Anyone with IPv6 holds 2**64 addresses, so counting single ones would not count at all.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def client_address(request) -> str:
    """The client's address as the outermost proxy we trust saw it.

    With TRUSTED_PROXY_COUNT = 0 that is REMOTE_ADDR: X-Forwarded-For is the client's to forge.
    With N trusted proxies, each appends the address it was reached from, so the Nth entry from
    the right is the one the outermost of them saw; whatever is left of it the client wrote.
    A header too short for N, or an entry that is not an address, falls back to REMOTE_ADDR.
    """
    if request is None:
        return ""
    remote = request.META.get("REMOTE_ADDR", "")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
    if len(forwarded) < hops:
        return remote
    try:
        return str(ipaddress.ip_address(forwarded[-hops].strip()))
    except ValueError:
        return remote


def locked_out_by(username: str, address: str) -> str | None:
    """ADDRESS or USERNAME if that limit is reached, else None: one read, no hashing.

    UNAVAILABLE while the counters cannot be read (Redis down): a throttle that cannot count
    must not let a guesser through, so sign-ins wait until it can.
    """
    address_key = _address_key(address)
    keys = [address_key]
    if username:
        keys.append(_username_key(username, address))
    try:
        counts = counters.live_hits(keys)
    except counters.CountersUnavailable:
        return UNAVAILABLE
    if counts.get(address_key, 0) >= MAX_FAILED_LOGINS_PER_ADDRESS:
        return ADDRESS
    if username and counts.get(keys[1], 0) >= MAX_FAILED_LOGINS:
        return USERNAME
    return None


def _count(key: str) -> None:
    """Count one failure; the window starts at the first failure and is not extended."""
    counters.count(key, WINDOW_SECONDS)


def record_failure(username: str, address: str) -> None:
    # Uncounted while the counters are away: the next sign-in waits for them (locked_out_by).
    with contextlib.suppress(counters.CountersUnavailable):
        _count(_address_key(address))
        if username:
            _count(_username_key(username, address))


def clear_failures(username: str, address: str) -> None:
    """After a successful sign-in: that username's count only.

    The address count stays: otherwise a guesser with one account of their own could sign in
    between guesses and never reach the address limit.
    """
    with contextlib.suppress(counters.CountersUnavailable):  # else its window ends by itself
        counters.forget(_username_key(username, address))
