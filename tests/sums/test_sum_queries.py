"""Sums, value counts and means of measures in the text and JSON forms, and the query over one vector.

A query naming a measure is a linear query over the vector of counts, then each measure's sums, then the
value counts of the measures that skip missing values (docs/sums.md). These tests pin its coefficients
(written out by hand), its product form (a sum and a count over one box stay one term), its sensitivity
(a record's, not a coordinate's), its JSON form and every bad input's one line with the column.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.algebra import abs_dense, inner
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.measured import counts_only, footprint, lift, part
from dpdesk.engine.queries.query import query_from_json
from dpdesk.engine.queries.text import describe_query, parse_query, query_from_input
from dpdesk.engine.schema import Schema
from dpdesk.engine.sums.query import is_mean_text, parse_mean

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "ward", "column": "ward", "kind": "categorical", "values": ["a", "b", "c"]},
            {
                "name": "age",
                "column": "age",
                "kind": "numeric",
                "edges": [0, 40, 100],
                "labels": ["young", "old"],
            },
        ],
        "measures": [
            {"name": "cost", "column": "cost", "bounds": [-20, 500], "nulls": "skip"},
            {"name": "stay", "column": "stay", "bounds": [1, 30], "nulls": "replace", "null_value": 1},
        ],
    }
)
N = 6  # cells: ward (3) × age (2)
COUNT, COST, STAY, COST_VALUES = 0, 1, 2, 3  # the blocks: counts, sums of cost, sums of stay, values of cost


def cells(ward=None, age=None):
    """0/1 over the 6 cells, written out from the labels (C order: age fastest)."""
    out = np.zeros(N)
    for i, w in enumerate("abc"):
        for j, g in enumerate(("young", "old")):
            if (ward is None or w in ward) and (age is None or g in age):
                out[2 * i + j] = 1.0
    return out


def vector(**blocks):
    out = np.zeros((4, N))
    for b, v in blocks.items():
        out[{"count": COUNT, "cost": COST, "stay": STAY, "values": COST_VALUES}[b]] += v
    return out.reshape(-1)


def test_layout_blocks():
    lay = Layout.of(SCHEMA)
    assert lay.shape == (4, 3, 2)
    assert [b.describe() for b in lay.blocks] == [
        "count",
        "sum of cost",
        "sum of stay",
        "number of values of cost",
    ]
    assert lay.weights.tolist() == [1.0, 500.0, 30.0, 1.0]
    assert Layout.of(Schema(SCHEMA.attributes)) is None  # no measures: counts as ever


@pytest.mark.parametrize(
    ("text", "expected", "sensitivity", "terms"),
    [
        ('sum(cost | ward="b")', lambda: vector(cost=cells("b")), 500, 1),
        (
            'sum(cost | ward="b") - 2*count(ward="b")',
            lambda: vector(cost=cells("b"), count=-2 * cells("b")),
            502,
            1,
        ),
        ('count(cost | age="old")', lambda: vector(values=cells(age=("old",))), 1, 1),
        ("count(stay)", lambda: vector(count=cells()), 1, 1),  # every record has a stay value
        (
            'sum(stay) + 0.5*sum(cost | ward=["a", "c"])',
            lambda: vector(stay=cells(), cost=0.5 * cells("ac")),
            280,
            2,
        ),
        (
            '3*sum(stay | age="young") - sum(cost | age="young")',
            lambda: vector(stay=3 * cells(age=("young",)), cost=-cells(age=("young",))),
            590,
            1,
        ),
    ],
)
def test_coefficients_sensitivity_and_product_form(text, expected, sensitivity, terms):
    q = parse_query(text, SCHEMA)
    assert q.layout == Layout.of(SCHEMA)
    np.testing.assert_array_equal(q.dense(), expected())
    assert q.sensitivity == sensitivity  # max over cells of Σ_b B_b |Q_bj|
    assert len(q.terms) == terms
    assert q.text == text


def test_sensitivity_is_a_records_not_a_coordinates():
    # one record in ward b moves its count by 1 and its cost by up to 500 at once
    q = parse_query('sum(cost | ward="b") + count(ward="b")', SCHEMA)
    assert q.sensitivity == 501
    loads = q.record_loads()
    np.testing.assert_array_equal(loads, 501 * cells("b"))
    np.testing.assert_array_equal(abs_dense(q), loads)
    f = footprint(q)
    assert f.layout is None and f.shape == (3, 2) and f.terms is not None
    np.testing.assert_array_equal(f.dense(), loads)


def test_integer_only_without_sums():
    assert not parse_query('sum(cost | ward="a")', SCHEMA).is_integer
    assert parse_query('count(cost | ward="a") + 2*count(ward="b")', SCHEMA).is_integer


def test_counts_lift_onto_the_count_block():
    lay = Layout.of(SCHEMA)
    c = parse_query('count(ward="c")', SCHEMA)
    assert c.layout is None
    lifted = lift(c, lay)
    np.testing.assert_array_equal(lifted.dense(), vector(count=cells("c")))
    np.testing.assert_array_equal(lifted.sparse()[0], c.sparse()[0])  # the count block first: same indices
    assert lifted.sensitivity == 1
    assert counts_only(lifted) == c
    mixed = parse_query('sum(cost | ward="c") + count(ward="c")', SCHEMA)
    assert counts_only(mixed) is None
    assert part(mixed, COST) == parse_query('count(ward="c")', SCHEMA)
    assert inner(lifted, mixed) == 2.0  # product form over the blocks: Σ_d ⟨f_d, g_d⟩ factored


@pytest.mark.parametrize(
    "text",
    [
        'sum(cost | ward="b") - 2*count(ward="b")',
        'count(cost | age="old") + sum(stay)',
        '0.25*sum(cost) - sum(stay | ward=["a", "b"], age="young")',
    ],
)
def test_json_round_trip(text):
    q = parse_query(text, SCHEMA)
    obj = json.loads(json.dumps(q.to_json()))
    assert set(obj) <= {"count", "sum", "count_of", "layout"} and obj["layout"] == Layout.of(SCHEMA).to_json()
    back = query_from_json(obj, N, SCHEMA.shape, Layout.of(SCHEMA))
    assert back == q and back.sensitivity == q.sensitivity
    assert query_from_input(json.dumps(obj), N, SCHEMA.shape, SCHEMA) == q


@pytest.mark.parametrize(
    ("text", "described"),
    [
        ('sum(cost | ward="b") - 2*count(ward="b")', '-2*count(ward="b") + sum(cost | ward="b")'),
        ('count(cost | age="old")', 'count(cost | age="old")'),
        ("sum(stay)", "sum(stay)"),
    ],
)
def test_a_stored_query_reads_as_text(text, described):
    stored = query_from_json(parse_query(text, SCHEMA).to_json(), N, SCHEMA.shape, Layout.of(SCHEMA))
    assert stored.text is None
    assert describe_query(stored, SCHEMA) == described
    assert parse_query(described, SCHEMA) == stored


def test_json_form_written_by_hand():
    q = query_from_input(
        '{"sum": {"cost": {"indices": [2, 3], "values": [1, 1]}}, "count": [0, 0, -2, -2, 0, 0]}',
        N,
        SCHEMA.shape,
        SCHEMA,
    )
    assert q == parse_query('sum(cost | ward="b") - 2*count(ward="b")', SCHEMA)
    # a replace measure's values are its records: count_of folds onto the counts
    r = query_from_input('{"count_of": {"stay": [1, 1, 1, 1, 1, 1]}}', N, SCHEMA.shape, SCHEMA)
    assert r == lift(parse_query("count()", SCHEMA), Layout.of(SCHEMA))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'sum(ward | age="old")',
            "query: at column 5: 'ward' is an attribute, not a measure (measures: 'cost', 'stay')",
        ),
        ("sum(income)", "query: at column 5: 'income' is not a measure (measures: 'cost', 'stay')"),
        ("sum()", "query: at column 5: expected a measure's name but found ')'"),
        ('sum(cost, ward="a")', "query: at column 9: expected '|' or ')' but found ','"),
        (
            'sum(cost | ward="z")',
            "query: at column 17: attribute 'ward' has no label 'z' (labels: 'a', 'b', 'c')",
        ),
        (
            "sum(cost) * sum(stay)",
            "query: at column 11: cannot multiply two counts or sums (the query would not be linear)",
        ),
        (
            "mean(cost) + count()",
            "query: at column 1: mean(...) is a ratio of two estimates, not a linear query: ask for it alone, e.g. mean(cost)",
        ),
        ("sum(cost) + 3", "query: at column 13: a constant term does not change a query; remove it"),
        (
            'count(cost | cost="a")',
            "query: at column 14: unknown attribute 'cost' (attributes: 'ward', 'age')",
        ),
        ("sum(cost) - sum(cost)", "query: all coefficients are zero in 'sum(cost) - sum(cost)'"),
        ("2e7*sum(cost)", "query: coefficient"),
    ],
)
def test_bad_text_is_one_line_with_its_column(text, message):
    with pytest.raises(QueryError) as exc:
        query_from_input(text, N, SCHEMA.shape, SCHEMA)
    assert str(exc.value).startswith(message)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"sum": {"income": [1, 0, 0, 0, 0, 0]}}', "query: no measure 'income' (measures: 'cost', 'stay')"),
        ('{"sum": [1, 0, 0, 0, 0, 0]}', 'query: "sum" must be an object of queries by measure name'),
        ('{"sum": {"cost": [1, 0, 0]}}', "query.sum.cost: query has 3 coefficients, the cube has 6 cells"),
        ('{"count": {"indices": [9], "values": [1]}}', "query.count: indices[0] = 9 is outside 0..5"),
    ],
)
def test_bad_json_is_one_line(raw, message):
    with pytest.raises(
        QueryError, match="^" + message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        query_from_input(raw, N, SCHEMA.shape, SCHEMA)


def test_measures_need_a_schema_with_measures():
    plain = Schema(SCHEMA.attributes)
    with pytest.raises(QueryError, match="'cost' is not a measure: the schema declares no measures to sum"):
        parse_query("sum(cost)", plain)
    with pytest.raises(QueryError, match="this cube declares none"):
        query_from_input('{"sum": {"cost": [1, 0, 0, 0, 0, 0]}}', N, SCHEMA.shape, plain)


def test_mean_text():
    q = parse_mean('mean(cost | ward=["a","b"], age="old")', SCHEMA)
    assert is_mean_text(" mean (cost)") and not is_mean_text("sum(cost)")
    assert q.bounds(SCHEMA) == (-20, 500)
    np.testing.assert_array_equal(q.total(SCHEMA).dense(), vector(cost=cells("ab", ("old",))))
    np.testing.assert_array_equal(q.size(SCHEMA).dense(), vector(values=cells("ab", ("old",))))
    stay = parse_mean("mean(stay)", SCHEMA)
    np.testing.assert_array_equal(stay.size(SCHEMA).dense(), vector(count=cells()))
    for text, message in [
        ("mean(cost) + 1", "query: at column 12: expected end of query but found '+' (a mean is asked alone"),
        ("mean(ward)", "query: at column 6: 'ward' is an attribute, not a measure"),
        ('mean(cost | ward="q")', "query: at column 18: attribute 'ward' has no label 'q'"),
    ]:
        with pytest.raises(QueryError) as exc:
            parse_mean(text, SCHEMA)
        assert str(exc.value).startswith(message)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='sumcountmea()|,=[]"+-*0123456789. wardbgyoldtsf', max_size=40))
def test_any_text_parses_or_fails_in_one_line(text):
    """Whatever a person types over this grammar's alphabet, the parsers answer or raise QueryError."""
    for parse in (parse_query, parse_mean):
        try:
            parse(text, SCHEMA)
        except QueryError as exc:
            assert "\n" not in str(exc)
