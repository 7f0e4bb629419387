"""Linear queries: text form, builders, JSON forms, sensitivity, inner products (DESIGN §1, §6).

Expected coefficient vectors are written out by hand for the paper's 2×2 cube (age × income,
cells in C order: [0-30 & <=50K, 0-30 & >50K, 30-150 & <=50K, 30-150 & >50K]).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpdesk.engine.errors import DpdeskError, QueryError
from dpdesk.engine.queries.algebra import inner
from dpdesk.engine.queries.predicates import count
from dpdesk.engine.queries.query import (
    Query,
    Term,
    query_from_json,
    query_from_vector,
)
from dpdesk.engine.queries.text import format_terms, parse_query
from dpdesk.engine.schema import Schema

PAPER = Schema.from_dict(
    {
        "attributes": [
            {"name": "age", "kind": "numeric", "edges": [0, 30, 150], "labels": ["0-30", "30-150"]},
            {"name": "income", "kind": "categorical", "values": ["<=50K", ">50K"]},
        ]
    }
)

THREE = Schema.from_dict(
    {
        "attributes": [
            {"name": "a", "kind": "categorical", "values": ["a0", "a1"]},
            {"name": "b", "kind": "categorical", "values": ["b0", "b1", "b2"]},
            {
                "name": "ville",
                "kind": "categorical",
                "values": ["Zürich", "東京", 'say "hi"', "it's", "2020"],
            },
        ]
    }
)


# ------------------------------------------------------------------ text form evaluates to hand-built vectors


@pytest.mark.parametrize(
    "text, expected",
    [
        ('count(age="0-30", income=">50K")', [0, 1, 0, 0]),
        ("count()", [1, 1, 1, 1]),
        ('2*count(income=">50K") - count(age="0-30")', [-1, 1, 0, 2]),
        ('0.5 * count(age="30-150")', [0, 0, 0.5, 0.5]),
        ('count(age=["0-30","30-150"])', [1, 1, 1, 1]),
        ('-count(income="<=50K")', [-1, 0, -1, 0]),
        ('- - count(income="<=50K")', [1, 0, 1, 0]),
        ("  count ( income = '>50K' )  ", [0, 1, 0, 1]),
        ('count(income=">50K")*2.5', [0, 2.5, 0, 2.5]),
        ('1e3*count(age="0-30")', [1000, 1000, 0, 0]),
        ('2*(count(age="0-30") + count(income=">50K"))', [2, 4, 0, 2]),
        ('count(age="0-30") + count(age="0-30")', [2, 2, 0, 0]),
        ('count(income=">50K", age="0-30") - count(age="0-30", income=">50K") + count()', [1, 1, 1, 1]),
        ('+count(age=".5") ' if False else 'count(age="30-150")+ -count(income=">50K")', [0, -1, 1, 0]),
        (".5*count()", [0.5] * 4),
        ('2*3*count(age="0-30")', [6, 6, 0, 0]),
    ],
)
def test_text_form_evaluates(text, expected):
    q = parse_query(text, PAPER)
    assert q.dense().tolist() == [float(v) for v in expected]
    assert q.text == text.strip()
    assert q.describe() == text.strip()
    assert q.shape == (2, 2) and q.is_product


def test_quoting_escapes_unicode_and_unquoted_labels():
    q = parse_query(r"""count(ville='it\'s', a="a1") + count(ville="say \"hi\"", b='b2')""", THREE)
    d = np.zeros((2, 3, 5))
    d[1, :, 3] += 1
    d[:, 2, 2] += 1
    assert np.array_equal(q.dense(), d.reshape(-1))
    q = parse_query('count(ville=["東京", "Zürich"], b=b1)', THREE)
    d = np.zeros((2, 3, 5))
    d[:, 1, :2] = 1
    assert np.array_equal(q.dense(), d.reshape(-1))
    # numeric-looking labels can be written bare
    assert np.array_equal(
        parse_query("count(ville=2020)", THREE).dense(), parse_query('count(ville="2020")', THREE).dense()
    )
    # attribute names can be quoted
    assert np.array_equal(parse_query('count("a"="a0")', THREE).dense(), count(THREE, a="a0").dense())


def test_text_round_trip_through_describe():
    rng = np.random.default_rng(7)
    for _ in range(50):
        terms = []
        for _ in range(int(rng.integers(1, 4))):
            w = float(rng.choice([1, -1, 2, -3, 0.5]))
            labels = {}
            for attr in THREE.attributes:
                if rng.random() < 0.6:
                    k = int(rng.integers(1, attr.size + 1))
                    labels[attr.name] = list(rng.choice(attr.labels, size=k, replace=False))
            terms.append(count(THREE, w, **labels))
        try:
            q = Query(THREE.shape, terms=tuple(t for c in terms for t in c.terms))
        except QueryError:
            continue  # the random terms cancelled out
        text = format_terms(q.terms, THREE)
        again = parse_query(text, THREE)
        assert np.allclose(again.dense(), q.dense()), text


# ------------------------------------------------------------------ errors with positions


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'count(age="0-30", income=">50K"',
            "query: at column 32: expected ',' or ')' but found end of query",
        ),
        ('count(age="0-30" income=">50K")', "query: at column 18: expected ',' or ')' but found 'income'"),
        ('(count(age="0-30"), 2)', "query: at column 19: expected ')' but found ','"),
        ('count(age="0-30",)', "query: at column 18: expected an attribute name but found ')'"),
        ('count(agee="0-30")', "query: at column 7: unknown attribute 'agee' (attributes: 'age', 'income')"),
        (
            'count(age="0-31")',
            "query: at column 11: attribute 'age' has no label '0-31' (labels: '0-30', '30-150')",
        ),
        ('count(age=["0-30", "x"])', "query: at column 20: attribute 'age' has no label 'x'"),
        ("count(age=[])", "query: at column 11: empty label list for attribute 'age'"),
        (
            'count(age="0-30", age="30-150")',
            "query: at column 19: attribute 'age' appears twice in one count(...)",
        ),
        ('count(age="0-30"', "query: at column 17: expected ',' or ')' but found end of query"),
        ('count(age="0-30)', 'query: at column 11: unterminated string (no closing ")'),
        ("count(age='0-30\\", "query: at column 11: unterminated string (no closing ')"),
        ('count(age="0-30") % 2', "query: at column 19: unexpected character '%'"),
        ("1e999 * count()", "query: at column 1: weight inf is not a finite number"),
        ("1e200 * 1e200 * count()", "query: at column 7: weight inf is not a finite number"),
        ("count() * count()", "query: at column 9: cannot multiply two counts"),
        ("count() + 1", "query: at column 11: a constant term does not change a query"),
        ("3", "query: at column 1: the query is a constant"),
        ("cnt(age='0-30')", "query: at column 1: expected count(...), a number or '(' but found 'cnt'"),
        (
            "count(age='0-30') count()",
            "query: at column 19: expected '+', '-', '*' or end of query but found 'count'",
        ),
        ("count(age=)", "query: at column 11: expected a label for 'age' (a quoted string) but found ')'"),
        ("count(age)", "query: at column 10: expected '=' but found ')'"),
        ("count", "query: at column 6: expected '(' but found end of query"),
        ("", "query: empty text"),
        ("   ", "query: empty text"),
        ('count(age="0-30") - count(age="0-30")', "query: all coefficients are zero"),
        (
            'count(age=["0-30","30-150"]) - count(age="0-30") - count(age="30-150")',
            "query: all coefficients are zero",
        ),
        ("0 * count()", "query: all coefficients are zero"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(QueryError) as info:
        parse_query(text, PAPER)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, DpdeskError)


# ------------------------------------------------------------------ builder


def test_count_builder_matches_text():
    assert count(PAPER, age="0-30", income=">50K") == parse_query('count(age="0-30", income=">50K")', PAPER)
    assert count(PAPER, 2, income=[">50K"]).dense().tolist() == [0, 2, 0, 2]
    assert count(PAPER).dense().tolist() == [1, 1, 1, 1]
    assert count(PAPER, -1.5, age=["30-150"]).dense().tolist() == [0, 0, -1.5, -1.5]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"agee": "0-30"}, "unknown attribute 'agee'"),
        ({"age": "0-31"}, "attribute 'age' has no label '0-31'"),
        ({"age": []}, "empty label list for attribute 'age'"),
        ({"weight": float("nan")}, "weight must be a finite number"),
        ({"weight": math.inf}, "weight must be a finite number"),
        ({"weight": 0}, "all coefficients are zero"),
        ({"weight": True}, "weight must be a finite number"),
    ],
)
def test_count_builder_errors(kwargs, message):
    with pytest.raises(QueryError, match=message):
        count(PAPER, **kwargs)


# ------------------------------------------------------------------ JSON and vectors


def test_query_from_json_dense_and_sparse():
    q = query_from_json([1, 0, 1, 0], 4)
    assert q.dense().tolist() == [1, 0, 1, 0] and q.shape == (4,) and not q.is_product
    assert q.to_json() == {"indices": [0, 2], "values": [1, 1]}
    s = query_from_json({"indices": [3, 0], "values": [-1, 2.5]}, 4, shape=(2, 2))
    assert s.shape == (2, 2) and s.dense().tolist() == [2.5, 0, 0, -1]
    assert s.to_json() == {"indices": [0, 3], "values": [2.5, -1]}
    assert isinstance(s.to_json()["values"][1], int)
    # zero coefficients in a sparse object are harmless and dropped
    assert query_from_json({"indices": [0, 1], "values": [0, 3]}, 4).to_json() == {
        "indices": [1],
        "values": [3],
    }


@pytest.mark.parametrize(
    "obj, message",
    [
        ([1, 0, 1], "query has 3 coefficients, the cube has 4 cells"),
        ([1, 0, 1, 0, 1], "query has 5 coefficients, the cube has 4 cells"),
        ([0, 0, 0, 0], "all coefficients are zero"),
        ([1, float("nan"), 0, 0], r"query\[1\] is nan; coefficients must be finite"),
        ([1, float("inf"), 0, 0], r"query\[1\] is inf"),
        ([1, True, 0, 0], r"query\[1\] must be a number, got True"),
        ([1, "2", 0, 0], r"query\[1\] must be a number, got '2'"),
        ([1, None, 0, 0], r"query\[1\] must be a number, got None"),
        ({"indices": [0, 4], "values": [1, 1]}, r"indices\[1\] = 4 is outside 0..3"),
        ({"indices": [-1], "values": [1]}, r"indices\[0\] = -1 is outside 0..3"),
        ({"indices": [1, 1], "values": [1, 2]}, "cell index 1 appears more than once"),
        ({"indices": [1, 2], "values": [1]}, "2 indices but 1 values"),
        ({"indices": [1.0], "values": [1]}, r"indices\[0\] must be an integer"),
        ({"indices": [True], "values": [1]}, r"indices\[0\] must be an integer"),
        ({"indices": [1], "values": [False]}, r"values\[0\] must be a number"),
        ({"indices": [1], "values": [float("-inf")]}, r"values\[0\] is -inf"),
        ({"indices": [], "values": []}, "all coefficients are zero"),
        ({"indices": [1]}, 'exactly "indices" and "values"'),
        ({"indices": [1], "values": [1], "shape": [4]}, 'exactly "indices" and "values"'),
        ({"indices": 1, "values": 1}, "must be lists"),
        ("count()", "must be a list of coefficients or an object"),
    ],
)
def test_query_from_json_errors(obj, message):
    with pytest.raises(QueryError, match=message):
        query_from_json(obj, 4)


def test_query_from_json_shape_mismatch():
    with pytest.raises(QueryError, match=r"shape \(3, 2\) has 6 cells, expected 4"):
        query_from_json([1, 0, 0, 0], 4, shape=(3, 2))


def test_query_from_vector():
    q = query_from_vector(np.array([[0, 2], [0, -1]]), (2, 2))
    assert q.to_json() == {"indices": [1, 3], "values": [2, -1]}
    assert q == parse_query('2*count(income=">50K", age="0-30") - count(age="30-150", income=">50K")', PAPER)
    with pytest.raises(QueryError, match="query has 3 coefficients, the cube has 4 cells"):
        query_from_vector([1, 2, 3], (2, 2))
    with pytest.raises(QueryError, match="finite"):
        query_from_vector([1, np.nan, 0, 0], (2, 2))
    with pytest.raises(QueryError, match="all coefficients are zero"):
        query_from_vector(np.zeros(4), (2, 2))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    vec=hnp.arrays(
        np.float64, st.integers(1, 30), elements=st.sampled_from([0.0, 1.0, -2.0, 0.25, 3e5, -7.5])
    )
)
def test_json_round_trip(vec):
    if not np.any(vec):
        return
    q = query_from_vector(vec, vec.shape)
    again = query_from_json(q.to_json(), vec.size)
    assert again == q and np.array_equal(again.dense(), vec)
    assert np.array_equal(query_from_json(vec.tolist(), vec.size).dense(), vec)


def test_arrays_are_read_only():
    q = parse_query('2*count(income=">50K") - count(age="0-30")', PAPER)
    for arr in (q.dense(), *q.sparse(), *[f for t in q.terms for f in t.factors]):
        assert not arr.flags.writeable
    s = query_from_json([0, 1, 0, 2], 4)
    assert not s.indices.flags.writeable and not s.values.flags.writeable
    with pytest.raises(Exception):
        s.text = "x"  # frozen


def test_pickle_and_copy_keep_arrays_read_only():
    import copy
    import pickle

    for q in (
        parse_query('2*count(income=">50K") - count(age="0-30")', PAPER),
        query_from_json([0, 1, 0, 2], 4),
    ):
        for again in (pickle.loads(pickle.dumps(q)), copy.deepcopy(q)):
            assert again == q and again.text == q.text and again.shape == q.shape
            arrays = (
                [again.indices, again.values]
                if again.terms is None
                else [f for t in again.terms for f in t.factors]
            )
            assert all(not a.flags.writeable for a in arrays)


def test_term_copies_caller_arrays():
    f = np.array([1.0, 0.0])
    q = Query((2, 2), terms=(Term(1, (f, np.ones(2))),))
    f[1] = 5.0
    assert q.dense().tolist() == [1, 1, 0, 0]


# ------------------------------------------------------------------ sensitivity and integrality


@pytest.mark.parametrize(
    "text, sensitivity, integral",
    [
        ('count(age="0-30")', 1.0, True),
        ('2*count(income=">50K")', 2.0, True),
        ('-3*count(income=">50K")', 3.0, True),
        ('0.5*count(age="0-30")', 0.5, False),
        ('2*count(income=">50K") - count(age="0-30")', 2.0, True),
        ('count(income=">50K") + count(age="0-30")', 2.0, True),
        ('0.5*count(income=">50K") + 0.5*count(age="0-30")', 1.0, False),
        ('0.5*count(income=">50K") + 0.5*count(income=">50K")', 1.0, True),
    ],
)
def test_sensitivity_and_is_integer(text, sensitivity, integral):
    q = parse_query(text, PAPER)
    assert q.sensitivity == sensitivity == float(np.max(np.abs(q.dense())))
    assert q.is_integer is integral


def test_single_term_sensitivity_without_densifying():
    shape = (1000, 1000, 1000)  # 10^9 cells: densifying would need 8 GB
    factors = (np.r_[np.zeros(999), 3.0], np.r_[-2.0, np.ones(999)], np.ones(1000))
    q = Query(shape, terms=(Term(0.5, factors),))
    assert q.sensitivity == 3.0 and q.n_cells == 10**9
    assert not q.is_integer  # 0.5 * 3 * 1 = 1.5
    assert Query(shape, terms=(Term(0.5, (factors[0], 2 * factors[1], factors[2])),)).is_integer
    assert q.values_at([0, 999_000_000, 999_001_000, 10**9 - 1]).tolist() == [0, -3, 1.5, 1.5]
    r = Query(shape, terms=(Term(2, (np.ones(1000), np.ones(1000), np.r_[1.0, np.zeros(999)])),))
    assert inner(q, r) == 0.5 * 2 * 3 * (-2 + 999) * 1


def test_sparse_sensitivity_and_integrality():
    assert query_from_json([0, -4, 1, 0], 4).sensitivity == 4.0
    assert query_from_json([0, -4, 1, 0], 4).is_integer
    assert not query_from_json([0, -4, 1.5, 0], 4).is_integer


def test_rounding_residue_cancels():
    q = parse_query(
        '0.1*count(age="0-30") + 0.2*count(age="0-30", income=">50K") - 0.3*count(age="0-30", income=">50K")',
        PAPER,
    )
    assert q.dense().tolist() == [0.1, 0, 0, 0]
    assert q.sparse()[0].tolist() == [0]


def test_answer_and_equality():
    x = np.array([10, 20, 20, 10])
    q = parse_query('count(age="0-30") + count(age="30-150", income="<=50K")', PAPER)
    assert q.answer(x) == 50.0
    assert q == query_from_json([1, 1, 1, 0], 4) and hash(q) == hash(query_from_json([1, 1, 1, 0], 4))
    assert q != query_from_json([1, 1, 1, 1], 4)
    with pytest.raises(QueryError, match="query has 4 coefficients, the cube has 3 cells"):
        q.answer([1, 2, 3])


def test_describe_summaries():
    assert query_from_json([0, 2, 0, 0], 4).describe() == (
        "linear query with 1 nonzero coefficient(s) over 4 cells, sensitivity 2"
    )
    q = Query((2, 2), terms=(Term(2, (np.array([1.0, 0]), np.array([0, 1.0]))),))
    assert format_terms(q.terms, PAPER) == '2*count(age="0-30", income=">50K")'
    assert q.describe().startswith("linear query")
    weird = Query((2, 2), terms=(Term(1, (np.array([0.5, 1.0]), np.ones(2))),))
    assert format_terms(weird.terms, PAPER) is None


def test_constructor_rejects_bad_forms():
    with pytest.raises(QueryError, match="not both"):
        Query((2,), terms=(Term(1, (np.ones(2),)),), indices=np.array([0]), values=np.array([1.0]))
    with pytest.raises(QueryError, match="needs terms"):
        Query((2,))
    with pytest.raises(QueryError, match=r"shape \(3,\)"):
        Query((2,), terms=(Term(1, (np.ones(3),)),))
    with pytest.raises(QueryError, match="not finite"):
        Term(float("nan"), (np.ones(2),))
    with pytest.raises(QueryError, match="NaN or infinite"):
        Term(1, (np.array([1, np.inf]),))


# ------------------------------------------------------------------ inner products


def _random_product_query(rng: np.random.Generator, shape: tuple[int, ...], max_terms: int = 3) -> Query:
    while True:
        terms = []
        for _ in range(int(rng.integers(1, max_terms + 1))):
            factors = []
            for s in shape:
                kind = rng.integers(0, 3)
                if kind == 0:
                    f = np.ones(s)
                elif kind == 1:
                    f = (rng.random(s) < 0.5).astype(float)
                else:
                    f = rng.integers(-2, 3, s).astype(float)
                factors.append(f)
            terms.append(Term(float(rng.choice([1, -1, 2, 0.5, -1.25])), tuple(factors)))
        try:
            return Query(shape, terms=tuple(terms))
        except QueryError:
            continue


def _random_sparse_query(rng: np.random.Generator, shape: tuple[int, ...]) -> Query:
    n = math.prod(shape)
    while True:
        vec = np.where(rng.random(n) < rng.uniform(0.05, 0.7), rng.normal(size=n), 0.0)
        if np.any(vec):
            return query_from_vector(vec, shape)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple),
    kinds=st.tuples(st.booleans(), st.booleans()),
)
def test_inner_matches_dense_dot(seed, shape, kinds):
    rng = np.random.default_rng(seed)
    make = [_random_sparse_query, _random_product_query]
    q = make[kinds[0]](rng, shape)
    r = make[kinds[1]](rng, shape)
    expected = float(np.dot(q.dense(), r.dense()))
    assert inner(q, r) == pytest.approx(expected, rel=1e-12, abs=1e-9)
    assert inner(r, q) == pytest.approx(expected, rel=1e-12, abs=1e-9)
    idx = rng.integers(0, q.n_cells, 20)
    assert np.allclose(q.values_at(idx), q.dense()[idx])


def test_inner_with_a_row_given_over_the_flat_shape():
    # a history file gives its rows as flat vectors; against a product-form query of the cube's shape
    rng = np.random.default_rng(3)
    shape = (3, 4, 2)
    q = _random_product_query(rng, shape)
    flat = query_from_vector(
        rng.integers(-2, 3, math.prod(shape)) + (np.arange(24) == 0), (math.prod(shape),)
    )
    assert inner(q, flat) == pytest.approx(float(np.dot(q.dense(), flat.dense())), rel=1e-12)
    assert inner(flat, q) == pytest.approx(float(np.dot(q.dense(), flat.dense())), rel=1e-12)


def test_inner_of_mismatched_lengths_is_refused():
    with pytest.raises(QueryError, match="has 3 coefficients"):
        inner(count(PAPER), query_from_json([1, 1, 1], 3))


def test_inner_never_materialises_cells_for_product_queries(monkeypatch):
    rng = np.random.default_rng(11)
    shape = (64, 64, 256)  # ~10^6 cells
    rows = []
    for _ in range(200):
        factors = []
        for s in shape:
            lo, hi = sorted(rng.integers(0, s, 2))
            f = np.zeros(s)
            f[lo : hi + 1] = 1
            factors.append(f)
        rows.append(Query(shape, terms=(Term(1.0, tuple(factors)),)))
    q = rows[0]

    def no_dense(self):
        raise AssertionError("inner built a length-n vector")

    monkeypatch.setattr(Query, "dense", no_dense)
    got = [inner(q, r) for r in rows]
    # a box's inner product with a box is the product of the overlaps of their ranges
    expected = [
        math.prod(float(np.dot(f, g)) for f, g in zip(q.terms[0].factors, r.terms[0].factors)) for r in rows
    ]
    assert got == expected


def test_abs_dense_matches_the_dense_vector_and_is_not_cached():
    from dpdesk.engine.queries.algebra import abs_dense

    shape = (3, 4)
    single = Query(shape, terms=(Term(-2.0, (np.array([1.0, 0.0, -1.0]), np.array([0.5, 1.0, 0.0, 2.0]))),))
    multi = Query(shape, terms=single.terms + (Term(1.0, (np.ones(3), np.ones(4))),))
    sparse = query_from_vector(np.arange(12.0) - 5, shape)
    for q in (single, multi, sparse):
        np.testing.assert_array_equal(abs_dense(q), np.abs(q.dense()))
    fresh = Query(shape, terms=single.terms)
    abs_dense(fresh)
    assert "_dense" not in fresh.__dict__  # no n-length vector left behind on a single-term query


def test_product_form_recovers_boxes_exactly_and_leaves_other_queries_alone() -> None:
    from dpdesk.engine.queries.query import product_form, query_from_json

    shape = (4, 3, 5)
    box = np.zeros(shape)
    box[1:3, [0, 2], 4] = 2.0  # one weight on a Cartesian set of cells (not contiguous on axis 1)
    q = query_from_json(
        Query(shape, indices=np.flatnonzero(box), values=box[box != 0]).to_json(), box.size, shape
    )
    assert q.terms is None
    p = product_form(q)
    assert p.terms is not None and len(p.terms) == 1 and p.terms[0].weight == 2.0
    np.testing.assert_array_equal(p.dense(), box.reshape(-1))
    assert p == q and p.sensitivity == q.sensitivity and p.to_json() == q.to_json()
    two_weights = box.copy()
    two_weights[1, 0, 4] = 1.0
    not_cartesian = box.copy()
    not_cartesian[1, 0, 4] = 0.0  # a box with one corner missing
    for dense in (two_weights, not_cartesian):
        sparse = Query(shape, indices=np.flatnonzero(dense), values=dense[dense != 0])
        assert product_form(sparse) is sparse
