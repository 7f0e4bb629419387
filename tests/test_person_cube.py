"""Privacy units and measures in the schema, and the pandas cube that enforces and sums them.

The cube's truncation and sums are checked against a slow pure-Python reference written from the
documented rules (engine/truncation.py, engine/measures.py): Python integers, hashlib, one person at a
time. Errors are one line naming the member.
"""

from __future__ import annotations

import hashlib
import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdesk.engine.cube import Cube, attribute_codes, build_cube
from dpdesk.engine.errors import DpdeskError, SchemaError
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import OrderKey

P = 2**31 - 1
KEY = OrderKey.from_secret(b"curator's secret, 32 bytes long!")

ATTRIBUTES = [
    {"name": "ward", "column": "ward", "kind": "categorical", "values": ["A", "B", "C"]},
    {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 40, 120]},
]


def schema(unit=None, measures=None) -> Schema:  # type: ignore[no-untyped-def]
    d: dict = {"attributes": ATTRIBUTES}
    if unit is not None:
        d["privacy_unit"] = unit
    if measures is not None:
        d["measures"] = measures
    return Schema.from_dict(d)


# ---------------------------------------------------------------------------------- schema members


def test_old_schema_reads_and_writes_as_before() -> None:
    s = schema()
    assert s.unit.rows_are_people and s.measures == ()
    assert s.to_dict() == Schema.from_dict({"attributes": ATTRIBUTES}).to_dict()
    assert set(s.to_dict()) == {"attributes"}  # nothing added to an old file's schema


def test_members_round_trip() -> None:
    s = schema(
        {"column": "pid", "max_rows": 4, "one_row_per": ["age"]},
        [
            {"name": "cost", "column": "cost", "bounds": [-10, 2500.5], "nulls": "skip"},
            {"name": "hours", "column": "h", "bounds": [0, 80], "nulls": "replace", "null_value": 8},
        ],
    )
    again = Schema.from_dict(s.to_dict())
    assert again == s
    assert s.unit.one_row_per == ("age",) and s.unit.max_rows == 4 and not s.unit.one_row_per_cell
    assert s.measure("hours").null_value == 8.0 and s.measure("cost").bound == 2500.5
    assert s.columns() == ("ward", "age", "cost", "h", "pid")
    cell = schema({"column": "pid", "max_rows": 2, "one_row_per": "cell"})
    assert cell.unit.one_row_per_cell and cell.to_dict()["privacy_unit"]["one_row_per"] == "cell"
    assert schema({"column": "pid", "max_rows": 2, "one_row_per": ["age", "ward"]}).unit.one_row_per_cell
    assert "at most 2 rows per person, at most one per cell" in cell.unit.describe()


@pytest.mark.parametrize(
    ("unit", "measures", "message"),
    [
        ("people", None, "privacy_unit: must be an object"),
        ({"max_rows": 3}, None, "privacy_unit.column:"),
        ({"column": "pid"}, None, "privacy_unit.max_rows:"),
        ({"column": "pid", "max_rows": 0}, None, "privacy_unit.max_rows: must be between 1"),
        ({"column": "pid", "max_rows": True}, None, "privacy_unit.max_rows:"),
        (
            {"column": "pid", "max_rows": 2, "one_row_per": ["zip"]},
            None,
            "privacy_unit.one_row_per: no attribute 'zip'",
        ),
        ({"column": "pid", "max_rows": 2, "one_row_per": "row"}, None, "privacy_unit.one_row_per:"),
        ({"column": "pid", "max_rows": 2, "k": 1}, None, "privacy_unit.k: unknown member"),
        (None, {"name": "x"}, "measures: must be a list"),
        (None, [{"name": "x", "nulls": "skip"}], "measures[0].bounds: declare the public clamp bounds"),
        (
            None,
            [{"name": "x", "bounds": [5, 5], "nulls": "skip"}],
            "measures[0].bounds: lower (5) must be below",
        ),
        (
            None,
            [{"name": "x", "bounds": [0, float("inf")], "nulls": "skip"}],
            "measures[0].bounds[1]: must be a finite",
        ),
        (None, [{"name": "x", "bounds": [0, 1]}], "measures[0].nulls: declare how missing values count"),
        (None, [{"name": "x", "bounds": [0, 1], "nulls": "replace"}], "measures[0].null_value:"),
        (None, [{"name": "x", "bounds": [0, 1], "nulls": "replace", "null_value": 2}], "outside the bounds"),
        (
            None,
            [{"name": "x", "bounds": [0, 1], "nulls": "skip", "null_value": 0}],
            "measures[0].null_value: only",
        ),
        (None, [{"name": "x", "bounds": [0, 1], "nulls": "skip"}] * 2, "duplicate measure name 'x'"),
    ],
)
def test_bad_members_are_one_line_naming_the_member(unit, measures, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SchemaError) as err:
        schema(unit, measures)
    assert message in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------- the reference, from the documented rules


