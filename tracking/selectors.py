"""Tracking by the caller's own references: a few queries for any number of identifiers.

Ids and timestamps come out of the database already as wire text (core/functions.py):
turning thousands of them into UUID and datetime objects only to format them again cost
more than the queries themselves.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime, timedelta

import orjson
from django.conf import settings
from django.db.models import F, FloatField
from django.db.models.functions import Cast, NullIf
from django.utils import timezone

from core.formats import WireTimes, moment_of
from core.functions import IsoZ, MoneyText, TimeText, UuidText
from core.lookups import any_values
from core.reads import ROWS_PER_CHUNK, driver_rows, rows_compiled_once
from core.rows import Beside, Shape
from geo.geometry import DistancesFrom
from orders.links import tracking_tokens, tracking_url
from orders.models import (
    DeliveryEvent,
    Drop,
    DropStatus,
    FailureReason,
    Order,
    ProofMethod,
    initial_status,
)
from orders.runs import run_drops, stops_of, to_do
from orders.statuses import ACTIVE_STATUSES, FAILED_ONCE, FINISHED_STATUSES, ON_THE_WAY
from orders.windows import AT_RISK, ON_TRACK
from tracking.eta import EtaModel, etas_through_run
from tracking.proof import photo_url, signature_url
from tracking.sandbox_driver import simulated_positions

# A drop's columns in a tracking entry, each in its wire form, read as the driver's tuples
# (core.reads) and named by these shapes (core.rows): its own row only. What the drops of one
# order share (the pickup, the driver, the batch and the environment, which the ownership
# trigger keeps equal to the order's: orders migration 0009) is read once per order. Times
# come as the database's text, turned into the wire's once per distinct value
# (core.formats.WireTimes); the last change only when it differs from the creation (most
# drops have not moved).
#
# What choosing among the drops of one client_order_id needs (_choose), first in every read.
DROP_KEY = Shape(
    "DropKey",
    client_order_id="client_order_id",
    status="status",
    created=TimeText("created_at"),
    drop_id=UuidText("id"),
)
DROP_SEEN = DROP_KEY.extended(
    "DropSeen",
    order_id=UuidText("order_id"),
    short_code="short_code",
    changed=NullIf(TimeText("updated_at"), TimeText("created_at")),
    waybill="external_waybill",
    name="recipient_name",
    phone="recipient_phone",
    lat="lat",
    long="long",
    address="address",  # JSON text, parsed by entry() when present (driver rows: no converter)
    resolved="resolved",
    price=MoneyText("price"),
    currency="currency",
    pod_method="pod_method",
    pod_received_by="pod_received_by",
    pod_photo="pod_photo",
    pod_signature="pod_signature",
    failure_reason="failure_reason",
    window_start=TimeText("window_start"),
    window_end=TimeText("window_end"),
    window_status="window_status",
    window_risk_at=TimeText("window_risk_at"),
    notes="notes",
    undeliverable_action="undeliverable_action",
    recipient_language="recipient_language",
    return_received_by="return_received_by",
    # docs/contract.md §18: what is carried, the price's parts, the cash to collect.
    parcel_size="parcel_size",
    parcel_weight=Cast("parcel_weight_kg", FloatField()),
    parcel_description="parcel_description",
    parcel_value=MoneyText("parcel_value"),
    delivery=MoneyText(F("price") - F("cod_fee")),
    cod_fee=MoneyText("cod_fee"),
    cod_amount=MoneyText("cod_amount"),
    cod_collected_at=TimeText("cod_collected_at"),
    # docs/contract.md §21: the drop's place on the route, and the ride there (orders/stops.py).
    stop_sequence="stop_sequence",
    route_km="route_km",
    # How far the sandbox test driver's scenario has come (tracking/sandbox_driver.py).
    courier_progress="courier_progress",
)
ORDER_SEEN = Shape(
    "OrderSeen",
    order_id=UuidText("id"),
    batch_id=UuidText("batch_id"),
    environment="environment",
    name="pickup_name",
    phone="pickup_phone",
    lat="pickup_lat",
    long="pickup_long",
    address="pickup_address",  # JSON text, like the drop's address
    resolved="pickup_resolved",
    scheduled=IsoZ("pickup_scheduled_at"),
    vehicle="vehicle",
    driver="driver__name",
    driver_phone="driver__phone",
    driver_vehicle="driver__vehicle",
    # The courier's latest position (couriers.models.CourierPosition), shown while fresh.
    driver_lat="driver__position__lat",
    driver_long="driver__position__long",
    driver_at=IsoZ("driver__position__at"),
    driver_simulated="driver__is_sandbox_test_driver",
)

# A small read takes each drop's order beside it, in the same statement: one round trip
# fewer for a call that tracks a few drops, where a statement is a tenth of the call
# (docs/decisions.md, "Tracking entries are built from the driver's tuples and the server's
# text"). A large one reads the orders apart, once each, rather than once per drop.
DROP_AND_ORDER = Beside("DropAndOrder", DROP_SEEN, ORDER_SEEN, "order")
BESIDE_AT_MOST = ROWS_PER_CHUNK  # drops


def _drop_read(count: int) -> Shape | Beside:
    """What a read of `count` drops reads: with their orders beside them when small."""
    return DROP_AND_ORDER if count <= BESIDE_AT_MOST else DROP_SEEN


def track_drops(*, business, environment: str, identifiers: list[str]) -> list[dict]:
    """One entry per distinct identifier, in request order; the active drop, else the newest."""
    wanted = list(dict.fromkeys(identifiers))
    read = _drop_read(len(wanted))
    chosen = _choose(_by_client_order_ids(business, environment, wanted, read))
    entries = _entries(chosen.values())
    return [
        entries[chosen[i].drop_id] if i in chosen else {"client_order_id": i, "status": "NOT_FOUND"}
        for i in wanted
    ]


def entries_by_drop_id(drop_ids: list) -> dict[str, dict]:
    """The tracking entries of these drops, keyed by drop id text: three queries at most,
    two for a few drops (their orders read beside them)."""
    form, listed = any_values(drop_ids)
    read = _drop_read(len(drop_ids))
    rows = rows_compiled_once(
        ("drops by id", read.name, form),
        [listed],
        lambda: Drop.objects.filter(pk__any=drop_ids).order_by().values_list(*read.expressions),
        expected=len(drop_ids),
    )
    return _entries(read.rows(rows))


def pick_drop_ids(*, business, environment: str, identifiers: list[str]) -> dict[str, object]:
    """identifier → the id of its active drop, else its newest (one or two queries)."""
    rows = _by_client_order_ids(business, environment, list(set(identifiers)), DROP_KEY)
    return {identifier: uuid.UUID(row.drop_id) for identifier, row in _choose(rows).items()}


def _entries(rows) -> dict[str, dict]:
    """Drop rows (DROP_SEEN) as tracking entries by drop id text: their orders in one
    query, their moves in at most one more."""
    rows = list(rows)
    if not rows:
        return {}
    if isinstance(rows[0], DROP_AND_ORDER.Row):  # read beside the drops
        orders = _orders_from({row.order.order_id: row.order for row in rows}.values())
    else:
        orders = _orders_of({row.order_id for row in rows})
    moves = _moves_of(rows, orders)
    context = _Context()
    context.from_courier = _etas_from_couriers(rows, orders, context.now)
    context.simulated = simulated_positions(rows, orders, moves)
    # The links' tokens are made from the ids, all in one cipher call (orders/links.py).
    tokens = tracking_tokens([row.drop_id for row in rows])
    return {
        row.drop_id: context.entry(row, orders[row.order_id], moves.get(row.drop_id, ()), token)
        for row, token in zip(rows, tokens, strict=True)
    }


def _etas_from_couriers(rows, orders: dict, now: datetime) -> dict[str, dict]:
    """The ETAs counted from the courier through their run, by drop id, for the drops whose
    courier is on the way with a fresh position: two more queries, only when there are any."""
    moving = {
        row.order_id
        for row in rows
        if row.status in ON_THE_WAY and orders[row.order_id].courier_at is not None
    }
    if not moving:
        return {}
    couriers = dict(Order.objects.filter(pk__in=moving).values_list("driver_id", "pk"))
    etas: dict[str, dict] = {}
    for courier_id, drops in run_drops(couriers).items():
        position = orders[str(couriers[courier_id])].courier_at
        etas |= etas_through_run(position=position, stops=to_do(stops_of(drops)), now=now)
    return etas


class _Order:
    """What every drop of one order shows alike; the entries share these dicts (read only)."""

    __slots__ = (
        "batch_id",
        "distances",
        "driver",
        "driver_on_the_way",
        "environment",
        "courier_at",
        "initial",
        "pickup",
        "scheduled",
        "simulated",
    )

    def __init__(self, row, fresh_since: datetime) -> None:  # an ORDER_SEEN row
        self.batch_id, self.environment = row.batch_id, row.environment
        lat, long, scheduled = row.lat, row.long, row.scheduled
        self.distances, self.scheduled = DistancesFrom(lat, long), scheduled
        self.initial = initial_status(scheduled=scheduled is not None)
        self.pickup = {
            "name": row.name,
            "phone": row.phone,
            "lat": lat,
            "long": long,
            "address": None if row.address is None else orjson.loads(row.address),
            "scheduled_at": scheduled,
            "vehicle": row.vehicle,
        }
        if row.resolved:
            self.pickup["resolved_pin"] = {"lat": lat, "long": long}
        driver = row.driver
        self.simulated = bool(row.driver_simulated)  # the sandbox test driver
        self.driver = self.driver_on_the_way = self.courier_at = None
        if driver is not None:
            self.driver = {
                "name": driver,
                "phone": row.driver_phone,
                "vehicle": row.driver_vehicle,
                "position": None,
            }
            at = row.driver_at
            fresh = at is not None and moment_of(at) >= fresh_since
            position = {"lat": row.driver_lat, "long": row.driver_long, "at": at} if fresh else None
            self.driver_on_the_way = {**self.driver, "position": position}
            if fresh:  # the ETA counts from here (tracking/eta.py)
                self.courier_at = (row.driver_lat, row.driver_long)


def _orders_of(order_ids: set[str]) -> dict[str, _Order]:
    form, listed = any_values(order_ids)
    rows = rows_compiled_once(
        ("tracking orders", form),
        [listed],
        lambda: (
            Order.objects.filter(pk__any=order_ids).order_by().values_list(*ORDER_SEEN.expressions)
        ),
        expected=len(order_ids),
    )
    return _orders_from(ORDER_SEEN.rows(rows))


def _orders_from(rows) -> dict[str, _Order]:
    """ORDER_SEEN rows as what their drops' entries share, by order id."""
    # A courier's position older than this is not shown (docs/contract.md §20).
    fresh_since = timezone.now() - timedelta(seconds=settings.COURIER_POSITION_FRESH_SECONDS)
    return {row.order_id: _Order(row, fresh_since) for row in rows}


