"""Fixtures of the crash proofs: a real gunicorn, a way to hold a batch mid-transaction,
and a shop whose area is open all day (gunicorn runs on the real clock)."""

import pytest

from tests.reliability.batch_hold import BatchHold, open_all_day
from tests.reliability.gunicorn_server import serving


@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    with serving(tmp_path_factory.mktemp("gunicorn") / "gunicorn.log") as running:
        yield running


@pytest.fixture
def hold():
    batch_hold = BatchHold()
    yield batch_hold
    batch_hold.remove()


@pytest.fixture
def shop(make_tenant):
    open_all_day()
    return make_tenant(name="Big Shop", sandbox_balance="10000.00")