def ref_number(v) -> int | None:  # type: ignore[no-untyped-def]
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (int, np.integer)) and abs(int(v)) < 10**18:
        return int(v) % P
    text = str(int(v)) if isinstance(v, (int, np.integer)) else str(v)
    if re.fullmatch(r"0|-?[1-9][0-9]{0,17}", text):
        return int(text) % P
    return int(hashlib.md5(text.encode()).hexdigest()[:15], 16) % P


def ref_order(key: OrderKey, u: int, values: list[int]) -> int:
    k1, k2, k3, k4 = key.constants()
    y = (u * k1 + k2) % P
    for j, v in enumerate(values):  # the cell, then each measure's integer plus 2^52
        w = (v + (2**52 if j else 0)) % P
        y = ((y + w) % P) * ((w + k3) % (P - 1) + 1) % P
    return (y + k4) % P


def ref_q(measure, raw) -> int | None:  # type: ignore[no-untyped-def]
    x = None if raw is None or raw is pd.NA else float(raw)
    if x is None or math.isnan(x):
        if measure.nulls == "skip":
            return None
        x = measure.null_value
    x = min(max(x, measure.lower), measure.upper)
    return math.trunc(math.ldexp(x, measure.scale_bits))


def reference(df: pd.DataFrame, s: Schema, key: OrderKey) -> dict:
    codes = [attribute_codes(df[a.column], a) for a in s.attributes]
    rows = []  # (person, cell, [q...], group)
    outside = 0
    for i in range(len(df)):
        c = [int(cd[i]) for cd in codes]
        u = ref_number(df[s.unit.column].iloc[i]) if s.unit.column else 0
        if min(c) < 0 or u is None:
            outside += 1
            continue
        cell = int(np.ravel_multi_index(c, s.shape))
        qs = [ref_q(m, df[m.column].iloc[i]) for m in s.measures]
        names = s.unit.group_attributes(s.names)
        group = tuple(c[s.axis(n)] for n in names)
        person = df[s.unit.column].iloc[i] if s.unit.column else i
        rows.append((person, u, cell, qs, group))
    kept = rows
    if s.unit.column:
        kept = []
        by_person: dict = {}
        for r in rows:
            by_person.setdefault(r[0], []).append(r)
        for mine in by_person.values():

            def sort_key(r):  # type: ignore[no-untyped-def]
                hashed = [0 if q is None else q for q in r[3]]
                tie = [-(2**62) if q is None else q for q in r[3]]
                return (ref_order(key, r[1], [r[2], *hashed]), r[2], *tie)

            mine = sorted(mine, key=sort_key)
            if s.unit.grouped:
                seen, firsts = set(), []
                for r in mine:
                    if r[4] not in seen:
                        seen.add(r[4])
                        firsts.append(r)
                mine = firsts
            kept += mine[: s.unit.max_rows]
    counts = np.zeros(s.n_cells, dtype=np.int64)
    sums = [[0] * s.n_cells for _ in s.measures]
    summed = [np.zeros(s.n_cells, dtype=np.int64) for _ in s.measures]
    for _, _, cell, qs, _ in kept:
        counts[cell] += 1
        for j, q in enumerate(qs):
            if q is not None:
                sums[j][cell] += q
                summed[j][cell] += 1
    as_float = [
        np.array([float(Fraction(t, 2**m.scale_bits)) for t in sums[j]]) for j, m in enumerate(s.measures)
    ]
    return {
        "counts": counts,
        "out_of_domain": outside,
        "sums": as_float,
        "summed": summed,
        "dropped": len(rows) - len(kept),
    }


