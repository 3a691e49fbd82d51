"""Per-drop acceptance rules of docs/contract.md §4, decided without a query inside any loop.

The rules are checked in a fixed order and the first hit wins. A pickup's failure
rejects every drop of its group; so for each drop the winner is the earlier of its
pickup's first failure and its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from enum import IntEnum
from functools import lru_cache
from typing import Any

import phonenumbers
from django.conf import settings

from billing.models import PricingPlan
from billing.services import CENT, price_for
from fleet.models import SIZE_RANK, VehicleType
from geo.geocoders import Pin, address_key, geocode_failed_message, unanswered_for
from geo.geometry import DistancesFrom
from geo.services import Coverage
from orders.inputs import MONEY_TEXT, BatchIn, DropIn, ParcelIn, Place
from orders.windows import EtaTerms


class Reason(IntEnum):
    """failure_reason values, in the order they are checked."""

    INVALID_PHONE = 1
    INVALID_COORDINATES = 2
    GEOCODE_FAILED = 3
    OUT_OF_SERVICE_AREA = 4
    SCHEDULE_IN_PAST = 5
    OUTSIDE_OPERATING_HOURS = 6
    INVALID_TIME_WINDOW = 7
    PARCEL_TOO_LARGE = 8
    INVALID_COD = 9
    DUPLICATE_CLIENT_ORDER_ID = 10
    INSUFFICIENT_BALANCE = 11


MESSAGES = {
    (Reason.INVALID_PHONE, "pickup"): "The pickup phone is not a valid E.164 number.",
    (Reason.INVALID_PHONE, "drop"): "The recipient phone is not a valid E.164 number.",
    (Reason.INVALID_COORDINATES, "pickup"): "The pickup needs valid lat and long, or an address.",
    (Reason.INVALID_COORDINATES, "drop"): "The drop needs valid lat and long, or an address.",
    (Reason.OUT_OF_SERVICE_AREA, "pickup"): "The pickup is outside the serviceable area.",
    (Reason.OUT_OF_SERVICE_AREA, "drop"): "The drop is outside the serviceable area.",
    (Reason.SCHEDULE_IN_PAST, "pickup"): "pickup_scheduled_at is in the past.",
    (
        Reason.OUTSIDE_OPERATING_HOURS,
        "pickup",
    ): "The pickup time is outside the area's opening hours.",
    # The window's own problem is the message (orders.windows.EtaTerms, window_hours_problem).
    (Reason.INVALID_TIME_WINDOW, "drop"): "The drop-off window cannot be kept.",
    # Rules 8 and 9 say what is wrong in the decision's detail (parcel_problem, cod_problem).
    (Reason.PARCEL_TOO_LARGE, "drop"): "The parcel does not fit the group's vehicle.",
    (Reason.INVALID_COD, "drop"): "The cash-on-delivery amount is not allowed.",
    (
        Reason.DUPLICATE_CLIENT_ORDER_ID,
        "drop",
    ): "client_order_id is already used by an active drop.",
    (Reason.INSUFFICIENT_BALANCE, "drop"): "The wallet balance does not cover this drop's price.",
    (Reason.INSUFFICIENT_BALANCE, "owed"): (
        "The wallet owes money (a return fee its balance did not cover): "
        "a top-up pays it first, then new drops are taken again."
    ),
}

# [0-9] and \Z, not \d and $: \d matches any Unicode digit ("+855١٢٣…", which phonenumbers
# would happily read) and $ matches before a final newline.
_E164 = re.compile(r"\+[1-9][0-9]{1,14}\Z")


@lru_cache(maxsize=65536)
def _valid_e164(phone: str) -> bool:
    if not _E164.match(phone):
        return False
    try:
        return phonenumbers.is_valid_number(phonenumbers.parse(phone, None))
    except phonenumbers.NumberParseException:
        return False


def phone_is_valid(phone: Any) -> bool:
    return isinstance(phone, str) and _valid_e164(phone)


def _coordinate(value: Any, limit: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number) or abs(number) > limit:
        return None
    return number


def coordinates_of(place: Place) -> Pin | None | Reason:
    """Given coordinates as a pin; None when there are none and an address must be used."""
    if not place.has_coordinates:
        return None if place.address is not None else Reason.INVALID_COORDINATES
    lat, long = _coordinate(place.lat, 90.0), _coordinate(place.long, 180.0)
    if lat is None or long is None or (lat == 0.0 and long == 0.0):
        return Reason.INVALID_COORDINATES
    return lat, long


@dataclass(slots=True)
class Located:
    """Where a pickup or drop is, or the first reason (among 1–3) it cannot be placed."""

    pin: Pin | None = None
    resolved: bool = False  # pin came from the geocoder
    reason: Reason | None = None
    areas: tuple[int, ...] = ()
    unanswered: tuple[str, ...] = ()  # GEOCODE_FAILED: the geocoders that did not answer


def locate(place: Place, phone: Any, pins: dict[str, Pin | None]) -> Located:
    if not phone_is_valid(phone):
        return Located(reason=Reason.INVALID_PHONE)
    given = coordinates_of(place)
    if isinstance(given, Reason):
        return Located(reason=given)
    if given is not None:
        return Located(pin=given)
    key = address_key(place.address)
    pin = pins.get(key)
    if pin is None:
        return Located(reason=Reason.GEOCODE_FAILED, unanswered=unanswered_for(pins, key))
    return Located(pin=pin, resolved=True)


def batch_addresses(batch: BatchIn) -> list[dict[str, str]]:
    """The batch's address-only places: the only ones the geocoder is asked about."""
    groups = batch.groups
    places = [g.pickup.place for g in groups] + [d.place for g in groups for d in g.drops]
    return addresses_to_geocode(places)