def _moves_of(rows, orders: dict[str, _Order]) -> dict[str, list[dict]]:
    """The stored status moves of these drops, oldest first.

    Moves only go forward, so a drop still in its initial status has none: only the others
    are looked up, in one query on (drop, at), or none when every drop is where it started.
    """
    moved = [uuid.UUID(row.drop_id) for row in rows if row.status != orders[row.order_id].initial]
    events = defaultdict(list)
    if not moved:
        return events
    for drop_id, status, at in driver_rows(
        DeliveryEvent.objects.filter(drop__id__any=moved)
        .order_by("at", "id")
        .values_list(UuidText("drop_id"), "status", IsoZ("at"))
    ):
        events[drop_id].append({"status": status, "at": at})
    return events


def _by_client_order_ids(business, environment: str, ids: list[str], shape: Shape | Beside) -> list:
    """The drops that matter for these ids, as rows of `shape` (DROP_KEY, a shape extending
    it, or DROP_AND_ORDER): for each id its active drop, else all its finished ones (the
    caller picks the newest). Active drops come through the unique index; only the ids left
    without one are looked for among finished drops, through theirs (orders.models.Drop.Meta).
    Two queries at most, one when every id is active."""
    rows = _drops_of(business, environment, ACTIVE_STATUSES, ids, shape)
    found = {row.client_order_id for row in rows}
    rest = [i for i in ids if i not in found]
    if rest:
        rows += _drops_of(business, environment, FINISHED_STATUSES, rest, shape)
    return rows