def assert_matches(cube: Cube, ref: dict) -> None:
    np.testing.assert_array_equal(cube.flat, ref["counts"])
    assert cube.out_of_domain == ref["out_of_domain"]
    for j, m in enumerate(cube.measures):
        np.testing.assert_array_equal(m.flat_sums, ref["sums"][j])  # exact, not approximately
        np.testing.assert_array_equal(m.flat_counts, ref["summed"][j])
    if cube.truncation is not None:
        assert cube.truncation.rows_dropped == ref["dropped"]


MEASURES = [
    {"name": "cost", "column": "cost", "bounds": [-3.5, 1000.25], "nulls": "skip"},
    {"name": "hours", "column": "hours", "bounds": [0, 0.3], "nulls": "replace", "null_value": 0.1},
]
UNITS = [
    None,
    {"column": "pid", "max_rows": 1},
    {"column": "pid", "max_rows": 3},
    {"column": "pid", "max_rows": 2, "one_row_per": "cell"},
    {"column": "pid", "max_rows": 2, "one_row_per": ["age"]},
]

values = st.one_of(
    st.none(),
    st.just(float("nan")),
    st.sampled_from([float("inf"), -float("inf"), -3.5, 1000.25, 0.1, 0.3, 1e300]),
    st.floats(-50, 1500, allow_nan=False),
)
ids = st.one_of(st.none(), st.integers(-3, 8), st.sampled_from(["7", "07", "P1", "P2", "x y", "ñ", "-0"]))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            ids,
            st.sampled_from(["A", "B", "C", "D", None]),
            st.sampled_from([1, 39.5, 40, 90, 150, None]),
            values,
            values,
        ),
        max_size=40,
    ),
    unit=st.sampled_from(UNITS),
)
def test_cube_matches_the_reference(rows, unit) -> None:  # type: ignore[no-untyped-def]
    df = pd.DataFrame(rows, columns=["pid", "ward", "age", "cost", "hours"])
    df["pid"] = pd.Series([r[0] for r in rows], dtype=object)  # a spreadsheet's mixed column
    df["cost"] = pd.to_numeric(df["cost"]).astype(float)
    df["hours"] = pd.to_numeric(df["hours"]).astype(float)
    s = schema(unit, MEASURES)
    cube = build_cube(df, s, order_key=KEY)
    assert_matches(cube, reference(df, s, KEY))


def test_a_person_over_the_bound_keeps_exactly_k() -> None:
    rng = np.random.default_rng(3)
    pid = np.r_[np.full(50, 7), rng.integers(100, 160, 300)]
    df = pd.DataFrame(
        {"pid": pid, "ward": rng.choice(["A", "B", "C"], pid.size), "age": rng.uniform(0, 120, pid.size)}
    )
    for k in (1, 3, 10):
        s = schema({"column": "pid", "max_rows": k})
        alone = build_cube(df[df.pid == 7], s, order_key=KEY)
        assert alone.total == k and alone.truncation.people_over_limit == 1
        assert alone.truncation.rows_dropped == 50 - k
        everyone = build_cube(df, s, order_key=KEY)
        per = df.groupby("pid").size()
        assert everyone.total == int(np.minimum(per, k).sum())
        # the person's kept rows are the same rows whether or not others are in the table
        others = build_cube(df[df.pid != 7], s, order_key=KEY)
        np.testing.assert_array_equal(everyone.counts - others.counts, alone.counts)


