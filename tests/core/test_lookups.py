"""`field__any=[...]` (core.lookups): a list of any size as one JSON parameter on PostgreSQL.

The values make a round trip through JSON and a cast in the database; these tests hold that
nothing is lost or changed on the way, for text, integers and UUIDs.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.models import RateCounter
from orders.models import IdempotencyRecord

AWKWARD = [
    'a "quoted" id',
    "back\\slash and \\u0041",
    "braces {} [] and, commas",
    "single ' quote",
    "tab\tnewline\n",
    "ក្រុមហ៊ុន 🚚",
    "NULL",
    " spaced ",
]


def keys(**lookup) -> set[str]:
    return set(RateCounter.objects.filter(**lookup).values_list("key", flat=True))


@pytest.mark.django_db
def test_text_matches_exactly_whatever_it_holds():
    RateCounter.objects.bulk_create(
        RateCounter(key=key, window_end_ms=n, hits=1) for n, key in enumerate([*AWKWARD, "x"])
    )

    assert keys(key__any=[*AWKWARD, "absent"]) == set(AWKWARD)
    assert keys(key__any=[key + " " for key in AWKWARD]) == set()
    assert keys(key__any=[key.upper() for key in AWKWARD if key.upper() != key]) == set()
    assert keys(key__any=[]) == set()


@pytest.mark.django_db
def test_values_holding_the_separator_or_empty_still_match_exactly():
    odd = ["unit\x1fseparator", "", "plain", "\x1f"]
    RateCounter.objects.bulk_create(
        RateCounter(key=key, window_end_ms=n, hits=1) for n, key in enumerate(odd)
    )

    assert keys(key__any=odd) == set(odd)
    assert keys(key__any=["unit", "separator", "\x1f\x1f"]) == set()
    assert keys(key__any=["", "absent"]) == {""}


@pytest.mark.django_db
def test_the_planner_sees_the_values_themselves():
    # Folded into a constant array when the statement is planned (as an array parameter
    # would be), not a subquery the planner cannot look into and guesses the size of.
    plan = RateCounter.objects.filter(key__any=[f"V-{n}" for n in range(50)]).explain()
    assert "'{V-0,V-1,V-2," in plan and "InitPlan" not in plan, plan

    odd = RateCounter.objects.filter(key__any=["V-0", "V-\x1f"]).explain()
    assert "jsonb_array_elements_text" in odd, odd  # the fallback


@pytest.mark.django_db
def test_a_value_longer_than_the_column_is_not_cut_to_fit():
    longest = "k" * RateCounter._meta.get_field("key").max_length
    RateCounter.objects.create(key=longest, window_end_ms=1, hits=1)

    assert keys(key__any=[longest + "zz"]) == set()
    assert keys(key__any=[longest]) == {longest}


@pytest.mark.django_db
def test_integers_and_uuids_are_compared_as_their_own_type(alice):
    RateCounter.objects.bulk_create(
        RateCounter(key=f"n{n}", window_end_ms=n, hits=1) for n in (1, 2, 2**40)
    )
    assert keys(window_end_ms__any=[2, 2**40, 7]) == {"n2", f"n{2**40}"}

    ids = [uuid.uuid4() for _ in range(3)]
    IdempotencyRecord.objects.bulk_create(
        IdempotencyRecord(
            business=alice.business,
            environment="sandbox",
            key=key,
            fingerprint="f",
            created_at=timezone.now(),
        )
        for key in ids
    )
    found = IdempotencyRecord.objects.filter(key__any=[ids[0], str(ids[2]), uuid.uuid4()])
    assert set(found.values_list("key", flat=True)) == {ids[0], ids[2]}


@pytest.mark.django_db
def test_a_thousand_values_are_one_parameter():
    values = [f"V-{n}" for n in range(1000)]
    sql, params = RateCounter.objects.filter(key__any=values).query.sql_with_params()
    assert len(params) == 1

    with CaptureQueriesContext(connection) as captured:
        assert keys(key__any=values) == set()
    assert len(captured) == 1


@pytest.mark.django_db
def test_among_matches_its_constants_written_into_the_sql():
    RateCounter.objects.bulk_create(
        RateCounter(key=key, window_end_ms=n, hits=1) for n, key in enumerate(["A", "B", "C"])
    )
    with CaptureQueriesContext(connection) as captured:
        assert keys(key__among=("A", "C", "D")) == {"A", "C"}
    assert "IN ('A', 'C', 'D')" in captured.captured_queries[0]["sql"]


@pytest.mark.parametrize("values", [("A'); DROP TABLE x; --",), ("two words",), ("",), ()])
def test_among_refuses_anything_but_constant_words(values):
    with pytest.raises(ValueError, match="constant words"):
        RateCounter.objects.filter(key__among=values)


@pytest.mark.django_db
def test_one_value_is_compared_as_one_and_matches_exactly(alice):
    """A list of one goes as `= %s` (core.lookups.any_values: its generic plan is kept when
    prepared); what it matches is what a list would match, whatever the value holds."""
    odd = [*AWKWARD, "unit\x1fseparator", "", "k" * 3]
    RateCounter.objects.bulk_create(
        RateCounter(key=key, window_end_ms=n, hits=1) for n, key in enumerate(odd)
    )
    for key in odd:
        assert keys(key__any=[key]) == {key}
        assert keys(key__any=[key + "x"]) == set()
    sql, params = RateCounter.objects.filter(key__any=["A"]).query.sql_with_params()
    assert "ANY" not in sql and params == ("A",)
    assert keys(window_end_ms__any=[3]) == {odd[3]}

    record = IdempotencyRecord.objects.create(
        business=alice.business, environment="sandbox", key=uuid.uuid4(), fingerprint="f",
        created_at=timezone.now(),
    )  # fmt: skip
    for value in (record.key, str(record.key)):
        assert list(IdempotencyRecord.objects.filter(key__any=[value])) == [record]
    assert not IdempotencyRecord.objects.filter(key__any=[uuid.uuid4()]).exists()
