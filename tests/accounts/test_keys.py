"""API keys (docs/contract.md §2): format, stored as a digest, revocation, limits, last use,
stages."""

from __future__ import annotations

import hashlib
import re
import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts import services
from accounts.models import ApiKey
from accounts.services import OnboardingError
from core.models import RateCounter

pytestmark = pytest.mark.django_db

FORMAT = re.compile(r"^(svc_test_|svc_live_)[A-Za-z0-9]{40}$")


def issue(tenant, environment: str = "sandbox") -> services.IssuedKey:
    return services.create_api_key(business=tenant.business, environment=environment, label="t")


def active_keys(tenant, environment: str) -> int:
    return ApiKey.objects.filter(
        business=tenant.business, environment=environment, revoked_at__isnull=True
    ).count()


def test_keys_carry_their_environment_marker_and_40_letters_or_digits(alice):
    sandbox = [alice.sandbox_key] + [issue(alice).plaintext for _ in range(3)]
    live = [alice.live_key] + [issue(alice, "live").plaintext for _ in range(3)]

    assert all(FORMAT.match(key) and key.startswith("svc_test_") for key in sandbox)
    assert all(FORMAT.match(key) and key.startswith("svc_live_") for key in live)
    assert len(set(sandbox + live)) == 8


def test_only_a_digest_and_a_hint_of_the_key_are_stored(alice):
    issued = issue(alice)
    plaintext, secret = issued.plaintext, issued.plaintext[9:]

    row = ApiKey.objects.get(pk=issued.key.pk)
    assert row.digest == hashlib.sha256(plaintext.encode()).hexdigest()
    assert row.hint == f"svc_test_{secret[:4]}…{secret[-4:]}"
    for key in (alice.sandbox_key, alice.live_key, plaintext):
        for stored in ApiKey.objects.values_list():
            text = " ".join(str(value) for value in stored)
            assert key not in text
            assert key[9:] not in text
            assert key[9:30] not in text  # not even half of the secret


def test_a_revoked_key_is_401_and_the_others_keep_working(alice, api):
    spare = issue(alice)
    assert api.get("/account", spare.plaintext).status_code == 200

    services.revoke_api_key(key=spare.key)
    refused = api.get("/account", spare.plaintext)

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "UNAUTHENTICATED"
    assert refused["WWW-Authenticate"].startswith("Bearer")
    assert ApiKey.objects.get(pk=spare.key.pk).revoked_at is not None
    assert api.get("/account", alice.sandbox_key).status_code == 200


def test_a_well_formed_key_that_was_never_issued_is_401(alice, api):
    forged = alice.sandbox_key[:-1] + ("a" if alice.sandbox_key[-1] != "a" else "b")

    refused = api.get("/account", forged)

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "UNAUTHENTICATED"


def test_at_most_the_allowed_number_of_active_keys_per_environment(alice, settings):
    limit = settings.MAX_ACTIVE_KEYS_PER_ENVIRONMENT
    assert limit == 10
    while active_keys(alice, "sandbox") < limit:
        issue(alice)

    with pytest.raises(OnboardingError):
        issue(alice)
    assert active_keys(alice, "sandbox") == limit

    issue(alice, "live")  # the other environment counts on its own
    services.revoke_api_key(key=ApiKey.objects.filter(environment="sandbox").first())
    issue(alice)  # a revoked key frees its place
    assert active_keys(alice, "sandbox") == limit


def test_last_used_at_is_written_on_use_at_most_once_a_minute(alice, api):
    start = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    row = ApiKey.objects.get(business=alice.business, environment="sandbox")
    assert row.last_used_at is None

    with time_machine.travel(start, tick=False) as traveller:
        assert api.get("/account", alice.sandbox_key).status_code == 200
        row.refresh_from_db()
        assert row.last_used_at == start

        traveller.move_to(start + timedelta(seconds=59))
        api.get("/account", alice.sandbox_key)
        row.refresh_from_db()
        assert row.last_used_at == start

        traveller.move_to(start + timedelta(seconds=61))
        api.get("/account", alice.sandbox_key)
        row.refresh_from_db()
        assert row.last_used_at == start + timedelta(seconds=61)

    live = ApiKey.objects.get(business=alice.business, environment="live")
    assert live.last_used_at is None  # only the key that was used


@pytest.mark.parametrize("stage", ["registered", "requested"])
def test_a_sandbox_key_cannot_be_made_before_approval(make_tenant, stage):
    tenant = make_tenant(stage=stage)

    with pytest.raises(OnboardingError):
        issue(tenant, "sandbox")
    with pytest.raises(OnboardingError):
        issue(tenant, "live")
    assert not ApiKey.objects.filter(business=tenant.business).exists()


def test_a_live_key_cannot_be_made_before_live_access(make_tenant):
    tenant = make_tenant(stage="approved")

    with pytest.raises(OnboardingError):
        issue(tenant, "live")
    assert not ApiKey.objects.filter(business=tenant.business, environment="live").exists()

    services.enable_live(business=tenant.business)
    tenant.business.refresh_from_db()
    assert FORMAT.match(issue(tenant, "live").plaintext)


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


@pytest.mark.parametrize("counting", [False, True])
@pytest.mark.parametrize("with_plan", [True, False])
def test_the_key_read_as_one_row_is_what_the_orm_reads(alice, with_plan, counting):
    """accounts.auth.unrevoked_key makes the key, its business and plan from one row whose
    SQL is compiled once: every field and type as select_related gives them; the same when
    the statement also counts the call's rate-limit hit (core.counters.count_with_row)."""
    from accounts.auth import unrevoked_key
    from accounts.keys import digest_of
    from core.throttling import Hit, rate_of

    hit = Hit("default", rate_of("default"), time.time()) if counting else None
    if not with_plan:
        type(alice.business).objects.filter(pk=alice.business.pk).update(pricing_plan=None)
    digest = digest_of(alice.sandbox_key)
    expected = ApiKey.objects.select_related("business__pricing_plan").get(digest=digest)

    for call in (1, 2):  # compiled, then sent again as compiled
        key, window = unrevoked_key(digest, hit)
        assert _fields(key) == _fields(expected)
        assert {k: type(v) for k, v in _fields(key).items()} == {
            k: type(v) for k, v in _fields(expected).items()
        }
        assert _fields(key.business) == _fields(expected.business)
        assert key.business.pk == key.business_id and not key._state.adding
        if with_plan:
            assert _fields(key.business.pricing_plan) == _fields(expected.business.pricing_plan)
        else:
            assert key.business.pricing_plan is None
        assert (window and window.hits) == (call if counting else None)
    if counting:
        assert RateCounter.objects.get(key=f"ratelimit:default:{key.pk}").hits == 2

    assert unrevoked_key(digest_of(issue(alice).plaintext), hit)[0] is not None
    ApiKey.objects.filter(digest=digest).update(revoked_at=datetime.now(UTC))
    assert unrevoked_key(digest, hit) == (None, None)
    assert unrevoked_key("0" * 64, hit) == (None, None)
    # A key not found counts nothing: only the two reads of the valid keys above counted.
    assert sum(RateCounter.objects.values_list("hits", flat=True)) == (3 if counting else 0)
