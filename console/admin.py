"""Registers the operator console's pages: one module per area of the business."""

from console import (  # noqa: F401 -- registers
    businesses,
    cash,
    cod,
    couriers,
    coverage,
    dispatch,
    fleet,
    history,
    money,
    orders,
    pay,
    places,
)