def addresses_to_geocode(places: list[Place]) -> list[dict[str, str]]:
    """Address-only places: the only ones the geocoder is asked about."""
    return [p.address for p in places if not p.has_coordinates and p.address is not None]


def pickup_time_reason(
    scheduled_at: datetime | None, now: datetime, is_open: bool
) -> Reason | None:
    if scheduled_at is not None and scheduled_at < now:
        return Reason.SCHEDULE_IN_PAST
    if not is_open:
        return Reason.OUTSIDE_OPERATING_HOURS
    return None


def window_hours_problem(
    coverage: Coverage, areas: tuple[int, ...], window: tuple[datetime, datetime]
) -> str | None:
    """Rule 7's opening hours (docs/contract.md §17): a drop-off window lies within the
    opening hours of the drop's service area on its day, as couriers ride only then; if
    not, why (INVALID_TIME_WINDOW's message)."""
    start, end = window
    if coverage.open_throughout(areas, start, end):
        return None
    hours = coverage.hours_text(areas, start)
    return (
        "The drop-off window must lie within the opening hours of the drop's service area "
        f"on its day ({hours}, {settings.TIME_ZONE})."
    )


# --- The whole batch: every drop's decision, before anything is written ------------------------


@dataclass(frozen=True, slots=True)
class AccountState:
    """What rules 4–8 read: coverage, and the account's plan, balance and taken ids.

    A snapshot read without a lock (a quote), or read again under the account lock just
    before writing (a batch): decide_batch() takes it as a value and asks for nothing else.
    """

    coverage: Coverage
    plan: PricingPlan
    charges_wallet: bool
    balance: Decimal
    taken: frozenset[str]  # this batch's client_order_ids already held by active drops
    owes: bool = False  # the wallet owes money: no new drop (docs/contract.md §19)


@dataclass(slots=True)
class DropDecision:
    """One drop, as decided: `reason` None means accepted at `price`."""

    group: int  # index of its pickup group
    drop: DropIn
    pickup: Located
    located: Located
    reason: Reason | None = None
    side: str = ""  # "pickup" or "drop": whose rule failed, for the message
    price: Decimal | None = None  # the total: delivery + cod_fee (docs/contract.md §18)
    cod_fee: Decimal = Decimal("0.00")
    cod_amount: Decimal | None = None  # the cash to collect, once rule 9 passed it
    km: float | None = None  # from the pickup: worked out for a priced or windowed drop
    detail: str = ""  # what is wrong with the window (INVALID_TIME_WINDOW)
    risk_at: datetime | None = None  # a kept window: when it turns at risk if nothing moves

    @property
    def accepted(self) -> bool:
        return self.reason is None

    @property
    def delivery(self) -> Decimal | None:
        """The price without the COD fee: the §7 formula × the vehicle's multiplier."""
        return None if self.price is None else self.price - self.cod_fee

    @property
    def message(self) -> str:
        if self.reason is Reason.GEOCODE_FAILED:  # names the geocoders tried
            failed = self.pickup if self.side == "pickup" else self.located
            return geocode_failed_message(self.side, failed.unanswered)
        if self.detail:
            return self.detail
        return MESSAGES[self.reason, self.side]

    def resolved_pins(self) -> dict:
        """The geocoded pins an accepted result echoes (docs/contract.md §4)."""
        pins = {}
        if self.located.resolved:
            pins["resolved_pin"] = {"lat": self.located.pin[0], "long": self.located.pin[1]}
        if self.pickup.resolved:
            pins["pickup_resolved_pin"] = {"lat": self.pickup.pin[0], "long": self.pickup.pin[1]}
        return pins


