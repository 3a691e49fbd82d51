"""Registers the operator console's pages: one module per area of the business."""

from console import businesses, coverage, money, orders  # noqa: F401 -- registers
