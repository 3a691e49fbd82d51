"""close_invoices: issue the invoices of ended months.

The workers do it hourly (billing.tasks, core/schedule.py); this is for operators, and
--month closes one past month by hand.
"""

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from billing.services import close_invoices, invoice_period


class Command(BaseCommand):
    help = "Issue the OPEN invoices of months that have ended (or only up to --month)."

    def add_arguments(self, parser):
        parser.add_argument("--month", help="Close invoices of this month (YYYY-MM) and earlier.")

    def handle(self, *args, month=None, **opts):
        now = timezone.now()
        current = invoice_period(now)
        if month:
            try:
                if not re.fullmatch(r"[0-9]{4}-[0-9]{2}", month):
                    raise ValueError(month)
                datetime.strptime(month, "%Y-%m")
            except ValueError as exc:
                raise CommandError("--month must be YYYY-MM, e.g. 2026-09") from exc
            if month >= current:
                raise CommandError(f"{month} has not ended yet (current month {current}).")
            year, mon = map(int, month.split("-"))
            before = f"{year + mon // 12:04d}-{mon % 12 + 1:02d}"
        else:
            before = current
        today = now.astimezone(ZoneInfo(settings.TIME_ZONE)).date()
        closed = close_invoices(before_period=before, today=today)
        for invoice in closed:
            self.stdout.write(
                f"{invoice.business} {invoice.environment} {invoice.period}: "
                f"{invoice.status} {invoice.accrued} due {invoice.due_on or '-'}"
            )
        self.stdout.write(f"Closed {len(closed)} invoice(s).")
