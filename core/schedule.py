"""The periodic jobs, in one place: each task's dotted path and how often it runs.

The `db_worker` processes run them (core/scheduler.py claims each slot once for all the
workers); cron is not needed. A slot starts on a multiple of its interval since the epoch
(every minute on the minute, hourly on the hour, UTC). Every job is idempotent, so a slot
that runs late, or runs again after a crash, does no harm; a slot missed while no worker ran
is not run afterwards: the next slot does the whole work.

The jobs are named, not imported: core sits below the apps that own them, and a job whose
module has not landed yet is skipped with a warning instead of stopping the workers.
The management commands of the same names stay, for operators.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings

# The recipients' messages are sent this often.
NOTIFY_EVERY = timedelta(seconds=10)
# The planner runs this often (PLAN_SECONDS): an order waits at most this long (plus the
# scheduler's tick) for its first offer, and an expired or declined offer this long for the
# next one.
PLAN_EVERY = timedelta(seconds=settings.PLAN_SECONDS)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)

SCHEDULE: dict[str, timedelta] = {
    # Live orders waiting for a courier are planned into runs and offered; expired offers
    # pass on (docs/dispatch.md).
    "dispatch.tasks.dispatch_orders": PLAN_EVERY,
    # Recipients' emails and SMS: new events read, due messages sent (docs/notifications.md).
    "notifications.tasks.notify_recipients": NOTIFY_EVERY,
    # Scheduled drops whose pickup time has come become PENDING.
    "tracking.tasks.dispatch_due_orders": MINUTE,
    # Drops whose ETA has passed their drop-off window's end turn at_risk (order.window_at_risk).
    "tracking.tasks.flag_windows_at_risk": MINUTE,
    # Webhook deliveries that are due and have no live task are enqueued again.
    "events.tasks.sweep_deliveries": MINUTE,
    # Sandbox scenario steps whose run was lost (a killed worker) are taken here.
    "tracking.tasks.run_sandbox_scenarios": MINUTE,
    "orders.tasks.purge_idempotency_keys": HOUR,
    "orders.tasks.purge_expired_quotes": HOUR,
    "events.tasks.purge_old_events": HOUR,
    "notifications.tasks.purge_old_messages": HOUR,
    "geo.tasks.purge_geocode_cache": HOUR,
    "core.tasks.purge_rate_counters": HOUR,
    "core.tasks.prune_task_results": HOUR,
    # Couriers' trail points older than COURIER_TRAIL_HOURS are deleted.
    "couriers.tasks.prune_courier_trail": HOUR,
    # Closes only months that have ended: hourly issues them within the hour after a month
    # ends in TIME_ZONE (slots are cut in UTC), and costs one indexed query otherwise.
    "billing.tasks.close_invoices": HOUR,
    # Every cent collected is in a courier's hand, handed over or owed (docs/contract.md §23):
    # a breach is logged at ERROR.
    "billing.tasks.check_custody": HOUR,
}
