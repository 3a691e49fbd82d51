"""provision_business: create a business at a given onboarding stage and print its keys."""

from decimal import Decimal, InvalidOperation

import orjson
from django.core.management.base import BaseCommand, CommandError

from console.provisioning import STAGES, provision_business


def _money(value: str) -> Decimal:
    try:
        amount = Decimal(value)
    except InvalidOperation as exc:
        raise CommandError(f"Not an amount: {value!r}") from exc
    # is_finite first: ordering a NaN raises InvalidOperation instead of refusing it.
    if not amount.is_finite() or amount < 0:
        raise CommandError(f"Amounts must be zero or more: {value!r}")
    return amount


def _days(value: str) -> int:
    try:
        days = int(value)
    except ValueError as exc:
        raise CommandError(f"Not a number of days: {value!r}") from exc
    if days < 0:
        raise CommandError(f"Net days must be zero or more: {value!r}")
    return days


class Command(BaseCommand):
    help = "Create a business, walk it to --stage, and print its keys as one line of JSON."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--email", required=True)
        parser.add_argument("--billing", choices=["wallet", "invoiced"], default="wallet")
        parser.add_argument("--stage", choices=list(STAGES), default="live")
        parser.add_argument("--live-balance", type=_money, default=Decimal("0.00"))
        parser.add_argument(
            "--sandbox-balance",
            type=_money,
            default=None,
            help="Default: 100.00 with --billing wallet; none with invoiced (it is not spent).",
        )
        parser.add_argument("--base-fee", type=_money, default=Decimal("2.00"))
        parser.add_argument("--per-km-fee", type=_money, default=Decimal("0.50"))
        parser.add_argument("--included-km", type=_money, default=Decimal("0"))
        parser.add_argument("--net-days", type=_days, default=30)
        parser.add_argument(
            "--json", action="store_true", help="Print one line of JSON (the default)."
        )

    def handle(self, *args, **opts):
        result = provision_business(
            name=opts["name"],
            email=opts["email"],
            billing=opts["billing"],
            stage=opts["stage"],
            live_balance=opts["live_balance"],
            sandbox_balance=opts["sandbox_balance"],
            base_fee=opts["base_fee"],
            per_km_fee=opts["per_km_fee"],
            included_km=opts["included_km"],
            net_days=opts["net_days"],
        )
        self.stdout.write(
            orjson.dumps(
                {
                    "business_id": str(result.business.pk),
                    "sandbox_key": result.sandbox_key,
                    "live_key": result.live_key,
                }
            ).decode()
        )
