"""purge_geocode_cache: delete cached geocoder answers past their lifetime."""

from django.conf import settings
from django.core.management.base import BaseCommand

from geo.geocoders import purge_expired_answers


class Command(BaseCommand):
    help = (
        "Delete cached geocoder answers past their lifetime "
        "(GEOCODE_TTL_DAYS for found, GEOCODE_NEGATIVE_TTL_HOURS for not found)."
    )

    def handle(self, *args, **opts):
        deleted = purge_expired_answers()
        self.stdout.write(
            f"Purged {deleted} cached geocoder answer(s) past their lifetime "
            f"({settings.GEOCODE_TTL_DAYS} d found, "
            f"{settings.GEOCODE_NEGATIVE_TTL_HOURS} h not found)."
        )
