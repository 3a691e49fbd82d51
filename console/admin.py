"""Registers the operator console's pages: one module per area of the business."""

from console import businesses, coverage, money, orders, places  # noqa: F401 -- registers
