"""An address as one line of text (geo/addresses.py): what the courier reads."""

from __future__ import annotations

import pytest

from geo.addresses import address_text


@pytest.mark.parametrize(
    ("address", "text"),
    [
        ({"complete_address": " St 271, Toul Kork ", "city": "Phnom Penh"}, "St 271, Toul Kork"),
        (
            {"country": "KH", "city": "Phnom Penh", "street": "St 310", "house_number": "12B"},
            "12B, St 310, Phnom Penh, KH",
        ),
        ({"complete_address": "  ", "landmark": "Blue gate", "city": "Phnom Penh"},
         "Phnom Penh, Blue gate"),
        ({"city": "", "street": None, "floor": 3}, ""),
        ({}, ""),
        (None, ""),
    ],
)  # fmt: skip
def test_complete_address_else_its_parts_from_the_door_to_the_country(address, text):
    assert address_text(address) == text
