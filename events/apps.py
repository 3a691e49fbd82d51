"""Events (a transactional outbox) and the webhook endpoints they are delivered to."""

from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "events"