@dataclass(slots=True)
class Decisions:
    """Every drop of a batch in submission order, and the state they were decided against."""

    batch: BatchIn
    drops: list[DropDecision]
    state: AccountState

    @property
    def accepted(self) -> list[DropDecision]:
        return [d for d in self.drops if d.accepted]


class Decider:
    """Rules 1–11 for a batch's drops in submission order, a run of drops at a time.

    A batch writes its drops while the later ones are still being decided: each chunk is
    decided just before its rows are made (orders.services._drop_rows), so deciding
    overlaps with the database storing the chunk before (docs/decisions.md, "Drops are
    decided inside the COPY's stream, under the account lock"). Pickups are decided at
    once, up front: a pickup's failure rejects its whole group, and the groups' orders are
    written before their drops. Rules 8–11 carry the groups' loads, the balance left and the
    ids accepted from one run to the next, so the runs decide exactly what one pass over the
    batch would.
    """

    def __init__(
        self,
        batch: BatchIn,
        pins: dict[str, Pin | None],
        state: AccountState,
        now: datetime,
        quoted_prices: list[Decimal | None] | None = None,
    ) -> None:
        self.batch, self.state = batch, state
        groups = batch.groups
        self.pickups = [locate(g.pickup.place, g.pickup.phone, pins) for g in groups]
        _check_pickups(state.coverage, self.pickups, groups, now)
        self._pins = pins
        self._drops = [(index, drop) for index, g in enumerate(groups) for drop in g.drops]
        self._quoted = quoted_prices
        self._charges = _Charges(state, [g.vehicle for g in groups])
        self._done = 0
        self._now = now
        self._terms: EtaTerms | None = None  # read when the first window comes
        # What each (window, pickup time) allows whatever the distance (rule 7).
        self._slacks: dict[tuple, tuple[str | None, timedelta]] = {}
        self._hours: dict[tuple, str | None] = {}  # each (window, areas)'s hours problem

    def __len__(self) -> int:
        return len(self._drops)

    def next_drops(self, count: int) -> list[DropDecision]:
        """The next `count` drops (fewer at the end), decided."""
        start = self._done
        part = self._drops[start : start + count]
        self._done = start + len(part)
        located = [locate(drop.place, drop.phone, self._pins) for _, drop in part]
        _check_served(self.state.coverage, located)
        pickups = self.pickups
        decided = []
        for (index, drop), where in zip(part, located, strict=True):
            pickup = pickups[index]
            reason, side = _first_failure(pickup, where)
            decision = DropDecision(index, drop, pickup, where, reason, side)
            if reason is None and drop.window is not None:
                self._check_window(decision)
            decided.append(decision)
        quoted = self._quoted[start : self._done] if self._quoted is not None else None
        self._charges.apply(decided, quoted)
        return decided

    def _check_window(self, decision: DropDecision) -> None:
        """Rule 7: the drop-off window can be kept, by the ETA model from the pickup time;
        if so, when it turns at risk should nothing move (its row stores that)."""
        terms = self._terms
        if terms is None:
            terms = self._terms = EtaTerms()
        decision.km = self._charges.km(decision)
        window = decision.drop.window
        pickup_time = self.batch.groups[decision.group].pickup.scheduled_at or self._now
        slack = self._slacks.get((window, pickup_time))
        if slack is None:
            slack = self._slacks[window, pickup_time] = terms.window_slack(
                window, pickup_time, self._now
            )
        ride = terms.ride(decision.km)
        problem = slack[0] or self._hours_problem(window, decision.located.areas)
        problem = problem or terms.too_far(ride, slack[1])
        if problem is None:
            decision.risk_at = terms.risk_before_pickup(window[1], ride)
        else:
            decision.reason, decision.side, decision.detail = (
                Reason.INVALID_TIME_WINDOW, "drop", problem
            )  # fmt: skip

    def _hours_problem(
        self, window: tuple[datetime, datetime], areas: tuple[int, ...]
    ) -> str | None:
        """Rule 7's opening hours, worked out once for each window and set of areas."""
        key = (window, areas)
        if key not in self._hours:
            self._hours[key] = window_hours_problem(self.state.coverage, areas, window)
        return self._hours[key]

    def runs(self, count: int) -> Iterator[list[DropDecision]]:
        """Every drop not decided yet, `count` at a time."""
        while self._done < len(self._drops):
            yield self.next_drops(count)


