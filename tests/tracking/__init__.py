"""Tests of the delivery lifecycle: the state machine, its movers, tracking and cancellation."""
