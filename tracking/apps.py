from django.apps import AppConfig


class TrackingConfig(AppConfig):
    name = "tracking"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from orders.signals import scenarios_started
        from tracking.tasks import schedule_scenario_run

        # A batch that starts sandbox scenarios asks for their first run in its transaction.
        scenarios_started.connect(schedule_scenario_run, dispatch_uid="tracking.scenarios")