def decide_batch(
    batch: BatchIn,
    pins: dict[str, Pin | None],
    state: AccountState,
    now: datetime,
    quoted_prices: list[Decimal | None] | None = None,
) -> Decisions:
    """Rules 1–11 of docs/contract.md §4 for every drop, in submission order; no query, no write.

    With `quoted_prices` (a quote's, docs/contract.md §12) a drop is charged its quoted price
    instead of the plan's, and rule 11 weighs that price.
    """
    decider = Decider(batch, pins, state, now, quoted_prices)
    return Decisions(batch, decider.next_drops(len(decider)), state)


class _Charges:
    """Rules 8–11 over drops given in submission order, in as many runs as they come.

    A group's accepted weight grows drop by drop (rule 8's load limit), from the drops that
    say their parcel: one that says nothing is carried as it always was, never weighed
    (docs/decisions.md, "A drop that sends no parcel is not weighed"); an earlier accepted
    drop of the same batch takes its client_order_id; drops are priced and charged in order,
    and the balance never goes below zero.
    """

    __slots__ = ("accepted_ids", "cods", "loads", "origins", "remaining", "state", "vehicles")

    def __init__(self, state: AccountState, vehicles: list[VehicleType]) -> None:
        self.state, self.remaining, self.vehicles = state, state.balance, vehicles
        self.accepted_ids: set[str] = set()
        self.origins: dict[int, DistancesFrom] = {}
        self.loads: dict[int, Decimal] = {}  # each group's accepted weight so far, in kg
        self.cods: dict[str, tuple] = {}  # rule 9 and the fee, by the amount's text

    def apply(self, drops: list[DropDecision], quoted: list[Decimal | None] | None) -> None:
        state, accepted_ids = self.state, self.accepted_ids
        remaining = self.remaining
        for decision, quoted_price in zip(drops, quoted or [None] * len(drops), strict=True):
            if decision.reason is not None or not self._carried(decision):  # rules 1–9
                continue
            client_order_id = decision.drop.client_order_id
            if client_order_id in state.taken or client_order_id in accepted_ids:
                decision.reason, decision.side = Reason.DUPLICATE_CLIENT_ORDER_ID, "drop"
                continue
            price = self._price(decision, quoted_price)
            if state.charges_wallet and (state.owes or price > remaining):
                side = "owed" if state.owes else "drop"
                decision.reason, decision.side = Reason.INSUFFICIENT_BALANCE, side
                continue
            if state.charges_wallet:
                remaining -= price
            decision.price = price
            accepted_ids.add(client_order_id)
            if decision.drop.parcel is not None:
                group = decision.group
                self.loads[group] = self.loads.get(group, ZERO_KG) + decision.drop.parcel.weight_kg
        self.remaining = remaining

    def _carried(self, decision: DropDecision) -> bool:
        """Rules 8 and 9: the parcel fits the group's vehicle, with the group's accepted load
        so far; the cash to collect is allowed. False (the reason noted) if not."""
        drop = decision.drop
        problem = None
        if drop.parcel is not None:  # a drop that says nothing of its parcel is not weighed
            vehicle = self.vehicles[decision.group]
            problem = parcel_problem(drop.parcel, vehicle, self.loads.get(decision.group, ZERO_KG))
        if problem is not None:
            decision.reason, decision.side, decision.detail = (
                Reason.PARCEL_TOO_LARGE, "drop", problem
            )  # fmt: skip
            return False
        if drop.cod is None:
            return True
        amount, problem, fee = self._cod(drop.cod)
        if problem is not None:
            decision.reason, decision.side, decision.detail = Reason.INVALID_COD, "drop", problem
            return False
        decision.cod_amount, decision.cod_fee = amount, fee
        return True

    def _cod(self, amount: object) -> tuple[Decimal | None, str | None, Decimal]:
        """Rule 9 and the fee for an amount, each amount text worked out once a batch."""
        known = self.cods.get(amount) if type(amount) is str else None
        if known is None:
            value, problem = cod_problem(amount)
            fee = cod_fee(self.state.plan, value) if value is not None else Decimal("0.00")
            known = (value, problem, fee)
            if type(amount) is str:
                self.cods[amount] = known
        return known

    def _price(self, decision: DropDecision, quoted_price: Decimal | None) -> Decimal:
        """The drop's total: the quoted one (its COD fee inside it), or the §7 formula × the
        vehicle's multiplier + the COD fee, each rounded half-up to cents."""
        if quoted_price is not None:
            decision.cod_fee = min(decision.cod_fee, quoted_price)
            return quoted_price
        if decision.km is None:
            decision.km = self.km(decision)
        multiplier = self.vehicles[decision.group].price_multiplier
        return delivery_price(self.state.plan, decision.km, multiplier) + decision.cod_fee

    def km(self, decision: DropDecision) -> float:
        """The drop's distance from its pickup, each pickup's terms made once."""
        origin = self.origins.get(decision.group)
        if origin is None:
            origin = self.origins[decision.group] = DistancesFrom(*decision.pickup.pin)
        return origin.km(*decision.located.pin)


