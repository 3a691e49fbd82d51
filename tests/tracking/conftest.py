"""The couriers' fixtures, for the tracking tests that read what a courier on the way adds."""

from tests.couriers.conftest import dara, make_courier  # noqa: F401 (fixtures)