def _drops_of(business, environment: str, statuses, ids: list[str], shape: Shape | Beside) -> list:
    """The drops of these client_order_ids in these statuses: SQL compiled once per shape
    (core.reads.rows_compiled_once), since every tracking call makes this query."""
    form, listed = any_values(ids)
    return shape.rows(
        rows_compiled_once(
            ("tracking drops", shape.name, statuses, form),
            [business.pk, environment, listed],
            lambda: (
                Drop.objects.filter(business=business, environment=environment)
                .filter(status__among=statuses, client_order_id__any=ids)
                .order_by()
                .values_list(*shape.expressions)
            ),
            expected=len(ids),
        )
    )


def _choose(rows: list) -> dict[str, tuple]:
    """client_order_id → its active drop's row, else its newest finished one's."""
    chosen: dict[str, tuple] = {}
    for row in rows:
        current = chosen.get(row.client_order_id)
        if current is None or _preferred(row, current):
            chosen[row.client_order_id] = row
    return chosen


def _preferred(row, current) -> bool:
    row_active = row.status in ACTIVE_STATUSES
    if row_active != (current.status in ACTIVE_STATUSES):
        return row_active
    return (moment_of(row.created), row.drop_id) > (moment_of(current.created), current.drop_id)


# Plain strings: an enum member costs a descriptor call on every access, thousands per answer.
_PICKED_UP, _PENDING = DropStatus.PICKED_UP.value, DropStatus.PENDING.value
_DELIVERED, _RETURNED = DropStatus.DELIVERED.value, DropStatus.RETURNED.value
# A drop that failed keeps saying why while it returns (FAILED_ONCE: docs/contract.md §19).
# A COD drop's cash (docs/contract.md §18): waiting while the drop is active, collected with the
# delivery, not collected once it failed, returned or was cancelled.
PENDING, COLLECTED, NOT_COLLECTED = "pending", "collected", "not_collected"