ZERO_KG = Decimal("0")


def parcel_problem(parcel: ParcelIn, vehicle: VehicleType, load: Decimal) -> str | None:
    """Rule 8 (docs/contract.md §18): why the parcel does not fit the vehicle, or None. `load`
    is the weight the group carries beside it: its drops accepted before this one (a batch),
    or its other active drops (an edit, tracking/edits.py)."""
    size, weight, code = parcel.size, parcel.weight_kg, vehicle.code
    if SIZE_RANK[size] > SIZE_RANK[vehicle.max_parcel_size]:
        return (
            f"A size {size} parcel is larger than a {code} takes (up to {vehicle.max_parcel_size})."
        )
    if weight > vehicle.max_parcel_weight_kg:
        return f"A parcel of {_kg(weight)} is over a {code}'s {_kg(vehicle.max_parcel_weight_kg)}."
    if load + weight > vehicle.max_load_kg:
        return (
            f"With this parcel the pickup's accepted load would be {_kg(load + weight)}, "
            f"over a {code}'s {_kg(vehicle.max_load_kg)}."
        )
    return None


def _kg(weight: Decimal) -> str:
    return f"{weight.normalize():f} kg"


def cod_problem(amount: object) -> tuple[Decimal | None, str | None]:
    """Rule 9 (docs/contract.md §18): the amount, or what is wrong with it."""
    if not isinstance(amount, str) or not MONEY_TEXT.match(amount):
        return None, 'cod.amount must be a money string with at most two decimals, e.g. "12.50".'
    value = Decimal(amount)
    if value <= 0:
        return None, "cod.amount must be above zero."
    if value > settings.COD_MAX_AMOUNT:
        return None, f"cod.amount is over the most a courier collects ({settings.COD_MAX_AMOUNT})."
    return value, None


def delivery_price(plan: PricingPlan, km: float, multiplier: Decimal) -> Decimal:
    """The §7 price (half-up to cents) × the vehicle's multiplier, half-up to cents again
    (docs/contract.md §18; docs/decisions.md "Prices round twice, and a quote fixes the
    total")."""
    delivery = price_for(plan, km)
    if multiplier != 1:
        delivery = (delivery * multiplier).quantize(CENT, rounding=ROUND_HALF_UP)
    return delivery


def cod_fee(plan: PricingPlan, amount: Decimal) -> Decimal:
    """The plan's cod_fee_percent of the cash to collect, rounded half-up to cents."""
    return (amount * plan.cod_fee_percent / 100).quantize(CENT, rounding=ROUND_HALF_UP)


def _check_served(coverage: Coverage, located: list[Located]) -> None:
    """Reason 4: placed, but outside every active area."""
    placed = [x for x in located if x.reason is None]
    if not placed:
        return
    where = coverage.locate([x.pin[0] for x in placed], [x.pin[1] for x in placed])
    for place, areas in zip(placed, where, strict=True):
        place.areas = areas
        if not areas:
            place.reason = Reason.OUT_OF_SERVICE_AREA


def _check_pickups(coverage: Coverage, pickups: list[Located], groups, now: datetime) -> None:
    """Reasons 4–6 of the pickups: outside every active area; time in the past or out of hours."""
    _check_served(coverage, pickups)
    for group, pickup in zip(groups, pickups, strict=True):
        if pickup.reason is None:
            when = group.pickup.scheduled_at or now
            pickup.reason = pickup_time_reason(
                group.pickup.scheduled_at, now, coverage.is_open(pickup.areas, when)
            )


def _first_failure(pickup: Located, drop: Located) -> tuple[Reason | None, str]:
    """The earlier of the pickup's and the drop's first failing rule."""
    if pickup.reason is None and drop.reason is None:
        return None, ""
    if drop.reason is None or (pickup.reason is not None and pickup.reason <= drop.reason):
        return pickup.reason, "pickup"
    return drop.reason, "drop"
