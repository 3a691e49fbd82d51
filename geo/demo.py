"""The demo region of docs/contract.md §8, which tests and the sandbox guide rely on."""

from __future__ import annotations

from datetime import time

from django.db import transaction

from geo.models import OpeningHours, Place, ServiceArea

PHNOM_PENH = {
    "type": "Polygon",
    "coordinates": [
        [[104.80, 11.45], [105.00, 11.45], [105.00, 11.70], [104.80, 11.70], [104.80, 11.45]]
    ],
}
# Real places at their real coordinates (within ~50 m): a demo pin never pretends.
PLACES = [
    ("Central Market, Phnom Penh", "Phnom Penh", 11.5696, 104.9210),
    ("Royal Palace, Phnom Penh", "Phnom Penh", 11.5637, 104.9311),
    ("Aeon Mall Phnom Penh", "Phnom Penh", 11.5486, 104.9322),
    ("Phnom Penh International Airport", "Phnom Penh", 11.5466, 104.8441),
    ("Angkor Wat, Siem Reap", "Siem Reap", 13.4125, 103.8670),
]


@transaction.atomic
def seed_region() -> ServiceArea:
    """Create or reset the Phnom Penh area (open 07:00–21:00 daily) and the demo places."""
    area, _ = ServiceArea.objects.update_or_create(
        name="Phnom Penh", defaults={"geojson": PHNOM_PENH, "active": True}
    )
    area.hours.all().delete()
    OpeningHours.objects.bulk_create(
        [OpeningHours(area=area, weekday=d, opens=time(7), closes=time(21)) for d in range(7)]
    )
    for name, city, lat, long in PLACES:
        Place.objects.update_or_create(name=name, defaults={"city": city, "lat": lat, "long": long})
    return area
