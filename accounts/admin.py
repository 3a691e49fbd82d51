"""Operator console registrations."""
