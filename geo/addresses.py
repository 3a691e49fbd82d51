"""An address as people read it: the API's address object (docs/contract.md §4) made one line of
text, for every page and answer that shows where to go (the courier's route and offer)."""

from __future__ import annotations

from typing import Any

# The parts most people write, from the door to the country. PostgreSQL's jsonb keeps no
# order of keys, so the order a business sent is lost: other parts follow these, by name.
PART_ORDER = (
    "building",
    "house_number",
    "street",
    "village",
    "sangkat",
    "commune",
    "khan",
    "district",
    "city",
    "province",
    "postcode",
    "country",
)
_RANK = {name: rank for rank, name in enumerate(PART_ORDER)}


def address_text(address: Any) -> str:
    """`complete_address` when it says something, else the other parts joined ("St 271,
    Toul Kork, Phnom Penh"); "" when there is nothing to read (no address, or none of its
    values is text)."""
    if not isinstance(address, dict):
        return address.strip() if isinstance(address, str) else ""
    complete = address.get("complete_address")
    if isinstance(complete, str) and complete.strip():
        return complete.strip()
    names = sorted(address, key=lambda name: (_RANK.get(name, len(_RANK)), name))
    parts = (address[name] for name in names)
    return ", ".join(part.strip() for part in parts if isinstance(part, str) and part.strip())
