"""A Hypothesis state machine over random money moves: the ledger stays exact after every step.

Each example provisions a fresh account (wallet or invoiced, random plan and balance), then
runs random top-ups, batches of random sizes and prices, replays and cancellations through
the API. A model predicts every drop's outcome (price by the formula, debited in submission
order) and the money; after each step balance = sum of entries >= 0, and accrued = sum of lines.
"""

from __future__ import annotations

import itertools
import uuid
from decimal import Decimal

import pytest
from django.db.models import Sum
from hypothesis import HealthCheck, assume, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from accounts.models import BillingModel
from billing.models import Invoice
from billing.services import price_for, sandbox_top_up
from console.provisioning import provision_business
from geo.geometry import haversine_km
from tests.billing.helpers import assert_ledger_consistent, outcomes
from tests.factories import SHOP, batch, drop, group
from tests.fixtures import Api

SETTINGS = settings(
    max_examples=15,
    stateful_step_count=12,
    deadline=None,
    database=None,  # no example database written into the working tree
    suppress_health_check=list(HealthCheck),
)

cents = st.integers(min_value=0, max_value=2_000).map(lambda c: Decimal(c) / 100)
# Drop pins inside the demo area, up to ~17 km from the shop.
pins = st.tuples(
    st.integers(min_value=11_500, max_value=11_690).map(lambda v: v / 1000),
    st.integers(min_value=104_850, max_value=104_990).map(lambda v: v / 1000),
)
_accounts = itertools.count(1)


class LedgerMachine(RuleBasedStateMachine):
    @initialize(
        billing=st.sampled_from([BillingModel.WALLET, BillingModel.INVOICED]),
        balance=cents,
        base_fee=st.integers(min_value=0, max_value=300).map(lambda c: Decimal(c) / 100),
        per_km_fee=st.integers(min_value=0, max_value=150).map(lambda c: Decimal(c) / 100),
        included_km=st.sampled_from([Decimal("0"), Decimal("1.5"), Decimal("4")]),
    )
    def open_account(self, billing, balance, base_fee, per_km_fee, included_km):
        n = next(_accounts)
        provisioned = provision_business(
            name=f"Machine {n}",
            email=f"machine{n}-{uuid.uuid4().hex[:8]}@example.com",
            billing=billing,
            sandbox_balance=balance,
            base_fee=base_fee,
            per_km_fee=per_km_fee,
            included_km=included_km,
        )
        self.tenant = provisioned
        self.key = provisioned.sandbox_key
        self.plan = provisioned.business.pricing_plan
        self.is_wallet = billing == BillingModel.WALLET
        self.api = Api()
        self.ids = itertools.count(1)
        self.credited = balance  # starting balance plus top-ups
        self.active: dict[str, Decimal] = {}  # client_order_id → price, accepted and not cancelled
        self.cancelled: list[str] = []
        self.sent: list[tuple[str, dict, bytes]] = []  # (idempotency key, body, response)

    @property
    def charged(self) -> Decimal:
        return sum(self.active.values(), Decimal("0.00"))

    def remaining(self) -> Decimal:
        return self.credited - self.charged

    @rule(amount=st.integers(min_value=1, max_value=1_500).map(lambda c: Decimal(c) / 100))
    def top_up(self, amount):
        sandbox_top_up(business=self.tenant.business, amount=amount)
        self.credited += amount

    @rule(data=st.data(), group_sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3))
    def send_batch(self, data, group_sizes):
        reusable = sorted(self.active) + self.cancelled
        groups, legs = [], []
        for size in group_sizes:
            drops = []
            for _ in range(size):
                lat, long = data.draw(pins)
                reuse = reusable and data.draw(st.booleans())
                cid = data.draw(st.sampled_from(reusable)) if reuse else f"H-{next(self.ids)}"
                drops.append(drop(cid, lat=lat, long=long))
                legs.append((cid, lat, long))
            groups.append(group(*drops))
        body, key = batch(*groups), str(uuid.uuid4())

        # The model: each drop in submission order, duplicates first, then the balance.
        expected, taken, remaining = [], set(self.active), self.remaining()
        accepted: dict[str, Decimal] = {}
        for cid, lat, long in legs:
            price = price_for(self.plan, haversine_km(SHOP["lat"], SHOP["long"], lat, long))
            if cid in taken:
                expected.append("DUPLICATE_CLIENT_ORDER_ID")
            elif self.is_wallet and price > remaining:
                expected.append("INSUFFICIENT_BALANCE")
            else:
                expected.append("accepted")
                taken.add(cid)
                accepted[cid] = price
                remaining -= price if self.is_wallet else 0

        response = self.api.bulk(body, self.key, key)

        assert response.status_code == 200, response.content
        assert outcomes(response) == expected
        for outcome in expected:
            event(outcome)
        got = {
            o["client_order_id"]: Decimal(o["price"])
            for o in response.json()["data"]["orders"]
            if o["status"] == "accepted"
        }
        assert got == accepted
        self.active.update(accepted)
        self.cancelled = [c for c in self.cancelled if c not in accepted]
        self.sent.append((key, body, response.content))

    @precondition(lambda self: self.sent)
    @rule(data=st.data(), same_key=st.booleans())
    def replay(self, data, same_key):
        # Under a new key only a batch that reserved its client_batch_id replays; a FAILED
        # one reserved nothing and would be processed afresh (docs/contract.md §4).
        candidates = [s for s in self.sent if same_key or b'"status":"FAILED"' not in s[2]]
        assume(candidates)
        key, body, content = data.draw(st.sampled_from(candidates))

        response = self.api.bulk(body, self.key, key if same_key else str(uuid.uuid4()))

        assert response.status_code == 200
        assert response.headers["Idempotent-Replayed"] == "true"
        assert response.content == content

    @precondition(lambda self: self.active)
    @rule(data=st.data())
    def cancel(self, data):
        chosen = data.draw(
            st.lists(st.sampled_from(sorted(self.active)), min_size=1, max_size=3, unique=True)
        )

        response = self.api.post("/orders/cancel", {"identifiers": chosen}, self.key)

        assert response.status_code == 200
        assert [o["status"] for o in response.json()["data"]["orders"]] == ["CANCELLED"] * len(
            chosen
        )
        for cid in chosen:
            del self.active[cid]
            self.cancelled.append(cid)

    @invariant()
    def money_is_exact(self):
        balance = assert_ledger_consistent(self.tenant, "sandbox")
        invoices = Invoice.objects.filter(business=self.tenant.business, environment="sandbox")
        accrued = sum((i.accrued for i in invoices), Decimal("0.00"))
        lines = invoices.aggregate(total=Sum("lines__amount"))["total"] or Decimal("0.00")
        assert accrued == lines
        if self.is_wallet:
            assert balance == self.credited - self.charged >= 0
            assert not invoices.exists()
        else:
            assert balance == self.credited
            assert accrued == self.charged


@pytest.mark.django_db
def test_balance_equals_ledger_sum_and_never_goes_negative_over_random_moves(open_for_business):
    run_state_machine_as_test(LedgerMachine, settings=SETTINGS)
