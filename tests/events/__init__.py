"""Events and webhooks."""