class _Context:
    """What every entry of one answer shares: the time, the link prefix, the ETA model, the
    wire texts of the rows' times."""

    __slots__ = ("eta", "from_courier", "link", "moments", "now", "simulated", "starts", "times")

    def __init__(self) -> None:
        self.now = timezone.now()
        self.from_courier: dict[str, dict] = {}  # ETAs counted from the courier, by drop id
        self.simulated: dict[str, dict] = {}  # the sandbox test driver's positions, by drop id
        self.link = tracking_url("")
        self.eta = EtaModel()
        self.moments: dict[str, datetime] = {}
        self.starts: dict[str, tuple[str, int]] = {}  # EtaModel.start by pickup time's text
        self.times = WireTimes()

    def _moment(self, text: str) -> datetime:
        """A wire or stored time as a datetime (UTC where the text has no offset: SQLite),
        parsed once: the drops of a batch share theirs."""
        moment = self.moments.get(text)
        if moment is None:
            moment = self.moments[text] = moment_of(text)
        return moment

    def entry(self, row, order: _Order, moves, token: str) -> dict:  # a DROP_SEEN row
        created, changed, window_start, window_end, collected = self.times.each(
            row.created, row.changed, row.window_start, row.window_end, row.cod_collected_at
        )
        status, drop_id = row.status, row.drop_id
        # The first status is the drop's own creation (no event row: orders.models.DeliveryEvent).
        events = [{"status": order.initial, "at": created}, *moves]
        eta = self._eta(status, created, order, row, moves)
        from_courier = self.from_courier.get(drop_id)
        if eta is not None and from_courier is not None and status in ON_THE_WAY:
            eta["dropoff_at"] = from_courier["dropoff_at"]
            if from_courier["pickup_at"] is not None:  # not picked up yet: when it will be
                eta["pickup_at"] = from_courier["pickup_at"]
        window = None
        if window_start is not None:
            window = {"start": window_start, "end": window_end}
            # The courier never drops before the window opens (docs/contract.md §17).
            if eta is not None and eta["dropoff_at"] < window["start"]:
                eta["dropoff_at"] = window["start"]
        return {
            "client_order_id": row.client_order_id,
            "status": status,
            "drop_id": drop_id,
            "short_code": row.short_code,
            "pass_order_id": row.order_id,
            "batch_id": order.batch_id,
            "external_waybill": row.waybill,
            "environment": order.environment,
            "pickup": order.pickup,
            "dropoff": _dropoff(row),
            "stop_sequence": row.stop_sequence,
            # The courier's position only while on the way to this drop (docs/contract.md §20).
            "driver": self._driver(order, status, drop_id),
            "price": row.price,
            "price_breakdown": {"delivery": row.delivery, "cod_fee": row.cod_fee},
            "currency": row.currency,
            "created_at": created,
            "updated_at": changed or created,
            "events": events,
            # How many status events the drop has had: receivers order webhooks by it.
            "sequence": len(events),
            "eta": eta,
            "dropoff_window": window,
            "window_status": None if window is None else self._window_status(row),
            "notes": row.notes,
            "undeliverable_action": row.undeliverable_action,
            "recipient_language": row.recipient_language,
            "parcel": _parcel(row),
            "cod": None
            if row.cod_amount is None
            else _cod(row.cod_amount, status, events, collected),
            "tracking_url": self.link + token,
            "proof_of_delivery": None if status != _DELIVERED else _proof(drop_id, row, events),
            "failure": None if status not in FAILED_ONCE else _failure(row.failure_reason, events),
            "return": None
            if status != _RETURNED
            else {"at": _at(events, _RETURNED), "received_by": row.return_received_by},
        }

    def _driver(self, order: _Order, status: str, drop_id: str) -> dict | None:
        if status not in ON_THE_WAY:
            return order.driver
        simulated = self.simulated.get(drop_id)
        if simulated is not None:  # the sandbox test driver, where its simulation has it
            return {**order.driver, "position": simulated}
        return order.driver_on_the_way

    def _window_status(self, row) -> str:
        """As stored (tracking/window_watch.py), and at_risk as soon as the ETA passes the end,
        before the minute's job has stored it."""
        status, risk_at = row.window_status, row.window_risk_at
        if status == ON_TRACK and risk_at is not None and self.now > self._moment(risk_at):
            return AT_RISK
        return status

    def _eta(self, status: str, created: str, order: _Order, row, moves) -> dict | None:
        # The pickup time is when the drop started waiting for a courier; before that, when
        # it is scheduled (the sandbox test driver may dispatch a drop before its time).
        # Its creation is its first event (PENDING unless scheduled); then its moves.
        if not moves and status == order.initial:
            # Still in its first status (most drops): not picked up, not finished. Drops of a
            # batch share their pickup's start, found by its wire text (a str keeps its hash).
            waited_from = created if order.initial == _PENDING else order.scheduled or created
            start = self.starts.get(waited_from)
            if start is None:
                start = self.starts[waited_from] = self.eta.start(
                    self._moment(waited_from), self.now
                )
            return self.eta.before_pickup(start, *_ride(order, row))
        waiting = created if order.initial == _PENDING else None
        picked_up = None
        for event in moves:
            moved_to = event["status"]
            if moved_to == _PENDING and waiting is None:
                waiting = event["at"]
            elif moved_to == _PICKED_UP and picked_up is None:
                picked_up = event["at"]
        km, earlier = _ride(order, row)
        return self.eta.of(
            status=status,
            pickup_time=self._moment(waiting or order.scheduled or created),
            picked_up_at=self._moment(picked_up) if picked_up else None,
            km=km,
            earlier_stops=earlier,
            now=self.now,
        )