def test_the_same_rows_in_any_order_give_the_same_cube_and_the_key_matters() -> None:
    rng = np.random.default_rng(4)
    n = 3000
    df = pd.DataFrame(
        {
            "pid": rng.integers(0, 300, n),
            "ward": rng.choice(["A", "B", "C"], n),
            "age": rng.uniform(0, 120, n),
            "cost": rng.normal(100, 300, n),
            "hours": rng.uniform(0, 1, n),
        }
    )
    s = schema({"column": "pid", "max_rows": 3}, MEASURES)
    first = build_cube(df, s, order_key=KEY)
    again = build_cube(df.sample(frac=1, random_state=9).reset_index(drop=True), s, order_key=KEY)
    np.testing.assert_array_equal(first.counts, again.counts)
    np.testing.assert_array_equal(first.measure("cost").sums, again.measure("cost").sums)
    other = build_cube(df, s, order_key=OrderKey.from_secret(b"another curator's secret key....."))
    assert other.total == first.total  # the same number kept per person ...
    assert not np.array_equal(other.measure("cost").sums, first.measure("cost").sums)  # ... not the same rows


@pytest.mark.parametrize("secret", [b"curator's secret, 32 bytes long!", b"\x00" * 32, b"\xff" * 16])
def test_which_row_is_kept_does_not_favour_a_cell(secret: bytes) -> None:
    """4000 people with one row in ward A and one in ward B, k = 1: the keyed order keeps A for about half.
    Binomial(4000, 1/2) has sd 31.6; 5 sd is 158 (the keys are fixed: this cannot flake)."""
    people = 4000
    df = pd.DataFrame(
        {
            "pid": np.repeat(np.arange(people) * 7919, 2),
            "ward": ["A", "B"] * people,
            "age": [10.0] * (2 * people),
        }
    )
    cube = build_cube(df, schema({"column": "pid", "max_rows": 1}), order_key=OrderKey.from_secret(secret))
    a = int(cube.counts[0].sum())
    assert cube.total == people and abs(a - people / 2) < 158


def test_identifiers_integers_and_their_text_are_one_person() -> None:
    s = schema({"column": "pid", "max_rows": 1}, MEASURES[:1])
    ints = pd.DataFrame(
        {"pid": [42, 42, 42, -7, -7], "ward": list("ABCAB"), "age": [1.0] * 5, "cost": [1, 2, 3, 4, 5.0]}
    )
    text = ints.assign(pid=ints.pid.astype(str).astype("string"))
    a, b = build_cube(ints, s, order_key=KEY), build_cube(text, s, order_key=KEY)
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.measure("cost").sums, b.measure("cost").sums)
    assert a.total == 2
    floats = ints.assign(pid=ints.pid.astype(float))
    with pytest.raises(SchemaError, match="holds floating-point numbers"):
        build_cube(floats, s, order_key=KEY)


def test_a_privacy_unit_needs_the_order_key() -> None:
    df = pd.DataFrame({"pid": [1], "ward": ["A"], "age": [1.0]})
    with pytest.raises(DpdeskError, match="order key"):
        build_cube(df, schema({"column": "pid", "max_rows": 1}))


def test_missing_values_skipped_or_replaced() -> None:
    df = pd.DataFrame(
        {
            "ward": ["A", "A", "A", "A", "B"],
            "age": [1.0] * 5,
            "cost": [np.nan, 2000.0, -10.0, None, np.inf],
            "hours": [np.nan, 0.2, None, 5.0, -np.inf],
        }
    )
    cube = build_cube(df, schema(None, MEASURES))
    cost, hours = cube.measure("cost"), cube.measure("hours")
    assert cube.counts[0].sum() == 4 and cost.counts[0].sum() == 2 and cost.missing == 2  # skipped
    assert cost.sums[0].sum() == 1000.25 - 3.5 and cost.sums[1].sum() == 1000.25  # clamped
    assert hours.counts[0].sum() == 4 and hours.missing == 2  # replaced: every row summed
    assert hours.sums[0].sum() == pytest.approx(0.1 + 0.2 + 0.1 + 0.3, abs=4 * 2**-52)
    assert hours.sums[1].sum() == 0.0
    with pytest.raises(SchemaError, match="no measure 'age'"):
        cube.measure("age")
    with pytest.raises(ValueError):
        cube.measures[0].sums[0, 0] = 1.0  # read-only
