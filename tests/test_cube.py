"""Cube building: binning rules, C-order layout, out-of-domain counting, errors and cancellation.

Vectorised results are checked against a slow pure-Python reference that applies DESIGN §6 literally.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdesk.engine.cube import Cube, attribute_codes, build_cube
from dpdesk.engine.errors import Cancelled, DpdeskError, SchemaError
from dpdesk.engine.schema import Schema, parse_attribute

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "age", "column": "Age", "kind": "numeric", "edges": [0, 18, 30.5, 65, 120]},
            {"name": "city", "column": "city", "kind": "categorical", "values": ["Zürich", "Genève", "東京"]},
            {"name": "code", "column": "code", "kind": "categorical", "values": [1, 2, "3", 4.5]},
        ]
    }
)


# ------------------------------------------------------------------ slow reference, DESIGN §6 literally


def _is_missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def ref_code(value, attribute) -> int:
    if _is_missing(value):
        return -1
    if attribute.kind == "numeric":
        try:
            x = float(value)
        except (TypeError, ValueError):
            return -1
        e = attribute.edges
        if math.isnan(x) or x < e[0] or x > e[-1]:
            return -1
        if x == e[-1]:
            return len(e) - 2
        for i in range(len(e) - 1):
            if e[i] <= x < e[i + 1]:
                return i
        raise AssertionError("unreachable")
    for i, v in enumerate(attribute.values):
        if value == v:
            return i
        if str(value) == str(v):
            return i
    return -1


def ref_cube(rows: list[dict], schema: Schema) -> tuple[list[int], int]:
    counts = [0] * schema.n_cells
    ood = 0
    for row in rows:
        codes = [ref_code(row[a.column], a) for a in schema.attributes]
        if min(codes) < 0:
            ood += 1
            continue
        flat = 0
        for c, size in zip(codes, schema.shape):  # C order: last attribute fastest
            flat = flat * size + c
        counts[flat] += 1
    return counts, ood


# ------------------------------------------------------------------ random tables

AGE_VALUES = [-1, 0, 0.0, 5, 17.999, 18, 30.5, 30.49, 64, 65, 119.9, 120, 120.0001, 1e9, np.nan, None]
CITY_VALUES = ["Zürich", "Genève", "東京", "zürich", "Geneve", "", " Zürich", None, np.nan]
CODE_VALUES = [1, 2, 3, "1", "2", "3", 4.5, "4.5", 1.0, 2.0, "1.0", 7, "x", None, np.nan]


def random_table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    def pick(choices):
        return [choices[i] for i in rng.integers(0, len(choices), n)]

    return pd.DataFrame({"Age": pick(AGE_VALUES), "city": pick(CITY_VALUES), "code": pick(CODE_VALUES)})


@pytest.mark.parametrize("seed", range(8))
def test_cube_matches_reference_on_random_tables(seed):
    rng = np.random.default_rng(seed)
    df = random_table(rng, int(rng.integers(0, 400)))
    cube = build_cube(df, SCHEMA, chunk_rows=int(rng.integers(1, 100)))
    counts, ood = ref_cube(df.to_dict("records"), SCHEMA)
    assert cube.flat.tolist() == counts
    assert cube.out_of_domain == ood
    assert cube.total + cube.out_of_domain == len(df)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    ages=st.lists(
        st.one_of(
            st.sampled_from([0, 18, 30.5, 65, 120]),
            st.floats(min_value=-10, max_value=130),
            st.just(float("nan")),
            st.none(),
        ),
        max_size=60,
    )
)
def test_numeric_codes_match_reference(ages):
    attr = SCHEMA.attribute("age")
    got = attribute_codes(pd.Series(ages, dtype=object), attr)
    assert got.dtype == np.int64
    assert got.tolist() == [ref_code(a, attr) for a in ages]


def test_numeric_bins_half_open_last_closed():
    attr = parse_attribute({"name": "x", "kind": "numeric", "edges": [0, 1, 2]})
    s = pd.Series([-1e-12, 0, 0.999, 1, 1.999, 2, 2.0000001, np.inf, -np.inf, np.nan])
    assert attribute_codes(s, attr).tolist() == [-1, 0, 0, 1, 1, 1, -1, -1, -1, -1]


def test_numeric_column_given_as_text():
    attr = parse_attribute({"name": "x", "kind": "numeric", "edges": [0, 10, 20]})
    s = pd.Series(["5", " 10", "20", "twenty", "", None, "1e1", "nan"])
    assert attribute_codes(s, attr).tolist() == [0, 1, 1, -1, -1, -1, 1, -1]


def test_numeric_nullable_integer_column():
    attr = parse_attribute({"name": "x", "kind": "numeric", "edges": [0, 10, 20]})
    s = pd.Series([3, None, 20], dtype="Int64")
    assert attribute_codes(s, attr).tolist() == [0, -1, 1]


def test_categorical_text_forms_and_exact_values():
    attr = SCHEMA.attribute("code")
    # A CSV reads everything as text: "1" and "4.5" must still find the declared 1 and 4.5.
    text = pd.Series(["1", "2", "3", "4.5", "1.0", "x", None])
    assert attribute_codes(text, attr).tolist() == [0, 1, 2, 3, -1, -1, -1]
    # Numbers: equal values match (1.0 == 1); 3.0 does not match the declared text "3" (its text
    # form is "3.0"), but the integer 3 does.
    nums = pd.Series([1.0, 2.0, 3.0, 4.5, np.nan])
    assert attribute_codes(nums, attr).tolist() == [0, 1, -1, 3, -1]
    ints = pd.Series([1, 3, 5])
    assert attribute_codes(ints, attr).tolist() == [0, 2, -1]


def test_categorical_is_case_and_whitespace_exact_and_unicode_safe():
    attr = SCHEMA.attribute("city")
    s = pd.Series(["東京", "Zürich", "zürich", "Zürich ", "Genève", "Geneve", None])
    assert attribute_codes(s, attr).tolist() == [2, 0, -1, -1, 1, -1, -1]


def test_categorical_pandas_category_dtype():
    attr = SCHEMA.attribute("city")
    s = pd.Series(["Genève", "Paris", None, "東京"], dtype="category")
    assert attribute_codes(s, attr).tolist() == [1, -1, -1, 2]


def test_booleans_match_by_value_or_text():
    # True == 1 (so a boolean column fits a declared 0/1 domain), and "True" matches by text form.
    attr = parse_attribute({"name": "b", "kind": "categorical", "values": [0, 1]})
    assert attribute_codes(pd.Series([True, False, True]), attr).tolist() == [1, 0, 1]
    attr = parse_attribute({"name": "b", "kind": "categorical", "values": ["False", "True"]})
    assert attribute_codes(pd.Series([True, False, None], dtype=object), attr).tolist() == [1, 0, -1]


def test_c_order_last_attribute_fastest():
    schema = Schema.from_dict(
        {
            "attributes": [
                {"name": "a", "kind": "categorical", "values": ["a0", "a1"]},
                {"name": "b", "kind": "categorical", "values": ["b0", "b1", "b2"]},
            ]
        }
    )
    df = pd.DataFrame({"a": ["a0", "a1", "a1", "a1"], "b": ["b1", "b0", "b2", "b2"]})
    cube = build_cube(df, schema)
    # flat index = a * 3 + b
    assert cube.flat.tolist() == [0, 1, 0, 1, 0, 2]
    assert cube.counts.shape == (2, 3)
    assert cube.counts[1, 2] == 2
    assert schema.describe_cell(5) == "a=a1, b=b2"


def test_paper_figure_1_cube():
    schema = Schema.from_dict(
        {
            "attributes": [
                {"name": "age", "kind": "numeric", "edges": [0, 30, 150], "labels": ["0-30", "30-150"]},
                {"name": "income", "kind": "categorical", "values": ["<=50K", ">50K"]},
            ]
        }
    )
    rows = [(20, "<=50K")] * 10 + [(20, ">50K")] * 20 + [(40, "<=50K")] * 20 + [(150, ">50K")] * 10
    df = pd.DataFrame(rows, columns=["age", "income"])
    cube = build_cube(df, schema)
    assert cube.flat.tolist() == [10, 20, 20, 10]
    assert cube.out_of_domain == 0 and cube.total == 60


def test_counts_are_read_only_int64():
    df = random_table(np.random.default_rng(1), 50)
    cube = build_cube(df, SCHEMA)
    assert cube.counts.dtype == np.int64 and cube.counts.shape == SCHEMA.shape
    with pytest.raises(ValueError):
        cube.counts[0, 0, 0] = 5
    assert isinstance(cube, Cube)


def test_domains_are_not_read_off_the_data():
    # A category present in the data but not declared is out of domain; declared but absent is a 0 cell.
    schema = Schema.from_dict(
        {"attributes": [{"name": "c", "kind": "categorical", "values": ["a", "b", "rare"]}]}
    )
    cube = build_cube(pd.DataFrame({"c": ["a", "a", "zzz", "b"]}), schema)
    assert cube.flat.tolist() == [2, 1, 0]
    assert cube.out_of_domain == 1


def test_empty_table():
    df = pd.DataFrame({"Age": [], "city": [], "code": []})
    cube = build_cube(df, SCHEMA)
    assert cube.total == 0 and cube.out_of_domain == 0


def test_missing_column_names_attribute_column_and_choices():
    df = pd.DataFrame({"age": [1], "city": ["東京"], "code": [1]})
    with pytest.raises(SchemaError) as info:
        build_cube(df, SCHEMA)
    msg = str(info.value)
    assert "attribute 'age'" in msg and "'Age'" in msg and "'age', 'city', 'code'" in msg
    assert isinstance(info.value, DpdeskError) and "\n" not in msg


def test_progress_reaches_one_and_is_monotone():
    df = random_table(np.random.default_rng(2), 1000)
    seen: list[float] = []
    build_cube(df, SCHEMA, progress=seen.append, chunk_rows=300)
    assert seen == sorted(seen) and len(seen) == 4 and seen[-1] == 1.0


def test_cancel_raises_between_chunks():
    df = random_table(np.random.default_rng(3), 1000)
    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        build_cube(df, SCHEMA, cancelled=cancelled, chunk_rows=100)
    assert len(calls) == 3


def test_chunking_does_not_change_the_result():
    df = random_table(np.random.default_rng(4), 777)
    whole = build_cube(df, SCHEMA)
    for chunk in (1, 7, 100, 776, 777, 5000):
        part = build_cube(df, SCHEMA, chunk_rows=chunk)
        assert np.array_equal(part.counts, whole.counts) and part.out_of_domain == whole.out_of_domain


def test_large_table_vectorised():
    rng = np.random.default_rng(5)
    n = 2_000_000
    df = pd.DataFrame({"x": rng.uniform(-1, 101, n), "y": rng.integers(0, 12, n)})
    schema = Schema.from_dict(
        {
            "attributes": [
                {"name": "x", "kind": "numeric", "edges": list(range(0, 101, 5))},
                {"name": "y", "kind": "categorical", "values": list(range(10))},
            ]
        }
    )
    cube = build_cube(df, schema)
    x, y = df["x"].to_numpy(), df["y"].to_numpy()
    ok = (x >= 0) & (x <= 100) & (y < 10)
    xi = np.minimum((x[ok] // 5).astype(int), 19)
    expected = np.bincount(xi * 10 + y[ok], minlength=200)
    assert np.array_equal(cube.flat, expected)
    assert cube.out_of_domain == int((~ok).sum())