def _cod(amount: str, status: str, events: list[dict], collected_at: str | None) -> dict:
    """The cash to collect and where it stands (docs/contract.md §18): collected with the
    delivery (when it was collected, else when the drop was delivered), not collected once
    the drop can no longer be delivered."""
    if status == _DELIVERED:
        at = _at(events, _DELIVERED) if collected_at is None else collected_at
        return {"amount": amount, "status": COLLECTED, "collected_at": at}
    state = PENDING if status in ACTIVE_STATUSES else NOT_COLLECTED
    return {"amount": amount, "status": state, "collected_at": None}


def _ride(order: _Order, row) -> tuple[float, int]:
    """The km from the pickup to the drop and the stops before it: along its order's route
    once sequenced (docs/contract.md §21), else straight there with none before."""
    if row.route_km is None:
        return order.distances.km(row.lat, row.long), 0
    return row.route_km, row.stop_sequence - 1


def _dropoff(row) -> dict:
    lat, long, address = row.lat, row.long, row.address
    dropoff = {
        "name": row.name,
        "phone": row.phone,
        "lat": lat,
        "long": long,
        "address": None if address is None else orjson.loads(address),
    }
    if row.resolved:
        dropoff["resolved_pin"] = {"lat": lat, "long": long}
    return dropoff


def _parcel(row) -> dict:
    return {
        "size": row.parcel_size,
        "weight_kg": row.parcel_weight,
        "description": row.parcel_description,
        "value": row.parcel_value,
    }


def _at(events: list[dict], status: str) -> str | None:
    return next((e["at"] for e in reversed(events) if e["status"] == status), None)


def _proof(drop_id: str, row, events: list[dict]) -> dict:
    """How a DELIVERED drop was handed over (docs/contract.md §14, §24)."""
    return {
        "method": row.pod_method or ProofMethod.NONE,
        "at": _at(events, DropStatus.DELIVERED),
        "received_by": row.pod_received_by,
        "photo_url": photo_url(drop_id) if row.pod_photo else None,
        "signature_url": signature_url(drop_id) if row.pod_signature else None,
    }


def _failure(reason, events: list[dict]) -> dict:
    return {"reason": reason or FailureReason.OTHER, "at": _at(events, DropStatus.FAILED)}
