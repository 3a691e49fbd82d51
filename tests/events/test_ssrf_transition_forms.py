"""IPv6 forms that carry an IPv4 address (6to4, NAT64, Teredo, IPv4-mapped) are judged by it:
refused at save through the API and at delivery, where the checked address is the one used.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

from events.models import WebhookEndpoint
from events.ssrf import UnsafeUrl, embedded_ipv4, refuse_internal
from tests.events.webhooks import deliveries_of, emit, make_endpoint
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

# Each form, carrying an internal IPv4 address, and the IPv4 addresses it carries.
INTERNAL_FORMS = {
    "6to4 of 127.0.0.1": ("2002:7f00:1::", ["127.0.0.1"]),
    "6to4 of 10.0.0.1": ("2002:a00:1::1", ["10.0.0.1"]),
    "6to4 of the metadata address": ("2002:a9fe:a9fe::", ["169.254.169.254"]),
    "6to4 of 192.168.1.20": ("2002:c0a8:114:1::5", ["192.168.1.20"]),
    "NAT64 of 127.0.0.1": ("64:ff9b::7f00:1", ["127.0.0.1"]),
    "NAT64 of the metadata address": ("64:ff9b::a9fe:a9fe", ["169.254.169.254"]),
    # Teredo: the server's address, then the client's (stored inverted, RFC 4380).
    "Teredo to a client 127.0.0.1": (
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
        ["65.54.227.120", "127.0.0.1"],
    ),
    "Teredo through a server 10.0.0.1": ("2001:0:a00:1::f7ff:fffe", ["10.0.0.1", "8.0.0.1"]),
    "IPv4-mapped 127.0.0.1": ("::ffff:127.0.0.1", ["127.0.0.1"]),
    "IPv4-mapped 10.0.0.1": ("::ffff:a00:1", ["10.0.0.1"]),
}
FORMS = list(INTERNAL_FORMS.values())
NAMES = list(INTERNAL_FORMS)


@pytest.fixture
def production_urls(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False


# --- the classifier ------------------------------------------------------------------------


@pytest.mark.parametrize(("address", "carried"), FORMS, ids=NAMES)
def test_each_form_gives_the_ipv4_address_it_carries(address, carried):
    assert [str(ip) for ip in embedded_ipv4(ipaddress.ip_address(address))] == carried


@pytest.mark.parametrize(
    "address", ["2606:4700::1111", "2a00:1450:4001:82b::200e", "8.8.8.8", "fe80::1"]
)
def test_other_addresses_carry_none(address):
    assert embedded_ipv4(ipaddress.ip_address(address)) == []


@pytest.mark.parametrize(("address", "carried"), FORMS, ids=NAMES)
def test_each_form_carrying_an_internal_address_is_refused(address, carried):
    with pytest.raises(UnsafeUrl):
        refuse_internal(address)


@pytest.mark.parametrize("address", ["2606:4700::1111", "::ffff:8.8.8.8", "93.184.215.14"])
def test_public_addresses_pass(address):
    refuse_internal(address)


# --- at save, through the API --------------------------------------------------------------


@pytest.mark.parametrize(("address", "carried"), FORMS, ids=NAMES)
def test_the_api_refuses_each_form_at_save(alice, api, production_urls, address, carried):
    url = f"https://[{address}]/h"
    response = api.post("/webhook-endpoints", {"url": url}, alice.sandbox_key)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == ["url"]
    assert "loopback, private or link-local" in error["details"][0]["message"]
    assert WebhookEndpoint.objects.count() == 0


@pytest.mark.parametrize(("address", "carried"), FORMS, ids=NAMES)
def test_a_name_that_resolves_to_each_form_is_refused_at_save(
    alice, api, production_urls, monkeypatch, address, carried
):
    answer_ipv6(monkeypatch, "hooks.example", address)
    url = "https://hooks.example/h"
    response = api.post("/webhook-endpoints", {"url": url}, alice.sandbox_key)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == ["url"]
    assert WebhookEndpoint.objects.count() == 0


# --- at delivery -----------------------------------------------------------------------------


@pytest.mark.parametrize(("address", "carried"), FORMS, ids=NAMES)
def test_a_delivery_to_a_name_that_now_resolves_to_each_form_is_refused(
    alice, production_urls, monkeypatch, webhook_receiver, address, carried
):
    from events.tasks import send_due_deliveries_of

    # Saved while the name was public (or before the rule); it now answers the form.
    endpoint = make_endpoint(alice, f"https://rebound.example:{webhook_receiver.port}/h")
    answer_ipv6(monkeypatch, "rebound.example", address)
    emit(alice)

    assert send_due_deliveries_of(endpoint.pk) == 1

    attempt = deliveries_of(endpoint)[0].log.get()
    assert attempt.status_code is None
    assert attempt.error == "Refused: Must not point at a loopback, private or link-local address."
    assert webhook_receiver.received == []


def answer_ipv6(monkeypatch, name: str, address: str) -> None:
    """socket.getaddrinfo answering `name` with one IPv6 address (the suite has no DNS)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == name:
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
