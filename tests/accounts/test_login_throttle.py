"""The failed-login throttle per client address: who counts as one client, and that a locked-out
address costs no password hashing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client, RequestFactory

from accounts import ratelimit
from accounts.ratelimit import MAX_FAILED_LOGINS, MAX_FAILED_LOGINS_PER_ADDRESS
from tests.config.test_production_settings import PRODUCTION, run_python, start_error
from tests.factories import UserFactory

PASSWORD = "correct horse battery"
ADDRESS_LOCKED = "Too many failed sign-in attempts from your address"


@pytest.fixture(autouse=True)
def _each_store(db, counter_store):
    # The throttle counts in core/counters.py: every test runs in the database's table (rolled
    # back after each test) and again in Redis (emptied around each test).
    return counter_store


@pytest.fixture
def password_hashes(monkeypatch):
    """How often a password was hashed (set or checked): the CPU a sign-in costs."""
    calls = []
    encode, verify = MD5PasswordHasher.encode, MD5PasswordHasher.verify

    def counting_encode(self, password, salt):
        calls.append("encode")
        return encode(self, password, salt)

    def counting_verify(self, password, encoded):
        calls.append("verify")
        return verify(self, password, encoded)

    monkeypatch.setattr(MD5PasswordHasher, "encode", counting_encode)
    monkeypatch.setattr(MD5PasswordHasher, "verify", counting_verify)
    return calls


def fail_with_fresh_usernames(client: Client, count: int, path: str = "/login/", **extra):
    for n in range(count):
        response = client.post(
            path, {"username": f"nobody{n}@example.com", "password": "wrong"}, **extra
        )
        assert response.status_code == 200
        assert "Too many" not in response.content.decode()


def sign_in(client: Client, username: str, password: str = PASSWORD, **extra):
    return client.post("/login/", {"username": username, "password": password}, **extra)


# --- One address, many usernames ------------------------------------------------------------


@pytest.mark.django_db
def test_fresh_usernames_from_one_address_are_locked_out(client):
    fail_with_fresh_usernames(client, MAX_FAILED_LOGINS_PER_ADDRESS)
    response = sign_in(client, "yet-another@example.com", "wrong")
    assert response.status_code == 200
    assert ADDRESS_LOCKED in response.content.decode()


@pytest.mark.django_db
def test_a_locked_out_address_is_refused_the_right_password_too(client):
    UserFactory(username="shop@example.com")
    fail_with_fresh_usernames(client, MAX_FAILED_LOGINS_PER_ADDRESS)
    response = sign_in(client, "shop@example.com")
    assert response.status_code == 200
    assert ADDRESS_LOCKED in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_another_address_still_signs_in(client):
    UserFactory(username="shop@example.com")
    fail_with_fresh_usernames(client, MAX_FAILED_LOGINS_PER_ADDRESS)
    other = Client(REMOTE_ADDR="10.9.8.7")
    assert sign_in(other, "shop@example.com").status_code == 302
    assert other.session["_auth_user_id"]


@pytest.mark.django_db
def test_a_locked_out_address_reaches_no_password_hashing(client, password_hashes):
    UserFactory(username="shop@example.com")
    password_hashes.clear()
    fail_with_fresh_usernames(client, MAX_FAILED_LOGINS_PER_ADDRESS)
    # Before the lockout every failure hashed once, unknown usernames too.
    assert len(password_hashes) == MAX_FAILED_LOGINS_PER_ADDRESS
    password_hashes.clear()

    for username, password in [("fresh@example.com", "wrong"), ("shop@example.com", PASSWORD)]:
        response = sign_in(client, username, password)
        assert ADDRESS_LOCKED in response.content.decode()
        assert "_auth_user_id" not in client.session

    assert password_hashes == []


@pytest.mark.django_db
def test_a_locked_out_username_reaches_no_password_hashing(client, password_hashes):
    UserFactory(username="shop@example.com")
    for _ in range(MAX_FAILED_LOGINS):
        sign_in(client, "shop@example.com", "wrong")
    password_hashes.clear()
    response = sign_in(client, "shop@example.com")
    assert "Too many failed sign-in attempts for this account" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert password_hashes == []


@pytest.mark.django_db
def test_the_admin_login_counts_per_address_too(client, password_hashes):
    get_user_model().objects.create_superuser("operator", "op@example.com", PASSWORD)
    fail_with_fresh_usernames(client, MAX_FAILED_LOGINS_PER_ADDRESS, path="/admin/login/")
    password_hashes.clear()
    response = client.post("/admin/login/", {"username": "operator", "password": PASSWORD})
    assert response.status_code == 200
    assert ADDRESS_LOCKED in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert password_hashes == []


@pytest.mark.django_db
def test_signing_in_clears_the_username_count_but_not_the_address_count(client):
    UserFactory(username="mine@example.com")
    fail_with_fresh_usernames(client, MAX_FAILED_LOGINS_PER_ADDRESS - 1)
    # A guesser's own account, signed into between guesses, does not reset the address.
    assert sign_in(client, "mine@example.com").status_code == 302
    client.logout()
    sign_in(client, "victim@example.com", "wrong")
    assert ADDRESS_LOCKED in sign_in(client, "victim@example.com").content.decode()


@pytest.mark.django_db
def test_a_form_without_password_does_not_reset_the_username_count(client):
    UserFactory(username="shop@example.com")
    for _ in range(MAX_FAILED_LOGINS - 1):
        sign_in(client, "shop@example.com", "wrong")
    client.post("/login/", {"username": "shop@example.com", "password": ""})
    sign_in(client, "shop@example.com", "wrong")
    response = sign_in(client, "shop@example.com")
    assert "Too many failed sign-in attempts for this account" in response.content.decode()
    assert "_auth_user_id" not in client.session


# --- Which address: REMOTE_ADDR, or X-Forwarded-For behind trusted proxies --------------------


@pytest.mark.django_db
def test_forged_forwarded_for_does_not_escape_the_lockout_without_trusted_proxies(client, settings):
    settings.TRUSTED_PROXY_COUNT = 0
    for n in range(MAX_FAILED_LOGINS_PER_ADDRESS):
        sign_in(client, f"nobody{n}@example.com", "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
    response = sign_in(client, "nobody@example.com", "wrong", HTTP_X_FORWARDED_FOR="192.0.2.200")
    assert ADDRESS_LOCKED in response.content.decode()


@pytest.mark.django_db
def test_clients_behind_one_trusted_proxy_are_counted_apart(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    UserFactory(username="shop@example.com")
    # Both reach the app through the load balancer at 10.0.0.2, which appends their address.
    guesser = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.7")
    customer = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.9")
    fail_with_fresh_usernames(guesser, MAX_FAILED_LOGINS_PER_ADDRESS)
    assert ADDRESS_LOCKED in sign_in(guesser, "shop@example.com").content.decode()
    # The guesser's own left-hand entries are not believed.
    forged = sign_in(guesser, "shop@example.com", HTTP_X_FORWARDED_FOR="192.0.2.1, 203.0.113.7")
    assert ADDRESS_LOCKED in forged.content.decode()
    assert sign_in(customer, "shop@example.com").status_code == 302


def request_from(remote: str, forwarded_for: str | None = None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded_for is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded_for
    return RequestFactory().get("/login/", **extra)


@pytest.mark.parametrize(
    ("proxies", "forwarded_for", "expected"),
    [
        (0, None, "10.0.0.2"),
        (0, "203.0.113.7", "10.0.0.2"),
        (1, None, "10.0.0.2"),
        (1, "203.0.113.7", "203.0.113.7"),
        (1, "192.0.2.1, 203.0.113.7", "203.0.113.7"),
        (1, " 192.0.2.1 ,  203.0.113.7  ", "203.0.113.7"),
        (2, "192.0.2.1, 203.0.113.7, 10.0.0.9", "203.0.113.7"),
        (2, "203.0.113.7", "10.0.0.2"),  # fewer entries than proxies
        (1, "192.0.2.1, not-an-address", "10.0.0.2"),
        (1, "192.0.2.1, 203.0.113.7:4431", "10.0.0.2"),
        (1, "", "10.0.0.2"),
        (1, "2001:DB8:0:0::7", "2001:db8::7"),
    ],
)
def test_client_address(settings, proxies, forwarded_for, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    assert ratelimit.client_address(request_from("10.0.0.2", forwarded_for)) == expected


@pytest.mark.django_db
def test_ipv6_addresses_count_per_slash_64():
    for n in range(MAX_FAILED_LOGINS_PER_ADDRESS):
        ratelimit.record_failure(f"nobody{n}@example.com", f"2001:db8:1:2::{n + 1:x}")
    assert ratelimit.locked_out_by("x@example.com", "2001:db8:1:2:ffff::1") == ratelimit.ADDRESS
    assert ratelimit.locked_out_by("x@example.com", "2001:db8:1:3::1") is None


def test_trusted_proxy_count_is_read_from_the_environment():
    show = "from django.conf import settings; print(settings.TRUSTED_PROXY_COUNT)"
    for raw, value in [(None, "0"), ("1", "1"), ("", "0")]:
        environment = PRODUCTION if raw is None else {**PRODUCTION, "TRUSTED_PROXY_COUNT": raw}
        result = run_python(environment, "-c", show)
        assert result.stdout.strip() == value, result.stderr
    for bad in ["-1", "one"]:
        assert "TRUSTED_PROXY_COUNT" in start_error({**PRODUCTION, "TRUSTED_PROXY_COUNT": bad})
