"""Billing tests: pricing, the wallet ledger, invoices, GET /account and the operator console."""
