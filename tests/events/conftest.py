"""Fixtures of the events tests: the loopback webhook receiver (tests/webhook_receiver.py)."""

from tests.webhook_receiver import start_receiver, webhook_receiver

__all__ = ["start_receiver", "webhook_receiver"]
