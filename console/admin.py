"""Registers the operator console's pages: one module per area of the business."""

from console import businesses, coverage, history, money, orders, places  # noqa: F401 -- registers
